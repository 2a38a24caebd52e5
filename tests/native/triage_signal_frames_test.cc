// How triage words a thread the core-writing SIGABRT interrupted: below the signal's frames
// (stacks/blocked_in.cc's one list), from both snapshot readers.
#define BOOST_TEST_MODULE triage_signal_frames
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "triage/process_view.h"
#include "triage/sax_summary.h"

namespace {

nlohmann::json frame(const char* function, const char* module) {
  return {{"function", function}, {"module", module}, {"pc", "0x1"}};
}

// faulthandler's SIGABRT (glibc 2.35+ names pthread_kill's body __pthread_kill_implementation)
// over a thread waiting in cudaStreamSynchronize.
nlohmann::json aborted_document() {
  nlohmann::json frames = nlohmann::json::array(
      {frame("__pthread_kill_implementation", "libc.so.6"), frame("raise", "libc.so.6"), frame("abort", "libc.so.6"),
       frame("faulthandler_fatal_error", "python3.12"), {{"function", nullptr}, {"module", "libc.so.6"}, {"offset", 0x42520}, {"pc", "0x2"}},
       frame("__futex_abstimed_wait_common", "libc.so.6"), frame("cudaStreamSynchronize", "libcudart.so.12"),
       frame("block_on_stream", "program"), frame("main", "program")});
  return {{"schema", "ncclscope.state/1"},
          {"target", {{"kind", "core"}, {"pid", 7}}},
          {"nccl", {{"version", "2.28.9"}, {"library", "/lib/libnccl.so.2"}}},
          {"communicators", nlohmann::json::array()},
          {"threads", nlohmann::json::array({{{"tid", 7}, {"name", "program"}, {"blocked_in", "cudaStreamSynchronize"},
                                               {"frames", frames}}})},
          {"errors", nlohmann::json::array()}};
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_thread_is_described_below_the_signal) {
  nlohmann::json document = aborted_document();
  nsc::triage::ProcessView parsed = nsc::triage::summarize_state_document(document, "rank0.core", "core");
  nsc::triage::ProcessView streamed;
  std::string schema;
  BOOST_REQUIRE(nsc::triage::summarize_state_text(document.dump(), "rank0.core", "core", &streamed, &schema));
  for (const nsc::triage::ProcessView* view : {&parsed, &streamed}) {
    BOOST_REQUIRE_EQUAL(view->threads.size(), 1u);
    BOOST_TEST(nsc::triage::describe_thread(view->threads[0]) ==
               "cudaStreamSynchronize() called from block_on_stream() [cudaStreamSynchronize]");
  }
}
