// The decisions on what cuda-gdb shows of an NCCL kernel (native/src/nccl/kernel_args.cc):
// its name, where its arguments are in shared memory, each block's channel. The gdb
// extension only passes the raw values (gdbext/ncclscope/kernels.py); the real recorded
// sessions replay through both in tests/gdb/test_kernels.py.
#define BOOST_TEST_MODULE kernel_args
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "nccl/kernel_args.h"
#include "util/strings.h"

using nlohmann::json;

namespace {

constexpr uint64_t kDevComm = 0x7f94d4800000;

// 64 zero words, then a copy of the arguments at byte 0x200 (comm, mask 0xffffff), then 7.
std::vector<std::optional<uint64_t>> shared_dump() {
  std::vector<std::optional<uint64_t>> words(64, uint64_t{0});
  for (uint64_t word : {kDevComm, uint64_t{0xffffff}, uint64_t{0}, uint64_t{0}, uint64_t{7}}) words.push_back(word);
  return words;
}

json shared_words_json() {
  json words = json::array();
  for (const std::optional<uint64_t>& word : shared_dump()) words.push_back(*word);
  return words;
}

json args_request(json words, json nblocks = 24) {
  return {{"shared_words", std::move(words)}, {"dev_comms", json::array({"0x7f94d4800000"})},
          {"nblocks", std::move(nblocks)},
          {"args_layout", {{"comm_offset", 0}, {"channel_mask_offset", 8}, {"size", 32}}}};
}

}  // namespace

