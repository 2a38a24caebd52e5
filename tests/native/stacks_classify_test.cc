// classify_blocked_in and friends on hand-made frame lists (no process needed).
#define BOOST_TEST_MODULE stacks_classify
#include <boost/test/unit_test.hpp>

#include "stacks/blocked_in.h"
#include "stacks/thread_stacks.h"

using nsc::StackFrame;

namespace {

StackFrame frame(const std::string& function, const std::string& module) {
  StackFrame result;
  result.function = function;
  result.module = module;
  return result;
}

// Outermost frames of a program's main thread and of a pthread, as glibc 2.36 shows them.
std::vector<StackFrame> main_thread(std::vector<StackFrame> inner, const std::string& exe) {
  inner.push_back(frame("main", exe));
  inner.push_back(frame("__libc_start_call_main", "libc.so.6"));
  inner.push_back(frame("__libc_start_main_impl", "libc.so.6"));
  inner.push_back(frame("_start", exe));
  return inner;
}

std::vector<StackFrame> pthread(std::vector<StackFrame> inner) {
  inner.push_back(frame("start_thread", "libc.so.6"));
  inner.push_back(frame("clone3", "libc.so.6"));
  return inner;
}

}  // namespace

BOOST_AUTO_TEST_CASE(bare_names_drop_signatures_scopes_clones_and_aliases) {
  BOOST_TEST(nsc::bare_function_name("ncclProxyProgress(void*)") == "ncclProxyProgress");
  BOOST_TEST(nsc::bare_function_name(
                 "progressOps(ncclProxyState*, ncclProxyProgressState*, ncclProxyArgs*, int*) "
                 "[clone .constprop.0]") == "progressOps");
  BOOST_TEST(nsc::bare_function_name("(anonymous namespace)::bootstrapRoot(void*)") ==
             "bootstrapRoot");
  BOOST_TEST(nsc::bare_function_name("cudart::cudaApiStreamSynchronize(CUstream_st*)") ==
             "cudaApiStreamSynchronize");
  BOOST_TEST(nsc::bare_function_name("void* ns::worker<int, std::pair<int, int> >(void*)") ==
             "worker");
  BOOST_TEST(nsc::bare_function_name("__GI___poll") == "poll");
  BOOST_TEST(nsc::bare_function_name("__libc_pause") == "pause");
  BOOST_TEST(nsc::bare_function_name("__clock_nanosleep") == "clock_nanosleep");
  BOOST_TEST(nsc::bare_function_name("pncclCommInitRank") == "ncclCommInitRank");
  BOOST_TEST(nsc::bare_function_name("foo.part.0") == "foo");
  BOOST_TEST(nsc::bare_function_name("") == "");
}

BOOST_AUTO_TEST_CASE(modules_are_told_apart_from_the_executable) {
  BOOST_TEST(nsc::is_shared_object_module("libnccl.so.2"));
  BOOST_TEST(nsc::is_shared_object_module("libc.so.6"));
  BOOST_TEST(nsc::is_shared_object_module("libcuda.so"));
  BOOST_TEST(nsc::is_shared_object_module("[vdso: 1234]"));
  BOOST_TEST(nsc::is_shared_object_module(
      "libnccl.so.2 (build-id mismatch: core 9fcf74d93a8c..., file 0123456789ab...)"));
  BOOST_TEST(!nsc::is_shared_object_module("python3.12"));
  BOOST_TEST(!nsc::is_shared_object_module("stack_fixture"));
  BOOST_TEST(!nsc::is_shared_object_module("my.sober.app"));
}

BOOST_AUTO_TEST_CASE(static_cudart_stream_sync_in_the_executable) {
  // libcudart linked statically: its symbols belong to the executable; libcuda unsymbolized.
  auto frames = main_thread({frame("sched_yield", "libc.so.6"), frame("", "libcuda.so.1"),
                             frame("", "libcuda.so.1"),
                             frame("cudart::cudaApiStreamSynchronize(CUstream_st*)", "hang_app"),
                             frame("cudaStreamSynchronize", "hang_app"),
                             frame("run_allreduce(int)", "hang_app")},
                            "hang_app");
  BOOST_TEST(nsc::classify_blocked_in(frames) == "cudaStreamSynchronize");
}

