#include "snapshot/element_stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

namespace nsc {
namespace {

// What one value is, and its magnitude when finite.
struct Classified {
  enum Kind { kNormal, kSubnormal, kZero, kNan, kPosInf, kNegInf } kind;
  double magnitude;
};

// A binary floating format with `exponent_bits` and `mantissa_bits` (IEEE layout, sign on top).
// e4m3 has no infinities and one NaN mantissa (all ones) at the top exponent.
Classified classify_small_float(uint32_t bits, int exponent_bits, int mantissa_bits, bool e4m3) {
  const uint32_t mantissa_mask = (1u << mantissa_bits) - 1;
  const uint32_t exponent_max = (1u << exponent_bits) - 1;
  const bool negative = (bits >> (exponent_bits + mantissa_bits)) & 1u;
  const uint32_t exponent = (bits >> mantissa_bits) & exponent_max;
  const uint32_t mantissa = bits & mantissa_mask;
  const int bias = (1 << (exponent_bits - 1)) - 1;
  if (exponent == exponent_max) {
    if (e4m3) {
      if (mantissa == mantissa_mask) return {Classified::kNan, 0};
    } else if (mantissa != 0) {
      return {Classified::kNan, 0};
    } else {
      return {negative ? Classified::kNegInf : Classified::kPosInf, 0};
    }
  }
  if (exponent == 0) {
    if (mantissa == 0) return {Classified::kZero, 0};
    return {Classified::kSubnormal, std::ldexp(static_cast<double>(mantissa), 1 - bias - mantissa_bits)};
  }
  double significand = 1.0 + std::ldexp(static_cast<double>(mantissa), -mantissa_bits);
  return {Classified::kNormal, std::ldexp(significand, static_cast<int>(exponent) - bias)};
}

template <typename Float>
Classified classify_native(Float value) {
  switch (std::fpclassify(value)) {
    case FP_NAN: return {Classified::kNan, 0};
    case FP_INFINITE: return {std::signbit(value) ? Classified::kNegInf : Classified::kPosInf, 0};
    case FP_ZERO: return {Classified::kZero, 0};
    case FP_SUBNORMAL: return {Classified::kSubnormal, std::fabs(static_cast<double>(value))};
    default: return {Classified::kNormal, std::fabs(static_cast<double>(value))};
  }
}

template <typename Int>
Classified classify_integer(const uint8_t* data) {
  Int value;
  std::memcpy(&value, data, sizeof value);
  if (value == 0) return {Classified::kZero, 0};
  return {Classified::kNormal, std::fabs(static_cast<double>(value))};
}

uint32_t load_bits(const uint8_t* data, size_t size) {
  uint32_t bits = 0;
  std::memcpy(&bits, data, size);  // little-endian target
  return bits;
}

Classified classify(const uint8_t* data, ElementType type) {
  switch (type) {
    case ElementType::kF16: return classify_small_float(load_bits(data, 2), 5, 10, false);
    case ElementType::kBf16: return classify_small_float(load_bits(data, 2), 8, 7, false);
    case ElementType::kE4m3: return classify_small_float(load_bits(data, 1), 4, 3, true);
    case ElementType::kE5m2: return classify_small_float(load_bits(data, 1), 5, 2, false);
    case ElementType::kF32: {
      float value;
      std::memcpy(&value, data, sizeof value);
      return classify_native(value);
    }
    case ElementType::kF64: {
      double value;
      std::memcpy(&value, data, sizeof value);
      return classify_native(value);
    }
    case ElementType::kI8: return classify_integer<int8_t>(data);
    case ElementType::kU8: return classify_integer<uint8_t>(data);
    case ElementType::kI32: return classify_integer<int32_t>(data);
    case ElementType::kU32: return classify_integer<uint32_t>(data);
    case ElementType::kI64: return classify_integer<int64_t>(data);
    case ElementType::kU64: return classify_integer<uint64_t>(data);
  }
  return {Classified::kNan, 0};
}

}  // namespace

std::optional<ElementType> element_type_of(const std::string& nccl_datatype) {
  // Every enumerator name of ncclDataType_t (nccl.h), aliases included.
  static const std::map<std::string, ElementType> kTypes = {
      {"ncclInt8", ElementType::kI8},         {"ncclChar", ElementType::kI8},
      {"ncclUint8", ElementType::kU8},        {"ncclInt32", ElementType::kI32},
      {"ncclInt", ElementType::kI32},         {"ncclUint32", ElementType::kU32},
      {"ncclInt64", ElementType::kI64},       {"ncclUint64", ElementType::kU64},
      {"ncclFloat16", ElementType::kF16},     {"ncclHalf", ElementType::kF16},
      {"ncclFloat32", ElementType::kF32},     {"ncclFloat", ElementType::kF32},
      {"ncclFloat64", ElementType::kF64},     {"ncclDouble", ElementType::kF64},
      {"ncclBfloat16", ElementType::kBf16},   {"ncclFloat8e4m3", ElementType::kE4m3},
      {"ncclFloat8e5m2", ElementType::kE5m2},
  };
  auto it = kTypes.find(nccl_datatype);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

size_t element_size(ElementType type) {
  switch (type) {
    case ElementType::kE4m3: case ElementType::kE5m2: case ElementType::kI8: case ElementType::kU8: return 1;
    case ElementType::kF16: case ElementType::kBf16: return 2;
    case ElementType::kF32: case ElementType::kI32: case ElementType::kU32: return 4;
    case ElementType::kF64: case ElementType::kI64: case ElementType::kU64: return 8;
  }
  return 1;
}

const char* element_type_name(ElementType type) {
  switch (type) {
    case ElementType::kF16: return "f16";
    case ElementType::kBf16: return "bf16";
    case ElementType::kF32: return "f32";
    case ElementType::kF64: return "f64";
    case ElementType::kE4m3: return "fp8_e4m3";
    case ElementType::kE5m2: return "fp8_e5m2";
    case ElementType::kI8: return "i8";
    case ElementType::kU8: return "u8";
    case ElementType::kI32: return "i32";
    case ElementType::kU32: return "u32";
    case ElementType::kI64: return "i64";
    case ElementType::kU64: return "u64";
  }
  return "?";
}

bool is_floating(ElementType type) {
  switch (type) {
    case ElementType::kF16: case ElementType::kBf16: case ElementType::kF32: case ElementType::kF64:
    case ElementType::kE4m3: case ElementType::kE5m2: return true;
    default: return false;
  }
}

void ElementStats::add(const uint8_t* data, size_t bytes, ElementType type) {
  const size_t size = element_size(type);
  for (size_t offset = 0; offset + size <= bytes; offset += size) {
    Classified value = classify(data + offset, type);
    ++elements;
    switch (value.kind) {
      case Classified::kNan: ++nan; continue;
      case Classified::kPosInf: ++pos_inf; continue;
      case Classified::kNegInf: ++neg_inf; continue;
      case Classified::kZero: ++zero; break;
      case Classified::kSubnormal: ++subnormal; break;
      case Classified::kNormal: break;
    }
    ++finite;
    max_abs = std::max(max_abs, value.magnitude);
  }
}

void ElementStats::merge(const ElementStats& other) {
  elements += other.elements;
  nan += other.nan;
  pos_inf += other.pos_inf;
  neg_inf += other.neg_inf;
  subnormal += other.subnormal;
  zero += other.zero;
  finite += other.finite;
  max_abs = std::max(max_abs, other.max_abs);
}

}  // namespace nsc
