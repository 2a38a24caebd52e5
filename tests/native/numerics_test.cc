// The numerics audit (issue 20 item 1): the element classifier against independent
// references (every bit pattern of the 8- and 16-bit formats), and the numerics document over
// synthetic memory: whole reads, sampling, unreadable buffers never counted as zeros.
#define BOOST_TEST_MODULE numerics
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>

#include "snapshot/element_stats.h"
#include "snapshot/numerics_document.h"
#include "snapshot/numerics_text.h"
#include "support/synthetic.h"
#include "target/callback_target.h"

using nlohmann::json;
using nsc::ElementStats;
using nsc::ElementType;

namespace {

ElementStats stats_of_all_patterns(ElementType type) {
  size_t size = nsc::element_size(type);
  size_t patterns = size == 1 ? 256 : 65536;
  std::vector<uint8_t> bytes(patterns * size);
  for (size_t i = 0; i < patterns; ++i) std::memcpy(bytes.data() + i * size, &i, size);
  ElementStats stats;
  stats.add(bytes.data(), bytes.size(), type);
  return stats;
}

ElementStats stats_of(const void* data, size_t bytes, ElementType type) {
  ElementStats stats;
  stats.add(static_cast<const uint8_t*>(data), bytes, type);
  return stats;
}

}  // namespace

// bfloat16 is the top half of binary32: every pattern classified as the float it widens to.
BOOST_AUTO_TEST_CASE(bf16_every_pattern_matches_float) {
  ElementStats want;
  for (uint32_t i = 0; i < 65536; ++i) {
    uint32_t bits = i << 16;
    float value;
    std::memcpy(&value, &bits, 4);
    ElementStats one = stats_of(&value, 4, ElementType::kF32);
    want.merge(one);
  }
  ElementStats got = stats_of_all_patterns(ElementType::kBf16);
  BOOST_TEST(got.elements == 65536u);
  BOOST_TEST(got.nan == want.nan);
  BOOST_TEST(got.nan == 2u * 127u);  // exponent 255, mantissa 1..127, both signs
  BOOST_TEST(got.pos_inf == 1u);
  BOOST_TEST(got.neg_inf == 1u);
  BOOST_TEST(got.subnormal == want.subnormal);
  BOOST_TEST(got.subnormal == 2u * 127u);
  BOOST_TEST(got.zero == 2u);
  BOOST_TEST(got.max_abs == want.max_abs);
  BOOST_TEST(got.max_abs == 3.3895313892515355e38);  // 0x7f7f
}

// IEEE binary16's value by its definition (clang 14 has no _Float16 on x86-64).
double binary16_value(uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0x1f) return mantissa != 0 ? std::nan("") : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// binary16 against its value computed from the format's definition.
BOOST_AUTO_TEST_CASE(f16_every_pattern_matches_float16) {
  uint64_t nan = 0, inf = 0, subnormal = 0, zero = 0;
  double max_abs = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    double value = binary16_value(static_cast<uint16_t>(i));
    if (std::isnan(value)) { ++nan; continue; }
    if (std::isinf(value)) { ++inf; continue; }
    if (value == 0) ++zero;
    else if (std::fabs(value) < std::ldexp(1.0, -14)) ++subnormal;
    max_abs = std::max(max_abs, std::fabs(value));
  }
  ElementStats got = stats_of_all_patterns(ElementType::kF16);
  BOOST_TEST(got.nan == nan);
  BOOST_TEST(got.pos_inf + got.neg_inf == inf);
  BOOST_TEST(got.subnormal == subnormal);
  BOOST_TEST(got.zero == zero);
  BOOST_TEST(got.max_abs == max_abs);
  BOOST_TEST(got.max_abs == 65504.0);
}

// OCP FP8 (CUDA __nv_fp8_e4m3 / e5m2): counts over all 256 patterns and known values.
BOOST_AUTO_TEST_CASE(fp8_formats) {
  ElementStats e4m3 = stats_of_all_patterns(ElementType::kE4m3);
  BOOST_TEST(e4m3.nan == 2u);  // 0x7f, 0xff: e4m3 has no infinities
  BOOST_TEST(e4m3.pos_inf + e4m3.neg_inf == 0u);
  BOOST_TEST(e4m3.zero == 2u);
  BOOST_TEST(e4m3.subnormal == 14u);
  BOOST_TEST(e4m3.max_abs == 448.0);
  uint8_t smallest = 0x01, min_normal = 0x08;
  BOOST_TEST(stats_of(&smallest, 1, ElementType::kE4m3).max_abs == std::ldexp(1.0, -9));
  BOOST_TEST(stats_of(&min_normal, 1, ElementType::kE4m3).subnormal == 0u);
  BOOST_TEST(stats_of(&min_normal, 1, ElementType::kE4m3).max_abs == std::ldexp(1.0, -6));

  ElementStats e5m2 = stats_of_all_patterns(ElementType::kE5m2);
  BOOST_TEST(e5m2.nan == 6u);
  BOOST_TEST(e5m2.pos_inf == 1u);
  BOOST_TEST(e5m2.neg_inf == 1u);
  BOOST_TEST(e5m2.zero == 2u);
  BOOST_TEST(e5m2.subnormal == 6u);
  BOOST_TEST(e5m2.max_abs == 57344.0);
  uint8_t e5m2_smallest = 0x01;
  BOOST_TEST(stats_of(&e5m2_smallest, 1, ElementType::kE5m2).max_abs == std::ldexp(1.0, -16));
}