BOOST_AUTO_TEST_CASE(driver_level_waits) {
  BOOST_TEST(nsc::classify_blocked_in(main_thread(
                 {frame("", "libcuda.so.1"), frame("cuStreamSynchronize", "libcuda.so.1")},
                 "app")) == "cudaStreamSynchronize");
  BOOST_TEST(nsc::classify_blocked_in(main_thread(
                 {frame("ioctl", "libc.so.6"), frame("cuEventSynchronize", "libcuda.so.1"),
                  frame("cudaEventSynchronize", "libcudart.so.13")},
                 "app")) == "cudaEventSynchronize");
  BOOST_TEST(nsc::classify_blocked_in(main_thread(
                 {frame("cuCtxSynchronize", "libcuda.so.1")}, "app")) == "cudaDeviceSynchronize");
  BOOST_TEST(nsc::classify_blocked_in(main_thread(
                 {frame("cudaDeviceSynchronize", "libcudart.so.13")}, "app")) ==
             "cudaDeviceSynchronize");
}

BOOST_AUTO_TEST_CASE(other_cuda_calls) {
  // From the cross-stream corpus core: a kernel launch blocked by lazy module loading.
  auto launch = main_thread(
      {frame("", "libcuda.so.580.159.04"), frame("", "libcuda.so.580.159.04"),
       frame("libcudart_static_4d8b33a106dceb3c07a56e26de61f2d53bb62a68", "nccl_hang_scenarios"),
       frame("cudaLaunchKernel", "nccl_hang_scenarios"),
       frame("__device_stub__ZN51_GLOBAL__N__consume_kernelEPKfPfm(float const*, float*, "
             "unsigned long)",
             "nccl_hang_scenarios"),
       frame("(anonymous namespace)::run_cross_stream((anonymous namespace)::Scenario&)",
             "nccl_hang_scenarios")},
      "nccl_hang_scenarios");
  BOOST_TEST(nsc::classify_blocked_in(launch) == "cuda-call");
  BOOST_TEST(nsc::classify_blocked_in(main_thread(
                 {frame("ioctl", "libc.so.6"), frame("cuMemFree_v2", "libcuda.so.1")}, "app")) ==
             "cuda-call");
  // A sync call still names itself, and NCCL's threads keep their class while calling CUDA.
  BOOST_TEST(nsc::classify_blocked_in(main_thread({frame("cuMemcpyDtoH_v2", "libcuda.so.1"),
                                                   frame("cudaStreamSynchronize", "app")},
                                                  "app")) == "cudaStreamSynchronize");
  BOOST_TEST(nsc::classify_blocked_in(pthread({frame("cuEventQuery", "libcuda.so.1"),
                                               frame("ncclProxyProgress(void*)",
                                                     "libnccl.so.2")})) == "nccl-proxy-progress");
  // Not API names: "cudart::..." internals alone, "cuda_helper", "curl_easy_perform".
  BOOST_TEST(nsc::classify_blocked_in(main_thread({frame("cuda_helper", "app"),
                                                   frame("curl_easy_perform", "libcurl.so.4")},
                                                  "app")) == "user-code");
}

