// Counts of special values in a buffer of one NCCL datatype: NaN, +/-Inf, subnormals,
// zeros and the largest finite magnitude (the numerics audit, docs/numerics.md).
// Formats: IEEE binary16/32/64, bfloat16 (the top half of binary32), and the OCP 8-bit
// formats CUDA's __nv_fp8_e4m3 (no infinities, NaN = S.1111.111) and __nv_fp8_e5m2
// (IEEE-like: exponent 31 is Inf or NaN).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace nsc {

enum class ElementType { kF16, kBf16, kF32, kF64, kE4m3, kE5m2, kI8, kU8, kI32, kU32, kI64, kU64 };

// From an ncclDataType_t enumerator name ("ncclBfloat16", "ncclFloat", "ncclHalf", ...).
std::optional<ElementType> element_type_of(const std::string& nccl_datatype);
size_t element_size(ElementType type);
const char* element_type_name(ElementType type);  // "bf16", "f32", "fp8_e4m3", "i32", ...
bool is_floating(ElementType type);

struct ElementStats {
  uint64_t elements = 0;
  uint64_t nan = 0;
  uint64_t pos_inf = 0;
  uint64_t neg_inf = 0;
  uint64_t subnormal = 0;
  uint64_t zero = 0;
  double max_abs = 0;        // largest finite magnitude; meaningful when finite > 0
  uint64_t finite = 0;       // elements that are neither NaN nor Inf

  // Adds the whole elements in data (a trailing partial element is ignored).
  void add(const uint8_t* data, size_t bytes, ElementType type);
  void merge(const ElementStats& other);
};

}  // namespace nsc