BOOST_AUTO_TEST_CASE(datatype_names_and_integers) {
  BOOST_TEST(nsc::element_type_of("ncclBfloat16").has_value());
  BOOST_TEST(nsc::element_type_name(*nsc::element_type_of("ncclHalf")) == std::string("f16"));
  BOOST_TEST(nsc::element_type_name(*nsc::element_type_of("ncclFloat")) == std::string("f32"));
  BOOST_TEST(nsc::element_type_name(*nsc::element_type_of("ncclFloat8e4m3")) == std::string("fp8_e4m3"));
  BOOST_TEST(!nsc::element_type_of("ncclNumTypes").has_value());
  int32_t values[] = {0, -7, 3, 0};
  ElementStats ints = stats_of(values, sizeof values, ElementType::kI32);
  BOOST_TEST(ints.zero == 2u);
  BOOST_TEST(ints.max_abs == 7.0);
  BOOST_TEST(ints.nan == 0u);
}

namespace {

constexpr uint64_t kSend = 0x7f0000000000;
constexpr uint64_t kRecv = 0x7f0000800000;
constexpr uint64_t kDevice = 0x7e0000000000;

// A state document with one comm whose newest launched AllReduce uses the given buffers.
json state_with_allreduce(uint64_t send, uint64_t recv, uint64_t count, const char* datatype) {
  char send_hex[32], recv_hex[32];
  std::snprintf(send_hex, sizeof send_hex, "0x%llx", static_cast<unsigned long long>(send));
  std::snprintf(recv_hex, sizeof recv_hex, "0x%llx", static_cast<unsigned long long>(recv));
  json older = {{"collective", "AllReduce"}, {"count", 16}, {"datatype", datatype}, {"seq", 3},
                {"sendbuff", "0x10"}, {"recvbuff", "0x20"}, {"op", "ncclSum"}};
  json newest = {{"collective", "AllReduce"}, {"count", count}, {"datatype", datatype}, {"seq", 4},
                 {"sendbuff", send_hex}, {"recvbuff", recv_hex}, {"op", "ncclSum"}};
  json comm = {{"address", "0x5000"}, {"comm_hash", "0xabc"}, {"rank", 3}, {"nranks", 4},
               {"launched", {{"colls", {older, newest}}, {"p2p", json::array()}}},
               {"planned", {{"colls", json::array()}, {"p2p", json::array()}}}};
  return {{"schema", "ncclscope.state/1"}, {"communicators", {comm}}, {"errors", json::array()}};
}

void fill_bf16(uint8_t* bytes, uint64_t count, uint64_t nan_count) {
  for (uint64_t i = 0; i < count; ++i) {
    uint16_t bits = i < nan_count ? 0x7fc0 : 0x3f80;  // NaN, 1.0
    std::memcpy(bytes + 2 * i, &bits, 2);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(whole_buffers_counted_newest_collective_only) {
  nsc::test::SyntheticTarget memory;
  fill_bf16(memory.add_block(kSend, 2 * 8192), 8192, 4096);
  fill_bf16(memory.add_block(kRecv, 2 * 8192), 8192, 0);
  json document = nsc::numerics_of_state(state_with_allreduce(kSend, kRecv, 8192, "ncclBfloat16"), memory, nullptr,
                                         nsc::NumericsOptions{});
  BOOST_TEST(document["schema"] == "ncclscope.numerics/1");
  BOOST_REQUIRE(document["buffers"].size() == 2u);  // the older AllReduce #3 is left out
  const json& send = document["buffers"][0];
  BOOST_TEST(send["role"] == "send");
  BOOST_TEST(send["seq"] == 4);
  BOOST_TEST(send["stats"]["nan"] == 4096);
  BOOST_TEST(send["stats"]["elements_read"] == 8192);
  BOOST_TEST(send["sampled"] == false);
  BOOST_TEST(send["stats"]["max_abs"] == 1.0);
  BOOST_TEST(document["buffers"][1]["stats"]["nan"] == 0);
  BOOST_TEST(nsc::bad_values_sentence(send) == "send buffer of AllReduce #4 holds 4,096 NaN (bf16)");
  BOOST_TEST(nsc::bad_values_sentence(document["buffers"][1]).empty());
  BOOST_TEST(nsc::numerics_exit_code(document) == 0);
  nsc::NumericsOptions all;
  all.all_launched = true;
  BOOST_TEST(nsc::numerics_of_state(state_with_allreduce(kSend, kRecv, 8192, "ncclBfloat16"), memory, nullptr, all)
                 ["buffers"].size() == 4u);
}

BOOST_AUTO_TEST_CASE(large_buffers_sampled_and_said_so) {
  nsc::test::SyntheticTarget memory;
  const uint64_t count = 1 << 20;
  fill_bf16(memory.add_block(kSend, 2 * count), count, count);  // all NaN
  fill_bf16(memory.add_block(kRecv, 2 * count), count, 0);
  nsc::NumericsOptions options;
  options.limits.full_read_bytes = 64 << 10;
  options.limits.sample_chunks = 16;
  options.limits.chunk_bytes = 4096;
  json document = nsc::numerics_of_state(state_with_allreduce(kSend, kRecv, count, "ncclBfloat16"), memory, nullptr,
                                         options);
  const json& send = document["buffers"][0];
  BOOST_TEST(send["sampled"] == true);
  BOOST_TEST(send["sample"]["chunks"] == 16);
  BOOST_TEST(send["stats"]["elements_read"] == 16 * 2048);
  BOOST_TEST(send["stats"]["nan"] == 16 * 2048);
  BOOST_TEST(nsc::bad_values_sentence(send) ==
             "send buffer of AllReduce #4 holds 32,768 NaN (bf16) in a sample of 32,768 elements");
  BOOST_TEST(nsc::render_numerics_text(document).find("sampled: 16 chunks of 4,096 bytes") != std::string::npos);
}

// Device memory (not in the core, no device reader): "not readable here", never zeros.
BOOST_AUTO_TEST_CASE(unreadable_buffers_are_not_zeros) {
  nsc::test::SyntheticTarget memory;
  memory.add_block(kDevice, 2 * 4096, /*saved=*/false);
  json document = nsc::numerics_of_state(state_with_allreduce(kDevice, kDevice + 0x100000, 4096, "ncclBfloat16"),
                                         memory, nullptr, nsc::NumericsOptions{});
  for (const json& buffer : document["buffers"]) {
    BOOST_TEST(buffer["stats"].is_null());
    BOOST_TEST(buffer["unreadable"].get<std::string>().find("not readable here") != std::string::npos);
    BOOST_TEST(buffer["unreadable"].get<std::string>().find("cuda-gdb") != std::string::npos);
  }
  BOOST_TEST(nsc::numerics_exit_code(document) == 1);

  // Through a device reader (cuda-gdb), the same buffer is counted.
  nsc::test::SyntheticTarget device_memory;
  fill_bf16(device_memory.add_block(kDevice, 2 * 4096), 4096, 7);
  fill_bf16(device_memory.add_block(kDevice + 0x100000, 2 * 4096), 4096, 0);
  json through_device = nsc::numerics_of_state(
      state_with_allreduce(kDevice, kDevice + 0x100000, 4096, "ncclBfloat16"), memory, &device_memory,
      nsc::NumericsOptions{});
  BOOST_TEST(through_device["buffers"][0]["read_from"] == "device");
  BOOST_TEST(through_device["buffers"][0]["stats"]["nan"] == 7);
}

// A count from torn or corrupt memory: flagged, never read (count * size would overflow).
BOOST_AUTO_TEST_CASE(impossible_counts_are_flagged_not_read) {
  nsc::test::SyntheticTarget memory;
  fill_bf16(memory.add_block(kSend, 2 * 64), 64, 0);
  const uint64_t corrupt = 0x8000000000000001ull;  // times 2 bytes wraps to 2
  json document = nsc::numerics_of_state(state_with_allreduce(kSend, kSend, corrupt, "ncclBfloat16"), memory, nullptr,
                                         nsc::NumericsOptions{});
  BOOST_REQUIRE(document["buffers"].size() == 2u);
  for (const json& buffer : document["buffers"]) {
    BOOST_TEST(buffer["stats"].is_null());
    BOOST_TEST(buffer["unreadable"].get<std::string>().find("impossible size: 9223372036854775809 elements") == 0);
  }
  BOOST_TEST(nsc::numerics_exit_code(document) == 1);
}

// A front end's region without contents (gdb reads a core's empty segment as zeros).
BOOST_AUTO_TEST_CASE(callback_target_refuses_unsaved_regions) {
  uint64_t calls = 0;
  auto zeros = [&calls](uint64_t, void* buffer, uint64_t length, std::string*) {
    ++calls;
    std::memset(buffer, 0, length);
    return true;
  };
  nsc::MemoryRegion saved, unsaved;
  saved.start = 0x1000;
  saved.end = 0x2000;
  unsaved.start = 0x2000;
  unsaved.end = 0x3000;
  unsaved.saved = false;
  nsc::CallbackTarget target("gdb", 1, zeros, {saved, unsaved}, "");
  uint8_t buffer[64];
  nsc::ReadError error;
  BOOST_TEST(target.read(0x1800, buffer, sizeof buffer, &error));
  BOOST_TEST(!target.read(0x2010, buffer, sizeof buffer, &error));
  BOOST_TEST((error.reason == nsc::ReadFailure::kNotSavedInCore));
  BOOST_TEST(error.address == 0x2010u);
  BOOST_TEST(!target.read(0x1ff0, buffer, sizeof buffer, &error));  // straddles into it
  BOOST_TEST(error.address == 0x2000u);
  BOOST_TEST(calls == 1u);
}