BOOST_AUTO_TEST_CASE(nccl_api_call_beats_the_wait_inside_it) {
  // Init blocked on the bootstrap socket: the user called ncclCommInitRank.
  auto init = main_thread({frame("__GI___poll", "libc.so.6"),
                           frame("ncclSocketAccept(ncclSocket*, ncclSocket*)", "libnccl.so.2"),
                           frame("bootstrapInit(int, ncclBootstrapHandle*, ncclComm*)",
                                 "libnccl.so.2"),
                           frame("ncclCommInitRankFunc(ncclAsyncJob*)", "libnccl.so.2"),
                           frame("ncclCommInitRankDev(...)", "libnccl.so.2"),
                           frame("pncclCommInitRank", "libnccl.so.2")},
                          "app");
  BOOST_TEST(nsc::classify_blocked_in(init) == "ncclCommInitRank");
  auto split = main_thread({frame("cudaStreamSynchronize", "libcudart.so.13"),
                            frame("ncclCommSplit", "libnccl.so.2")},
                           "app");
  BOOST_TEST(nsc::classify_blocked_in(split) == "ncclCommInitRank");
  auto group = main_thread({frame("pthread_cond_wait", "libc.so.6"),
                            frame("ncclProxyCallBlocking(...)", "libnccl.so.2"),
                            frame("groupLaunch(ncclAsyncJob*, ncclSimInfo*)", "libnccl.so.2"),
                            frame("ncclGroupEndInternal(ncclSimInfo*)", "libnccl.so.2"),
                            frame("ncclGroupEnd", "libnccl.so.2")},
                           "app");
  BOOST_TEST(nsc::classify_blocked_in(group) == "nccl-group-end");
  auto init_all = main_thread({frame("ncclCommInitAll", "libnccl.so.2")}, "app");
  BOOST_TEST(nsc::classify_blocked_in(init_all) == "ncclCommInitRank");
}

BOOST_AUTO_TEST_CASE(nccl_threads) {
  BOOST_TEST(nsc::classify_blocked_in(pthread(
                 {frame("sched_yield", "libc.so.6"),
                  frame("progressOps(ncclProxyState*, ncclProxyProgressState*, ncclProxyArgs*, "
                        "int*)",
                        "libnccl.so.2"),
                  frame("ncclProxyProgress(void*)", "libnccl.so.2")})) == "nccl-proxy-progress");
  BOOST_TEST(nsc::classify_blocked_in(pthread(
                 {frame("__GI___poll", "libc.so.6"),
                  frame("ncclProxyService(void*)", "libnccl.so.2")})) == "nccl-proxy-service");
  BOOST_TEST(nsc::classify_blocked_in(pthread(
                 {frame("__GI___poll", "libc.so.6"),
                  frame("ncclProxyServiceUDS(void*)", "libnccl.so.2")})) ==
             "nccl-proxy-service");
  BOOST_TEST(nsc::classify_blocked_in(pthread(
                 {frame("accept", "libc.so.6"),
                  frame("(anonymous namespace)::bootstrapRoot(void*)", "libnccl.so.2")})) ==
             "nccl-bootstrap");
}

BOOST_AUTO_TEST_CASE(system_call_waits_outside_nccl) {
  // A CUDA runtime helper thread polling inside unsymbolized libcuda.
  BOOST_TEST(nsc::classify_blocked_in(pthread({frame("__GI___poll", "libc.so.6"),
                                               frame("", "libcuda.so.1"),
                                               frame("", "libcuda.so.1")})) == "poll/epoll");
  BOOST_TEST(nsc::classify_blocked_in(pthread({frame("epoll_wait", "libc.so.6"),
                                               frame("", "libtorch_cpu.so")})) == "poll/epoll");
  // pause() called from the program: "sleep" (documented decision), user frame findable.
  auto paused = main_thread({frame("__libc_pause", "libc.so.6"),
                             frame("fixture_wait_in_user_code", "stack_fixture")},
                            "stack_fixture");
  BOOST_TEST(nsc::classify_blocked_in(paused) == "sleep");
  const StackFrame* user = nsc::innermost_user_frame(paused);
  BOOST_REQUIRE(user != nullptr);
  BOOST_TEST(user->function == "fixture_wait_in_user_code");
  BOOST_TEST(nsc::classify_blocked_in(main_thread(
                 {frame("__GI___clock_nanosleep", "libc.so.6"),
                  frame("__GI___nanosleep", "libc.so.6"), frame("sleep", "libc.so.6")},
                 "app")) == "sleep");
}

