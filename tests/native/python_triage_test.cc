// Triage's summaries of a state document whose threads carry merged
// native+Python stacks: both readers (document and SAX) use merged_frames,
// Python frames are the user code, and the interpreter's call glue is skipped.
#define BOOST_TEST_MODULE python_triage
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "triage/process_view.h"
#include "triage/sax_summary.h"

namespace {

nlohmann::json document_with_python() {
  nlohmann::json native = nlohmann::json::array({
      {{"function", "ncclGroupEnd"}, {"module", "libnccl.so.2"}, {"pc", "0x1"}},
      {{"function", "c10d::ProcessGroupNCCL::barrier"}, {"module", "libtorch_cuda.so"}, {"pc", "0x2"}},
      {{"function", "_PyEval_EvalFrameDefault"}, {"module", "python3.12"}, {"pc", "0x3"}},
      {{"function", "main"}, {"module", "python3.12"}, {"pc", "0x4"}}});
  nlohmann::json merged = nlohmann::json::array({
      {{"kind", "native"}, {"function", "ncclGroupEnd"}, {"module", "libnccl.so.2"}, {"pc", "0x1"}},
      {{"kind", "native"}, {"function", "c10d::ProcessGroupNCCL::barrier"}, {"module", "libtorch_cuda.so"}, {"pc", "0x2"}},
      {{"kind", "native"}, {"function", "pybind11::cpp_function::dispatcher(_object*, _object*, _object*)"},
       {"module", "libtorch_python.so"}, {"pc", "0x5"}},
      {{"kind", "native"}, {"function", "PyObject_Vectorcall"}, {"module", "python3.12"}, {"pc", "0x6"}},
      {{"kind", "python"}, {"function", "finish"}, {"file", "/job/train.py"}, {"line", 62}},
      {{"kind", "python"}, {"function", "<module>"}, {"file", "/job/train.py"}, {"line", 90}},
      {{"kind", "native"}, {"function", "main"}, {"module", "python3.12"}, {"pc", "0x4"}}});
  return {{"schema", "ncclscope.state/1"},
          {"target", {{"kind", "core"}, {"pid", 7}}},
          {"nccl", {{"version", "2.28.9"}, {"library", "/lib/libnccl.so.2"}}},
          {"communicators", nlohmann::json::array()},
          {"threads", nlohmann::json::array({{{"tid", 7}, {"name", "python3"}, {"blocked_in", "nccl-group-end"},
                                               {"frames", native}, {"merged_frames", merged}}})},
          {"errors", nlohmann::json::array()}};
}

}  // namespace

BOOST_AUTO_TEST_CASE(merged_frames_in_both_readers) {
  nlohmann::json document = document_with_python();
  nsc::triage::ProcessView parsed = nsc::triage::summarize_state_document(document, "rank2.json", "snapshot");
  nsc::triage::ProcessView streamed;
  std::string schema;
  BOOST_REQUIRE(nsc::triage::summarize_state_text(document.dump(), "rank2.json", "snapshot", &streamed, &schema));
  for (const nsc::triage::ProcessView* view : {&parsed, &streamed}) {
    BOOST_REQUIRE_EQUAL(view->threads.size(), 1u);
    const auto& frames = view->threads[0].frames;
    BOOST_REQUIRE_EQUAL(frames.size(), 7u);
    BOOST_TEST(frames[4].label() == "finish (train.py:62)");
    BOOST_TEST(frames[4].python);
    BOOST_TEST(frames[4].user_code);
    BOOST_TEST(!frames[6].user_code);  // main() of the interpreter executable: not the user's code
    BOOST_TEST(nsc::triage::describe_thread(view->threads[0]) ==
               "c10d::ProcessGroupNCCL::barrier() called from finish (train.py:62) [nccl-group-end]");
  }
}