BOOST_AUTO_TEST_CASE(channel_of_block_is_the_nth_set_bit) {
  BOOST_TEST(*nsc::nth_set_bit(0xffffff, 0) == 0u);
  BOOST_TEST(*nsc::nth_set_bit(0xffffff, 5) == 5u);
  BOOST_TEST(*nsc::nth_set_bit(0xffffff, 23) == 23u);
  BOOST_TEST(*nsc::nth_set_bit(0b1010'0100, 0) == 2u);
  BOOST_TEST(*nsc::nth_set_bit(0b1010'0100, 1) == 5u);
  BOOST_TEST(*nsc::nth_set_bit(0b1010'0100, 2) == 7u);
  BOOST_TEST(!nsc::nth_set_bit(0b1, 1).has_value());
  BOOST_TEST(*nsc::nth_set_bit(uint64_t{1} << 63, 0) == 63u);
  BOOST_TEST(!nsc::nth_set_bit(0, 0).has_value());
}

BOOST_AUTO_TEST_CASE(kernel_args_found_by_content) {
  BOOST_TEST(*nsc::find_kernel_args(shared_dump(), {kDevComm}, 24) == 64u * 8);
  BOOST_TEST(!nsc::find_kernel_args(shared_dump(), {kDevComm}, 23).has_value());  // mask must fit the grid
  BOOST_TEST(!nsc::find_kernel_args(shared_dump(), {0x1234}, 24).has_value());    // comm must be a devComm
  // ncclShmemData is 16-byte aligned: the same pair one word later is not a copy.
  std::vector<std::optional<uint64_t>> shifted = shared_dump();
  shifted.insert(shifted.begin(), uint64_t{0});
  BOOST_TEST(!nsc::find_kernel_args(shifted, {kDevComm}, 24).has_value());
  // A word that was not a value (torn dump) matches nothing, and nothing past the end is read.
  std::vector<std::optional<uint64_t>> torn = shared_dump();
  torn[65] = std::nullopt;
  BOOST_TEST(!nsc::find_kernel_args(torn, {kDevComm}, 24).has_value());
  BOOST_TEST(!nsc::find_kernel_args({kDevComm}, {kDevComm}, 24).has_value());
  BOOST_TEST(!nsc::find_kernel_args({}, {kDevComm}, 24).has_value());
}

BOOST_AUTO_TEST_CASE(kernel_args_answer_gives_offsets_or_a_reason) {
  json answer = nsc::kernel_args_answer(args_request(shared_words_json()));
  BOOST_TEST(answer["found"] == true);
  BOOST_TEST(answer["args_shared_offset"] == "0x200");
  BOOST_TEST(answer["dev_comm"] == "0x7f94d4800000");
  BOOST_TEST(answer["channel_mask"] == "0xffffff");
  BOOST_TEST(answer["channel_id_offset"] == 0x220);  // ncclShmem.channelId, after the 32-byte arguments
  // Words as hex strings are the same words.
  json hex_words = json::array();
  for (const json& word : shared_words_json()) hex_words.push_back(nsc::hex(word.get<uint64_t>()));
  BOOST_TEST(hex_words[64] == "0x7f94d4800000");
  BOOST_TEST(nsc::kernel_args_answer(args_request(hex_words))["args_shared_offset"] == "0x200");
  answer = nsc::kernel_args_answer(args_request(shared_words_json(), 23));
  BOOST_TEST(answer["found"] == false);
  BOOST_TEST(answer["reason"] == "no 16-byte aligned devComm and 23-bit channel mask in 69 shared words");
}

BOOST_AUTO_TEST_CASE(bad_kernel_args_requests_give_reasons) {
  json words = shared_words_json();
  words[65] = "torn";
  words[66] = -1;
  BOOST_TEST(nsc::kernel_args_answer(args_request(words))["reason"] ==
             "no 16-byte aligned devComm and 24-bit channel mask in 69 shared words (2 of them not 64-bit values)");
  BOOST_TEST(nsc::kernel_args_answer(args_request(shared_words_json(), 0))["reason"] ==
             "grid of 0 blocks: a channel mask has 1 to 64");
  BOOST_TEST(nsc::kernel_args_answer(args_request(shared_words_json(), 65))["found"] == false);
  BOOST_TEST(nsc::kernel_args_answer(args_request(shared_words_json(), "many"))["found"] == false);
  json request = args_request(shared_words_json());
  request["args_layout"]["channel_mask_offset"] = 12;
  BOOST_TEST(nsc::kernel_args_answer(request)["reason"] ==
             "ncclDevKernelArgs layout: comm and channelMask offsets are not 8-byte aligned");
  request = args_request(shared_words_json());
  request["dev_comms"] = json::array();
  BOOST_TEST(nsc::kernel_args_answer(request)["reason"] ==
             "no communicator's devComm known (the state has no device sections)");
  for (const json& garbage : {json(nullptr), json(5), json::array(), json{{"shared_words", "x"}}})
    BOOST_TEST(nsc::kernel_args_answer(garbage)["found"] == false);
}

BOOST_AUTO_TEST_CASE(nccl_kernel_names) {
  BOOST_TEST(nsc::decode_nccl_kernel_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL()") ==
             (json{{"kernel_name", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"}, {"collective", "AllReduce"},
                   {"op", "Sum"}, {"datatype", "f32"}, {"algorithm", "RING"}, {"protocol", "LL"}}));
  BOOST_TEST(nsc::decode_nccl_kernel_name("ncclDevKernel_SendRecv()")["collective"] == "SendRecv");
  BOOST_TEST(nsc::decode_nccl_kernel_name("ncclDevKernel_SendRecv()")["detail"] == "");
  BOOST_TEST(nsc::decode_nccl_kernel_name("ncclDevKernel_Generic_1<8>(ncclDevKernelArgs4K)") ==
             (json{{"kernel_name", "ncclDevKernel_Generic_1"}, {"collective", "Generic"}, {"detail", "1"}}));
  BOOST_TEST(nsc::decode_nccl_kernel_name("myKernel(float*, int)").is_null());
  BOOST_TEST(nsc::decode_nccl_kernel_name(nullptr).is_null());
  BOOST_TEST(nsc::decode_nccl_kernel_name(7).is_null());
  json names = nsc::kernel_names_answer({{"names", {"ncclDevKernel_SendRecv()", "myKernel(float*, int)", nullptr}}});
  BOOST_TEST(names["nccl"].size() == 3u);
  BOOST_TEST(names["nccl"][0]["collective"] == "SendRecv");
  BOOST_TEST(names["nccl"][1].is_null());
  BOOST_TEST(nsc::kernel_names_answer(json(3))["nccl"] == json::array());
}

BOOST_AUTO_TEST_CASE(running_function_decoded) {
  const char* name = "ncclDevFunc_AllReduce_Sum_f32_RING_SIMPLE";
  BOOST_TEST(nsc::decode_nccl_kernel_name(name, "ncclDevFunc_")["protocol"] == "SIMPLE");
  BOOST_TEST(nsc::decode_nccl_kernel_name(name).is_null());
  BOOST_TEST(nsc::decode_running_function(name)["protocol"] == "SIMPLE");
  // A block still in the kernel's own code runs what the kernel's name says.
  BOOST_TEST(nsc::decode_running_function("ncclDevKernel_AllReduce_Sum_f32_RING_LL")["protocol"] == "LL");
}

BOOST_AUTO_TEST_CASE(kernel_facts_give_each_block_its_channel) {
  json args = nsc::kernel_args_answer(args_request(shared_words_json()));
  json seen = {{"kernel", 0}, {"device", 0}, {"grid_dim", "(24,1,1)"},
               {"invocation", "ncclDevKernel_AllReduce_Sum_f32_RING_LL()"}, {"nblocks", 24}, {"args", args},
               {"blocks", {{{"block", 0}, {"function", "ncclDevFunc_AllReduce_Sum_f32_RING_SIMPLE(int)"},
                            {"channel_word", 0xdead00000000}},  // the high half is not channelId
                           {{"block", 5}, {"function", nullptr}, {"channel_word", 4}},
                           {{"block", 6}, {"unavailable", "cannot focus block 6: no such block"}},
                           {{"block", 7}, {"function", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"}}}}};
  json kernel = nsc::kernel_facts(seen);
  BOOST_TEST(kernel["nccl"]["protocol"] == "LL");
  BOOST_TEST(kernel["dev_comm"] == "0x7f94d4800000");
  BOOST_TEST(kernel["channel_mask"] == "0xffffff");
  BOOST_TEST(kernel["args_shared_offset"] == "0x200");
  BOOST_TEST(kernel["notes"] == json::array({"4 blocks shown of 24"}));
  BOOST_TEST(!kernel.contains("args"));
  BOOST_TEST(!kernel.contains("nblocks"));
  json block = kernel["blocks"][0];
  BOOST_TEST(block["channel"] == 0);
  BOOST_TEST(block["channel_in_shared"] == 0);
  BOOST_TEST(block["channel_source"] == "channel mask, confirmed by the block's shared memory");
  BOOST_TEST(block["function"] == "ncclDevFunc_AllReduce_Sum_f32_RING_SIMPLE");
  BOOST_TEST(block["running"]["protocol"] == "SIMPLE");
  block = kernel["blocks"][1];
  BOOST_TEST(block["channel"] == 5);
  BOOST_TEST(block["channel_in_shared"] == 4);
  BOOST_TEST(block["channel_source"] == "channel mask");  // the check disagrees: not confirmed
  BOOST_TEST(block["running"].is_null());
  block = kernel["blocks"][2];
  BOOST_TEST(block["channel"].is_null());
  BOOST_TEST(block["unavailable"] == "cannot focus block 6: no such block");
  block = kernel["blocks"][3];
  BOOST_TEST(block["channel"] == 7);
  BOOST_TEST(!block.contains("channel_in_shared"));
  BOOST_TEST(block["channel_source"] == "channel mask");
  BOOST_TEST(block["running"]["protocol"] == "LL");
}

BOOST_AUTO_TEST_CASE(kernel_facts_without_arguments_say_why) {
  json seen = {{"kernel", 0}, {"invocation", "ncclDevKernel_SendRecv()"}, {"nblocks", 2},
               {"args", nsc::kernel_args_answer(args_request(shared_words_json(), 2))},
               {"blocks", {{{"block", 0}, {"function", "ncclDevFunc_SendRecv"}}, {{"block", 1}}}}};
  json kernel = nsc::kernel_facts(seen);
  BOOST_TEST(kernel["dev_comm"].is_null());
  BOOST_TEST(kernel["channel_mask"].is_null());
  BOOST_TEST(!kernel.contains("args_shared_offset"));
  BOOST_TEST(kernel["notes"] == json::array({"kernel arguments not found in shared memory: channels unknown "
                                             "(no 16-byte aligned devComm and 2-bit channel mask in 69 shared words)"}));
  BOOST_TEST(kernel["blocks"][0]["channel"].is_null());
  BOOST_TEST(kernel["blocks"][0]["running"]["collective"] == "SendRecv");
  // Shared memory unreadable: no kernel-args answer at all.
  seen["args"] = nullptr;
  seen["shared_memory_error"] = "x/512gx (@shared) at 0x0 returned 0 values";
  kernel = nsc::kernel_facts(seen);
  BOOST_TEST(kernel["notes"] == json::array({"shared memory unreadable: x/512gx (@shared) at 0x0 returned 0 values",
                                             "kernel arguments not found in shared memory: channels unknown"}));
  BOOST_TEST(!kernel.contains("shared_memory_error"));
}

BOOST_AUTO_TEST_CASE(garbage_kernel_entries_do_not_throw) {
  json torn_args = {{"found", true}, {"dev_comm", "zz"}, {"channel_mask", -3}};
  BOOST_TEST(nsc::kernel_facts({{"args", torn_args}, {"blocks", json::array({json{{"block", 0}}})}})["blocks"][0]["channel"].is_null());
  BOOST_TEST(nsc::kernel_facts({{"args", torn_args}})["notes"][0] ==
             "kernel arguments not found in shared memory: channels unknown (kernel-args answer malformed)");
  json odd_blocks = {{"blocks", {1, "x", nullptr, json::array(), {{"block", "seven"}, {"channel_word", "0x1"}}}}};
  BOOST_TEST(nsc::kernel_facts(odd_blocks)["blocks"].size() == 5u);
  BOOST_TEST(nsc::kernel_facts(json(5))["notes"][0] == "kernel entry is not an object");
}