BOOST_AUTO_TEST_CASE(fallbacks_user_code_and_unknown) {
  // Busy in the program's own code.
  BOOST_TEST(nsc::classify_blocked_in(main_thread({frame("compute_checksum", "app")}, "app")) ==
             "user-code");
  // Blocked in a futex under the program's own thread function.
  BOOST_TEST(nsc::classify_blocked_in(pthread({frame("futex_wait", "libc.so.6"),
                                               frame("pthread_cond_wait", "libc.so.6"),
                                               frame("worker_main", "app")})) == "user-code");
  // A thread a library started, nothing symbolized: unknown.
  BOOST_TEST(nsc::classify_blocked_in(pthread({frame("", "libcuda.so.1")})) == "unknown");
  // Seen in a real core whose program file was rebuilt: the waiter's main thread is in
  // unsymbolized libcuda under unsymbolized program frames. Not "user-code": that would
  // make the waiting rank look like a culprit that never entered CUDA.
  const std::string wrong_exe =
      "nccl_hang_scenarios (build-id mismatch: core 4888d1bfb6ff..., file 955601c1ec26...)";
  BOOST_TEST(nsc::classify_blocked_in(main_thread({frame("", "libcuda.so.580.159.04"),
                                                   frame("", "libcuda.so.580.159.04"),
                                                   frame("", wrong_exe), frame("", wrong_exe)},
                                                  wrong_exe)) == "unknown");
  // A stripped libnccl thread (no name, no symbol, no waiting syscall named).
  BOOST_TEST(nsc::classify_blocked_in(pthread({frame("", "libc.so.6"),
                                               frame("", "libnccl.so.2")})) == "unknown");
  BOOST_TEST(nsc::classify_blocked_in({}) == "unknown");
  BOOST_TEST(nsc::classify_blocked_in({frame("", "")}) == "unknown");
  BOOST_TEST(nsc::innermost_user_frame(pthread({frame("", "libcuda.so.1")})) == nullptr);
}

BOOST_AUTO_TEST_CASE(nccl_thread_names_help_when_libnccl_is_stripped) {
  auto stripped = pthread({frame("__GI___poll", "libc.so.6"), frame("", "libnccl.so.2")});
  BOOST_TEST(nsc::classify_blocked_in(stripped) == "poll/epoll");
  BOOST_TEST(nsc::classify_blocked_in(stripped, "NCCL Service  0") == "nccl-proxy-service");
  BOOST_TEST(nsc::classify_blocked_in(stripped, "NCCL Progress 2") == "nccl-proxy-progress");
  BOOST_TEST(nsc::classify_blocked_in(stripped, "NCCL BootstrapR") == "nccl-bootstrap");
  BOOST_TEST(nsc::classify_blocked_in(stripped, "python") == "poll/epoll");
  // Frames naming NCCL win over a misleading name.
  auto service = pthread({frame("ncclProxyService(void*)", "libnccl.so.2")});
  BOOST_TEST(nsc::classify_blocked_in(service, "NCCL Progress 0") == "nccl-proxy-service");
}

BOOST_AUTO_TEST_CASE(json_follows_the_state_schema) {
  nsc::ThreadStack thread;
  thread.tid = 42;
  thread.name = "\x1b[31mevil\xff";
  thread.state = 'S';
  StackFrame symbolized = frame("cudaStreamSynchronize", "libcudart.so.13");
  symbolized.pc = 0x7f0000001234;
  symbolized.offset = 52;
  StackFrame bare = frame("", "libcuda.so.1");
  bare.pc = 0x7f0000abc000;
  bare.offset = 0x2f3a4;
  thread.frames = {bare, symbolized};
  thread.blocked_in = "cudaStreamSynchronize";
  nlohmann::json json = nsc::to_json(thread);
  BOOST_TEST(json["tid"] == 42);
  BOOST_TEST(json["name"] == "\x1b[31mevil\xef\xbf\xbd");  // raw but valid UTF-8
  BOOST_TEST(json["state"] == "S");
  BOOST_TEST(json["frames"][0]["function"].is_null());
  BOOST_TEST(json["frames"][0]["offset"] == 0x2f3a4);
  BOOST_TEST(json["frames"][1]["pc"] == "0x7f0000001234");
  BOOST_TEST(json["frames"][1]["function"] == "cudaStreamSynchronize");
  BOOST_TEST(json["frames"][1]["module"] == "libcudart.so.13");
  BOOST_TEST(json["frames"][1]["offset"] == 52);
  BOOST_TEST(json["blocked_in"] == "cudaStreamSynchronize");
  BOOST_TEST(!json.contains("error"));
  BOOST_TEST(json.dump().find("\\u001b[31mevil") != std::string::npos);
  thread.state = '?';
  thread.error = "dwfl_thread_getframes: no matching address range";
  json = nsc::to_json(thread);
  BOOST_TEST(json["state"].is_null());
  BOOST_TEST(json["error"] == "dwfl_thread_getframes: no matching address range");
}

