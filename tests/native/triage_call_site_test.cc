// The user's own call site: never a native frame, a module offset or a library wrapper.
#define BOOST_TEST_MODULE triage_call_site
#include <boost/test/unit_test.hpp>

#include "triage/call_site.h"

namespace {

using nsc::triage::FrameView;
using nsc::triage::user_call_site;

FrameView native(const std::string& label, bool user = false) {
  FrameView frame;
  frame.set_label(label);
  frame.user_code = user;
  return frame;
}

FrameView python(const std::string& label, bool library) {
  FrameView frame;
  frame.set_label(label);
  frame.python = frame.user_code = true;
  frame.python_library = library;
  return frame;
}

}  // namespace

BOOST_AUTO_TEST_CASE(python_library_call_names_the_users_line) {
  // barrier() from the user's run_tpdp, through c10d's logging decorator.
  auto site = user_call_site({native("libtorch_cpu.so+0x6a1463d"), python("barrier (distributed_c10d.py:5030)", true),
                              python("wrapper (c10d_logger.py:83)", true), python("run_tpdp (train.py:192)", false),
                              python("main (train.py:300)", false)},
                             "nccl-group-end");
  BOOST_TEST(site.text() == "barrier at train.py:192");
  BOOST_TEST(site.function == "run_tpdp");
}

// The API the line called, not the helper it runs: stacks from corefiles/order-split-vs-collective
// and tpdp-startup (PyTorch 2.x), innermost first.
BOOST_AUTO_TEST_CASE(the_library_frame_nearest_the_users_line_names_the_call) {
  struct Case {
    std::vector<FrameView> frames;
    const char* call_site;
  };
  const Case cases[] = {
      {{native("libtorch_python.so+0xf4e686"), python("_new_process_group_helper (distributed_c10d.py:2253)", true),
        python("_new_group_with_tag (distributed_c10d.py:5533)", true), python("new_group (distributed_c10d.py:5442)", true),
        python("wrapper (c10d_logger.py:97)", true), python("new_groups (torch_multigroup.py:98)", false),
        python("main (torch_multigroup.py:278)", false)},
       "new_group at torch_multigroup.py:98"},
      {{python("_create_c10d_store (rendezvous.py:199)", true), python("_env_rendezvous_handler (rendezvous.py:280)", true),
        python("init_process_group (distributed_c10d.py:1831)", true), python("wrapper (c10d_logger.py:97)", true),
        python("wrapper (c10d_logger.py:83)", true), python("main (torch_multigroup.py:264)", false)},
       "init_process_group at torch_multigroup.py:264"},
      // Only decorators' frames between the line and the call: the innermost library frame is named.
      {{python("wrapper (c10d_logger.py:83)", true), python("inner (utils.py:12)", true), python("step (train.py:40)", false)},
       "wrapper at train.py:40"},
  };
  for (const Case& c : cases) BOOST_TEST(user_call_site(c.frames, "blocked").text() == c.call_site);
}

BOOST_AUTO_TEST_CASE(a_wrapper_named_like_the_library_call_is_stepped_past) {
  // def all_reduce(self, t): dist.all_reduce(t) -- the call site is its caller.
  auto site = user_call_site({python("all_reduce (distributed_c10d.py:2900)", true), python("wrapper (c10d_logger.py:83)", true),
                              python("all_reduce (train.py:96)", false), python("tpdp_step (train.py:175)", false),
                              python("run_tpdp (train.py:192)", false)});
  BOOST_TEST(site.text() == "all_reduce at train.py:175");
  BOOST_TEST(site.function == "tpdp_step");
}

BOOST_AUTO_TEST_CASE(a_c_call_from_python_is_named_by_what_the_thread_is_blocked_in) {
  auto site = user_call_site({native("libcuda.so.1+0x22be19"), native("libtorch_cuda.so+0x16a7cd5"),
                              python("run_tpdp (train.py:186)", false)},
                             "cudaStreamSynchronize");
  BOOST_TEST(site.text() == "cudaStreamSynchronize at train.py:186");
}

BOOST_AUTO_TEST_CASE(native_programs_give_the_innermost_named_function_of_the_program) {
  auto site = user_call_site({native("pause"), native("(anonymous namespace)::park_in_pause(Scenario const&)", true),
                              native("main", true)},
                             "sleep");
  BOOST_TEST(site.text() == "pause() in park_in_pause()");
}

BOOST_AUTO_TEST_CASE(module_offsets_and_interpreter_frames_are_never_a_call_site) {
  auto site = user_call_site({native("pause"), native("python3.12+0xf94af", true), native("_PyEval_EvalFrameDefault", true)},
                             "sleep");
  BOOST_TEST(!site.found());
  BOOST_TEST(site.text().empty());
}