BOOST_AUTO_TEST_CASE(the_system_call_names_the_wait_when_libc_is_unsymbolized) {
  // Corpus culprit rank: the target's libc is not on this machine, so pause() has no name.
  nsc::ThreadStack culprit;
  culprit.frames = main_thread({frame("", "libc.so.6 (build-id mismatch: core a4a7992a8e66..., "
                                          "file 93ac61ec5a8e...)"),
                                frame("(anonymous namespace)::park_in_pause(Scenario const&)",
                                      "nccl_hang_scenarios")},
                               "nccl_hang_scenarios");
  BOOST_TEST(nsc::classify_thread_blocked_in(culprit) == "user-code");  // syscall unknown
  culprit.syscall = 34;
  BOOST_TEST(nsc::classify_thread_blocked_in(culprit) == "sleep");
  culprit.syscall = 202;  // futex: no class of its own
  BOOST_TEST(nsc::classify_thread_blocked_in(culprit) == "user-code");
  // A CUDA helper thread polling: same answer as with symbols.
  nsc::ThreadStack helper;
  helper.frames = pthread({frame("", "libc.so.6"), frame("", "libcuda.so.1")});
  helper.syscall = 7;
  BOOST_TEST(nsc::classify_thread_blocked_in(helper) == "poll/epoll");
  // Named frames still win: a proxy service thread in poll stays a proxy service thread.
  nsc::ThreadStack service;
  service.frames = pthread({frame("", "libc.so.6"), frame("ncclProxyService(void*)", "libnccl.so.2")});
  service.syscall = 7;
  BOOST_TEST(nsc::classify_thread_blocked_in(service) == "nccl-proxy-service");
  BOOST_TEST(nsc::syscall_name(34) == "pause");
  BOOST_TEST(nsc::syscall_name(232) == "epoll_wait");
  BOOST_TEST(nsc::syscall_name(999) == "syscall_999");
  BOOST_TEST(nsc::syscall_name(-1) == "");
  nsc::ThreadStack quiet;
  BOOST_TEST(!nsc::to_json(quiet).contains("syscall"));
  quiet.syscall = 230;
  BOOST_TEST(nsc::to_json(quiet)["syscall"] == "clock_nanosleep");
}

// The SIGABRT that wrote the core (faulthandler re-raising it) sits innermost: its frames and
// the sigreturn trampoline are not what the thread waits in.
BOOST_AUTO_TEST_CASE(signal_delivery_frames_are_skipped) {
  std::vector<StackFrame> frames = main_thread(
      {frame("__pthread_kill_implementation", "libc.so.6"), frame("raise", "libc.so.6"), frame("abort", "libc.so.6"),
       frame("faulthandler_fatal_error", "python3.12"), frame("", "libc.so.6"),
       frame("__futex_abstimed_wait_common", "libc.so.6"), frame("cudaStreamSynchronize", "libcudart.so.12"),
       frame("block_on_stream", "program")},
      "program");
  std::vector<nsc::SignalRole> roles;
  for (const StackFrame& f : frames) roles.push_back(nsc::signal_role(f.function, f.module));
  BOOST_TEST(nsc::signal_frame_count(roles) == 5u);
  BOOST_TEST(nsc::classify_blocked_in(frames) == "cudaStreamSynchronize");
  // restore_rt is the trampoline by name; frames that are all the signal's leave nothing to skip.
  BOOST_TEST(nsc::signal_frame_count({nsc::signal_role("raise", "libc.so.6"),
                                      nsc::signal_role("__restore_rt", "libc.so.6"),
                                      nsc::signal_role("pause", "libc.so.6")}) == 2u);
  BOOST_TEST(nsc::signal_frame_count({nsc::signal_role("raise", "libc.so.6"), nsc::signal_role("", "libc.so.6")}) == 0u);
}
