// Issue 32: the fatal signal of a core (NT_SIGINFO and the thread that took it), what each
// input says of how its rank failed, and the crash verdict's origin, on synthetic inputs.
#define BOOST_TEST_MODULE crash
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <cstring>

#include "snapshot/fatal_signal.h"
#include "snapshot/state_views.h"
#include "target/core_notes.h"
#include "triage/headline.h"
#include "triage_synthetic.h"

using nlohmann::json;
using namespace synthetic;

namespace {

constexpr int kSiUser = 0, kSiTkill = -6;

std::vector<uint8_t> siginfo_bytes(int signo, int code, int pid_or_low, uint64_t address_or_zero) {
  std::vector<uint8_t> bytes(128, 0);
  int32_t words[3] = {signo, 0, code};
  std::memcpy(bytes.data(), words, sizeof words);
  if (address_or_zero != 0) std::memcpy(bytes.data() + 16, &address_or_zero, 8);
  else std::memcpy(bytes.data() + 16, &pid_or_low, 4);
  return bytes;
}

nsc::SignalInfo signal_of(int signo, int code, int sender_pid, uint64_t address, int tid) {
  nsc::SignalInfo signal;
  signal.signo = signo;
  signal.code = code;
  signal.sender_pid = sender_pid;
  signal.fault_address = address;
  signal.tid = tid;
  return signal;
}

const char* const kLibc = "libc.so.6";

json watchdog_abort_thread(int tid) {
  return thread(tid, "unknown",
                {frame("__pthread_kill_implementation", kLibc), frame("raise", kLibc), frame("abort", kLibc),
                 frame("__gnu_cxx::__verbose_terminate_handler()", "libstdc++.so.6"),
                 frame("std::terminate()", "libstdc++.so.6"),
                 frame("c10d::ProcessGroupNCCL::Watchdog::run()", "libtorch_cuda.so")});
}

json segfault_thread(int tid) {
  return thread(tid, "user-code", {frame("crash_in_user_kernel(float*)", "libuser_crash.so")});
}

json exit_segfault_thread(int tid) {
  return thread(tid, "unknown", {frame("PyObject_Free", "python3.12"), frame("Py_FinalizeEx", "python3.12")});
}

// rank_document of `rank`, whose process took `signal` in thread `signal_thread` (its main
// thread when 0), and whose communicators report ncclRemoteError when `remote`.
json crashed_rank(int rank, int nranks, const Counts& counts, json main_thread, std::optional<nsc::SignalInfo> signal,
                  bool remote, json signal_thread = nullptr) {
  json doc = rank_document(rank, nranks, counts, std::move(main_thread));
  int pid = doc["target"]["pid"].get<int>();
  if (!signal_thread.is_null()) {
    signal_thread["tid"] = pid + 7;
    doc["threads"].push_back(signal_thread);
  }
  if (signal) {
    signal->tid = signal_thread.is_null() ? pid : pid + 7;
    if (signal->code == kSiTkill && signal->sender_pid == 0) signal->sender_pid = pid;
  }
  doc["fatal_signal"] = nsc::fatal_signal_json(signal, pid, doc["threads"]);
  doc["communicators"][0]["health"]["proxy_async_result"] = remote ? "ncclRemoteError" : "ncclSuccess";
  return doc;
}

nsc::SignalInfo abort_signal() { return signal_of(SIGABRT, kSiTkill, 0, 0, 0); }

json triage(const std::vector<json>& documents) { return triage_read_back(documents); }

std::vector<int> ints(const json& list) { return list.get<std::vector<int>>(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(siginfo_note)

BOOST_AUTO_TEST_CASE(fault_and_kill_layouts) {
  auto segv = nsc::parse_siginfo(siginfo_bytes(SIGSEGV, 1, 0, 0x10).data(), 128);
  BOOST_REQUIRE(segv);
  BOOST_TEST(segv->signo == SIGSEGV);
  BOOST_TEST(segv->code == 1);
  BOOST_TEST(segv->fault_address == 0x10u);
  auto kill = nsc::parse_siginfo(siginfo_bytes(SIGABRT, kSiUser, 4242, 0).data(), 128);
  BOOST_REQUIRE(kill);
  BOOST_TEST(kill->sender_pid == 4242);
  BOOST_TEST(kill->code == kSiUser);
}

BOOST_AUTO_TEST_CASE(too_short_is_nothing) {
  BOOST_TEST(!nsc::parse_siginfo(siginfo_bytes(SIGSEGV, 1, 0, 0x10).data(), 23));
  nsc::CoreNotes notes;
  std::vector<uint8_t> bytes = siginfo_bytes(SIGSEGV, 1, 0, 0x10);
  nsc::add_core_note(0x53494749, "CORE", bytes.data(), 8, &notes);
  BOOST_TEST(!notes.signal);
  BOOST_TEST(notes.problems.size() == 1u);
  nsc::add_core_note(0x53494749, "CORE", bytes.data(), bytes.size(), &notes);
  BOOST_REQUIRE(notes.signal);
  BOOST_TEST(notes.signal->fault_address == 0x10u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(fatal_signal_origin)

BOOST_AUTO_TEST_CASE(fault_in_user_code) {
  json threads = json::array({segfault_thread(7)});
  json out = nsc::fatal_signal_json(signal_of(SIGSEGV, 1, 0, 0x10, 7), 7, threads);
  BOOST_TEST(out["origin"] == "fault");
  BOOST_TEST(out["failure"] == true);
  BOOST_TEST(out["code_name"] == "SEGV_MAPERR");
  BOOST_TEST(out["fault_address"] == "0x10");
  BOOST_TEST(out["sender_pid"].is_null());
  BOOST_TEST(out["site"]["in"] == "user code");
  BOOST_TEST(out["site"]["module"] == "libuser_crash.so");
  BOOST_TEST(out["text"].get<std::string>().find("crash_in_user_kernel() in libuser_crash.so (user code)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(watchdog_abort) {
  json threads = json::array({waiting_thread(7), watchdog_abort_thread(9)});
  json out = nsc::fatal_signal_json(signal_of(SIGABRT, kSiTkill, 7, 0, 9), 7, threads);
  BOOST_TEST(out["origin"] == "abort");
  BOOST_TEST(out["failure"] == true);
  BOOST_TEST(out["torch_watchdog"] == true);
  BOOST_TEST(out["via"].is_string());
  BOOST_TEST(out["site"]["in"] == "PyTorch");
  BOOST_TEST(out["sender_pid"] == 7);
}

BOOST_AUTO_TEST_CASE(sent_by_another_process_is_no_failure) {
  json threads = json::array({waiting_thread(7)});
  json out = nsc::fatal_signal_json(signal_of(SIGABRT, kSiUser, 31337, 0, 7), 7, threads);
  BOOST_TEST(out["origin"] == "sent");
  BOOST_TEST(out["failure"] == false);
  BOOST_TEST(out["site"].is_null());
  BOOST_TEST(out["text"].get<std::string>().find("sent by pid 31337") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(faulthandler_reraise) {
  // python -X faulthandler re-raises with tgkill from the process itself, no abort() frame.
  json threads = json::array({thread(7, "unknown", {frame("__pthread_kill_implementation", kLibc), frame("raise", kLibc),
                                                    frame("", kLibc), frame("", "libcuda.so.1")})});
  json abrt = nsc::fatal_signal_json(signal_of(SIGABRT, kSiTkill, 7, 0, 7), 7, threads);
  BOOST_TEST(abrt["origin"] == "re-raised");
  BOOST_TEST(abrt["failure"] == false);
  json segv = nsc::fatal_signal_json(signal_of(SIGSEGV, kSiTkill, 7, 0, 7), 7, threads);
  BOOST_TEST(segv["origin"] == "re-raised");
  BOOST_TEST(segv["failure"] == true);
  BOOST_TEST(segv["site"]["in"] == "CUDA");
}

// libc without symbols (a core read away from its machine): frames named by module only.
json unnamed(const std::string& module, const std::string& pc) {
  json f = frame("", module);
  f["pc"] = pc;
  return f;
}

BOOST_AUTO_TEST_CASE(abort_inferred_without_libc_symbols) {
  // abort() from std::terminate, faulthandler re-raising it: raise's return address twice.
  json reraised_abort = thread(7, "unknown", {unnamed(kLibc, "0x10c0c"), unnamed(kLibc, "0x1527e"), unnamed(kLibc, "0x15330"),
                                              unnamed(kLibc, "0x1527e"), unnamed(kLibc, "0x188ff"),
                                              unnamed("libstdc++.so.6.0.33", "0x2a5ff5"), unnamed("libtorch_cuda.so", "0x3efbd")});
  json out = nsc::fatal_signal_json(signal_of(SIGABRT, kSiTkill, 7, 0, 7), 7, json::array({reraised_abort}));
  BOOST_TEST(out["origin"] == "abort");
  BOOST_TEST(out["failure"] == true);
  BOOST_TEST(out["abort_inferred"] == true);
  BOOST_TEST(out["site"]["in"] == "PyTorch");
  BOOST_TEST(out["text"].get<std::string>().find("inferred: the process sent itself SIGABRT") != std::string::npos);
  // abort() with no handler: libc's frames lead into libstdc++ (std::terminate).
  json plain_abort = thread(7, "unknown", {unnamed(kLibc, "0x10c0c"), unnamed(kLibc, "0x1527e"), unnamed(kLibc, "0x188ff"),
                                           unnamed("libstdc++.so.6", "0x2a5ff5"), unnamed("libtorch_cuda.so", "0x3efbd")});
  out = nsc::fatal_signal_json(signal_of(SIGABRT, kSiTkill, 7, 0, 7), 7, json::array({plain_abort}));
  BOOST_TEST(out["origin"] == "abort");
  // A signal from outside that faulthandler re-raised: the interrupted code follows libc at once.
  json outside = thread(7, "unknown", {unnamed(kLibc, "0x10c0c"), unnamed(kLibc, "0x1527e"), unnamed(kLibc, "0x15330"),
                                       unnamed("libcuda.so.1", "0x306d73")});
  out = nsc::fatal_signal_json(signal_of(SIGABRT, kSiTkill, 7, 0, 7), 7, json::array({outside}));
  BOOST_TEST(out["origin"] == "re-raised");
  BOOST_TEST(out["failure"] == false);
  BOOST_TEST(out["abort_inferred"] == false);
  BOOST_TEST(out["text"].get<std::string>().find("not from abort() as far as its frames show (libc has no symbols") !=
             std::string::npos);
  // Sent by another process: never inferred, whatever the frames.
  out = nsc::fatal_signal_json(signal_of(SIGABRT, kSiTkill, 31337, 0, 7), 7, json::array({reraised_abort}));
  BOOST_TEST(out["origin"] == "sent");
}

BOOST_AUTO_TEST_CASE(during_exit_and_unknown_thread) {
  json threads = json::array({exit_segfault_thread(7)});
  json out = nsc::fatal_signal_json(signal_of(SIGSEGV, 1, 0, 0x8, 7), 7, threads);
  BOOST_TEST(out["during_exit"] == true);
  BOOST_TEST(out["site"]["in"] == "the Python interpreter");
  json lost = nsc::fatal_signal_json(signal_of(SIGSEGV, 1, 0, 0x8, 99), 7, threads);
  BOOST_TEST(lost["thread_found"] == false);
  BOOST_TEST(lost["site"].is_null());
  BOOST_TEST(nsc::fatal_signal_json(std::nullopt, 7, threads).is_null());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(state_text)

BOOST_AUTO_TEST_CASE(no_health_ok_beside_an_error) {
  json doc = rank_document(0, 2, {0, 0, 0, 0, 3}, waiting_thread(0));
  doc["communicators"][0]["health"]["proxy_async_result"] = "ncclRemoteError";
  doc["fatal_signal"] = nsc::fatal_signal_json(signal_of(SIGABRT, kSiTkill, 1000, 0, 1000), 1000,
                                               json::array({watchdog_abort_thread(1000)}));
  std::string list = nsc::render_state_list(doc);
  BOOST_TEST(list.find("health ok") == std::string::npos);
  BOOST_TEST(list.find("proxy_async_result=ncclRemoteError") != std::string::npos);
  std::vector<std::string> lines = nsc::failure_lines(doc);
  BOOST_REQUIRE(lines.size() == 2u);
  BOOST_TEST(lines[0].rfind("FATAL SIGNAL abort()", 0) == 0);
  BOOST_TEST(lines[1].find("NCCL ERROR comm") == 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(crash_verdict)

// A rank SIGKILLed (no input): the survivors' proxies saw ncclRemoteError, PyTorch's watchdog
// aborted them. The origin is the rank without input, on its peers' evidence; the reactions are
// never blamed.
BOOST_AUTO_TEST_CASE(rank_gone_survivors_aborted) {
  std::vector<json> docs;
  for (int rank : {0, 1, 3}) docs.push_back(crashed_rank(rank, 4, {0, 0, 0, 0, 4}, waiting_thread(0), abort_signal(), true, watchdog_abort_thread(0)));
  json report = triage(docs);
  BOOST_TEST(report["verdict"] == "crash");
  BOOST_TEST(ints(report["culprit_ranks"]) == std::vector<int>({2}));
  BOOST_TEST(ints(report["suspect_ranks"]).empty());
  BOOST_TEST(report["crash"]["rule"] == "no-input");
  const json& lines = report["headline"]["lines"];
  BOOST_REQUIRE(lines.size() == 3u);
  BOOST_TEST(lines[0].get<std::string>().rfind("CRASH: rank 2 gone", 0) == 0);
  BOOST_TEST(lines[1].get<std::string>().rfind("Culprit: rank 2", 0) == 0);
  BOOST_TEST(lines[2].get<std::string>().find("ranks 0,1,3: aborted by PyTorch's watchdog after ncclRemoteError") != std::string::npos);
  const json* remote = finding_of(report, "remote-error");
  BOOST_REQUIRE(remote);
  BOOST_TEST(ints((*remote)["waiting_ranks"]) == std::vector<int>({0, 1, 3}));
  BOOST_TEST(!finding_of(report, "errored-rank"));  // a reaction is never "errored"
}

// Two ranks without input on the communicator whose survivors report ncclRemoteError: which
// one died is not told, so neither is blamed (the left-out rank of issue 37 stays "no input").
BOOST_AUTO_TEST_CASE(two_ranks_without_input_blame_neither) {
  std::vector<json> docs;
  for (int rank : {0, 1}) docs.push_back(crashed_rank(rank, 4, {0, 0, 0, 0, 4}, waiting_thread(0), abort_signal(), true, watchdog_abort_thread(0)));
  json report = triage(docs);
  BOOST_TEST(report["verdict"] == "crash");
  BOOST_TEST(ints(report["culprit_ranks"]).empty());
  BOOST_TEST(report["crash"]["rule"] != "no-input");
  const json* remote = finding_of(report, "remote-error");
  BOOST_REQUIRE(remote);
  BOOST_TEST(ints((*remote)["culprit_ranks"]).empty());
}

// Rank 1 segfaults in user code; ranks 0, 2 react (remote error, watchdog), rank 3 segfaults
// while exiting after the remote error: only rank 1 is the culprit.
BOOST_AUTO_TEST_CASE(local_fault_is_the_origin) {
  std::vector<json> docs;
  docs.push_back(crashed_rank(0, 4, {0, 0, 0, 0, 4}, waiting_thread(0), abort_signal(), true, watchdog_abort_thread(0)));
  docs.push_back(crashed_rank(1, 4, {0, 0, 0, 0, 4}, segfault_thread(0), signal_of(SIGSEGV, 1, 0, 0x10, 0), false));
  docs.push_back(crashed_rank(2, 4, {0, 0, 0, 0, 4}, waiting_thread(0), abort_signal(), true, watchdog_abort_thread(0)));
  docs.push_back(crashed_rank(3, 4, {0, 0, 0, 0, 4}, exit_segfault_thread(0), signal_of(SIGSEGV, 1, 0, 0x8, 0), true));
  json report = triage(docs);
  BOOST_TEST(report["verdict"] == "crash");
  BOOST_TEST(ints(report["culprit_ranks"]) == std::vector<int>({1}));
  BOOST_TEST(ints(report["suspect_ranks"]).empty());
  BOOST_TEST(report["crash"]["rule"] == "local-failure");
  BOOST_TEST(report["crash"]["ranks"][3]["kind"] == "fault-on-exit");
  BOOST_TEST(report["crash"]["ranks"][3]["reaction"] == true);
  BOOST_TEST(report["headline"]["lines"][1] ==
             "Culprit: rank 1: SIGSEGV (SEGV_MAPERR, address 0x10) in thread 1001 at crash_in_user_kernel() in "
             "libuser_crash.so (user code).");
}

// PyTorch's watchdog aborted every rank after a timeout; rank 3 never issued AllReduce #4.
BOOST_AUTO_TEST_CASE(timeout_names_the_rank_that_never_issued) {
  std::vector<json> docs;
  for (int rank = 0; rank < 4; ++rank) {
    bool behind = rank == 3;
    json doc = crashed_rank(rank, 4, {0, 0, 0, 0, behind ? 3 : 4}, behind ? pausing_thread(0) : waiting_thread(0),
                            abort_signal(), false, watchdog_abort_thread(0));
    if (!behind) doc["communicators"][0]["proxy_ops"].push_back(proxy_op("AllReduce", "ncclPatternRing", -1));
    docs.push_back(doc);
  }
  json report = triage(docs);
  BOOST_TEST(report["verdict"] == "crash");
  BOOST_TEST(report["crash"]["rule"] == "timeout");
  BOOST_TEST(ints(report["culprit_ranks"]) == std::vector<int>({3}));
  BOOST_TEST(report["headline"]["lines"][0].get<std::string>().rfind("CRASH after a watchdog timeout:", 0) == 0);
  BOOST_TEST(report["headline"]["lines"][0].get<std::string>().find("never issued by rank 3") != std::string::npos);
}

// Cores a capture took with kill -ABRT, or with no NT_SIGINFO: never a crash.
BOOST_AUTO_TEST_CASE(capture_signals_and_missing_notes_are_no_crash) {
  std::vector<json> sent, missing;
  for (int rank = 0; rank < 2; ++rank) {
    bool behind = rank == 1;
    Counts counts{0, 0, 0, 0, behind ? 3 : 4};
    json main = behind ? pausing_thread(0) : waiting_thread(0);
    sent.push_back(crashed_rank(rank, 2, counts, main, signal_of(SIGABRT, kSiUser, 555, 0, 0), false));
    missing.push_back(crashed_rank(rank, 2, counts, main, std::nullopt, false));
  }
  for (const auto& docs : {sent, missing}) {
    json report = triage(docs);
    BOOST_TEST(report["verdict"] == "hang");
    BOOST_TEST(ints(report["culprit_ranks"]) == std::vector<int>({1}));
    BOOST_TEST(report["crash"].is_null());
  }
}

// Remote errors while every process still runs (a peer died, the survivors hang): the verdict
// stays the hang analysis's; the rank without input is a suspect, the reporting ranks are not.
BOOST_AUTO_TEST_CASE(remote_errors_alone_are_no_crash) {
  std::vector<json> docs;
  for (int rank : {0, 1}) docs.push_back(crashed_rank(rank, 3, {0, 0, 0, 0, 4}, waiting_thread(0), std::nullopt, true));
  json report = triage(docs);
  BOOST_TEST(report["verdict"] == "incomplete");
  BOOST_TEST(ints(report["suspect_ranks"]) == std::vector<int>({2}));
  BOOST_TEST(report["crash"].is_null());
  BOOST_TEST(!finding_of(report, "errored-rank"));
  BOOST_TEST(finding_of(report, "remote-error"));
}

// A rank with no input and no peer pointing at it stays "no input", never "gone".
BOOST_AUTO_TEST_CASE(no_input_without_evidence_is_never_gone) {
  std::vector<json> docs;
  docs.push_back(crashed_rank(0, 3, {0, 0, 0, 0, 4}, segfault_thread(0), signal_of(SIGSEGV, 1, 0, 0x10, 0), false));
  docs.push_back(crashed_rank(1, 3, {0, 0, 0, 0, 4}, waiting_thread(0), std::nullopt, false));
  json report = triage(docs);
  BOOST_TEST(report["verdict"] == "crash");
  BOOST_TEST(ints(report["culprit_ranks"]) == std::vector<int>({0}));
  for (const json& rank : report["crash"]["ranks"]) BOOST_TEST(rank["kind"] != "gone");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(crash_order)

// Two ranks fault by themselves: both are the origin; the summary says whose flight recorder
// went quiet first, as a hint (the failure's own time is not in memory).
BOOST_AUTO_TEST_CASE(several_local_failures_ordered_by_recorder_activity) {
  std::vector<json> docs;
  for (int rank = 0; rank < 2; ++rank) {
    json doc = crashed_rank(rank, 2, {0, 0, 0, 0, 4}, segfault_thread(0), signal_of(SIGSEGV, 1, 0, 0x10, 0), false);
    uint64_t created = rank == 1 ? 1000000000ull : 1250000000ull;  // rank 1 quiet 250 ms earlier
    doc["torch"] = {{"process_groups", json::array()},
                    {"entries", json::array({{{"process_group", {"0", "default_pg"}}, {"profiling_name", "nccl:all_reduce"},
                                              {"collective_seq_id", 4}, {"state", "completed"}, {"is_p2p", false},
                                              {"time_created_ns", created}}})}};
    docs.push_back(doc);
  }
  json report = triage(docs);
  BOOST_TEST(report["verdict"] == "crash");
  BOOST_TEST(ints(report["culprit_ranks"]) == std::vector<int>({0, 1}));
  BOOST_TEST(report["summary"].get<std::string>().find("rank 1 first, rank 0 250 ms later") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(crash_timeout_from_recorders)

json recorder_entry(const std::string& pg, uint64_t seq, const std::string& state) {
  return {{"process_group", {pg, "dp1"}}, {"profiling_name", "nccl:all_reduce"}, {"collective_seq_id", seq},
          {"state", state}, {"is_p2p", false}, {"timeout_ms", 15000}, {"time_created_ns", 1000 + seq}};
}

// TORCH_NCCL_ASYNC_ERROR_HANDLING=1: the watchdog aborted (and freed) every communicator, then
// terminated. No counters left: the flight recorders show rank 1 never issued all_reduce #4.
BOOST_AUTO_TEST_CASE(recorders_name_the_rank_that_never_issued) {
  std::vector<json> docs;
  for (int rank = 0; rank < 2; ++rank) {
    json doc = crashed_rank(rank, 2, {0, 0, 0, 0, 4}, waiting_thread(0), abort_signal(), false, watchdog_abort_thread(0));
    doc["communicators"] = json::array();
    doc["launcher"] = {{"rank", rank}, {"world_size", 2}, {"rank_from", "RANK"}};
    json entries = json::array();
    for (uint64_t seq = 1; seq <= 3; ++seq) entries.push_back(recorder_entry("4", seq, "completed"));
    if (rank == 0) entries.push_back(recorder_entry("4", 4, "started"));
    doc["torch"] = {{"process_groups", {{{"name", "4"}, {"desc", "dp1"}, {"ranks", {0, 1}}}}}, {"entries", entries}};
    docs.push_back(doc);
  }
  json report = triage(docs);
  BOOST_TEST(report["verdict"] == "crash");
  BOOST_TEST(report["crash"]["rule"] == "timeout");
  BOOST_TEST(ints(report["culprit_ranks"]) == std::vector<int>({1}));
  std::string first = report["headline"]["lines"][0].get<std::string>();
  // The records' own match (fr_match.cc) names the group and the operation.
  BOOST_TEST(first.find("CRASH after a watchdog timeout") == 0, first);
  BOOST_TEST(first.find("dp1") != std::string::npos, first);
  BOOST_TEST(first.find("all_reduce #4 never issued by rank 1") != std::string::npos, first);
  // The entry that timed out on rank 0, with its own times (created at 1,004 ns, 15 s timeout).
  std::string rank0 = report["crash"]["ranks"][0]["text"].get<std::string>();
  BOOST_TEST(rank0.find("oldest unfinished: all_reduce #4 on pg dp1, timeout 15000 ms (started), created 00:00:00.000 UTC: "
                        "with that timeout, timed out at 00:00:15.000 UTC or later") != std::string::npos, rank0);
  // Rank 1's recorder left out: nothing decides, and nobody is blamed for what is missing.
  json alone = triage({docs[0]});
  BOOST_TEST(ints(alone["culprit_ranks"]).empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(crash_reactions)

// PyTorch's watchdog memory (torch.liveness, torch/watchdog.h) says why the communicators are
// gone: rank 0's watchdog recorded a TIMEOUT; rank 1 was ended by its heartbeat monitor thread
// (its watchdog recorded nothing); with REMOTE_ERROR (a peer signalled its error) a reaction.
BOOST_AUTO_TEST_CASE(watchdog_memory_says_why) {
  json monitor_abort = thread(0, "unknown",
                              {frame("__pthread_kill_implementation", kLibc), frame("raise", kLibc), frame("abort", kLibc),
                               frame("c10d::ProcessGroupNCCL::terminateProcess(std::string const&)", "libtorch_cuda.so"),
                               frame("c10d::ProcessGroupNCCL::HeartbeatMonitor::runLoop()", "libtorch_cuda.so")});
  std::vector<json> docs;
  for (int rank = 0; rank < 2; ++rank) {
    json doc = crashed_rank(rank, 2, {0, 0, 0, 0, 4}, waiting_thread(0), abort_signal(), false,
                            rank == 0 ? watchdog_abort_thread(0) : monitor_abort);
    doc["communicators"] = json::array();
    doc["launcher"] = {{"rank", rank}, {"world_size", 2}, {"rank_from", "RANK"}};
    int pid = doc["target"]["pid"].get<int>();
    json dog = {{"tid", pid + 1}, {"pg_uid", 0}, {"heartbeat", 900}, {"timeout_ms", 80000},
                {"error", rank == 0 ? "TIMEOUT" : "SUCCESS"}, {"terminating", rank == 0}, {"exception_stored", rank == 0}};
    doc["torch"] = {{"liveness", {{"watchdogs", {dog}}, {"heartbeat_monitors", {{{"tid", rank == 1 ? pid + 7 : pid + 3}, {"pg_uid", 0}}}},
                                  {"should_dump", true}}}};
    docs.push_back(doc);
  }
  BOOST_TEST(nsc::failure_lines(docs[0]).back() ==
             "PYTORCH shouldDump_ set: a watchdog of this process saw a failure, or a peer signalled one");
  json report = triage(docs);
  BOOST_TEST(report["verdict"] == "crash");
  std::string rank0 = report["crash"]["ranks"][0]["text"].get<std::string>();
  BOOST_TEST(rank0.find("aborted by PyTorch's watchdog after a watchdog TIMEOUT (80000 ms timeout, pg 0)") == 0, rank0);
  std::string rank1 = report["crash"]["ranks"][1]["text"].get<std::string>();
  BOOST_TEST(rank1.find("aborted by PyTorch's heartbeat monitor; it holds no communicator") == 0, rank1);
  docs[0]["torch"]["liveness"]["watchdogs"][0]["error"] = "REMOTE_ERROR";
  json remote = triage(docs);
  std::string text = remote["crash"]["ranks"][0]["text"].get<std::string>();
  BOOST_TEST(text == "aborted by PyTorch's watchdog after a watchdog REMOTE_ERROR (80000 ms timeout, pg 0)", text);
  BOOST_TEST(remote["crash"]["ranks"][0]["reaction"] == true);
}

// An in-flight exception (stacks/cxx_exception.h) leads the signal's sentence, and a watchdog
// abort's failure in the crash verdict: the exception it rethrew, first.
BOOST_AUTO_TEST_CASE(exception_leads_the_failure) {
  json exception = {{"type", "c10::DistBackendError"}, {"type_name", "N3c1016DistBackendErrorE"}, {"object", "0x10"},
                    {"rethrown", true}, {"found_at", "0x20"},
                    {"message", {{"text", "[Rank 0] Watchdog caught collective operation timeout\nmore"}, {"offset", 8},
                                 {"truncated", false}, {"found_by", "pattern"}}}};
  const std::string sentence =
      "terminate: c10::DistBackendError: \"[Rank 0] Watchdog caught collective operation timeout...\" (message found by pattern)";
  std::vector<json> docs;
  for (int rank : {0, 1}) {
    json doc = crashed_rank(rank, 2, {0, 0, 0, 0, 4}, waiting_thread(0), abort_signal(), false, watchdog_abort_thread(0));
    if (rank == 0) nsc::attach_in_flight_exception(exception, &doc["fatal_signal"]);
    docs.push_back(doc);
  }
  BOOST_TEST(docs[0]["fatal_signal"]["text"].get<std::string>().rfind(sentence + "; abort() via std::terminate", 0) == 0);
  BOOST_TEST(nsc::failure_lines(docs[0])[0].rfind("FATAL SIGNAL " + sentence, 0) == 0);
  json report = triage(docs);
  BOOST_TEST(report["verdict"] == "crash");
  BOOST_TEST(report["crash"]["ranks"][0]["text"].get<std::string>().rfind(sentence + "; aborted by PyTorch's watchdog", 0) == 0);
  BOOST_TEST(report["crash"]["ranks"][1]["text"].get<std::string>().rfind("aborted by PyTorch's watchdog", 0) == 0);
  // Both aborted by the watchdog, not after a peer's error, nothing else decides: a timeout
  // is a reaction to the rank waited on, so both are suspects, never culprits.
  BOOST_TEST(report["crash"]["rule"] == "watchdog-first");
  BOOST_TEST(ints(report["culprit_ranks"]).empty());
  BOOST_TEST(ints(report["suspect_ranks"]) == std::vector<int>({0, 1}));
  BOOST_TEST(report["headline"]["lines"][1].get<std::string>().rfind("Suspect: ranks 0,1", 0) == 0);
}

// A rank whose abort flag is set after its process saw ncclRemoteError reacts: the
// aborted-rank finding names it as evidence, blames nobody; an abort nothing explains is blamed.
BOOST_AUTO_TEST_CASE(reaction_abort_is_never_blamed) {
  std::vector<json> docs;
  for (int rank : {0, 1, 2}) docs.push_back(crashed_rank(rank, 3, {0, 0, 0, 0, 4}, waiting_thread(0), std::nullopt, rank == 0));
  docs[0]["communicators"][0]["health"]["abort_flag"] = true;
  json report = triage(docs);
  const json* aborted = finding_of(report, "aborted-rank");
  BOOST_REQUIRE(aborted);
  BOOST_TEST(ints((*aborted)["culprit_ranks"]).empty());
  BOOST_TEST(ints((*aborted)["waited_on_ranks"]).empty());
  BOOST_TEST((*aborted)["explains_hang"] == false);
  BOOST_TEST((*aborted)["evidence"][0] == "rank 0: abort flag is set, after ncclRemoteError (a peer failed): a reaction, not blamed");
  BOOST_TEST(!std::count(report["culprit_ranks"].begin(), report["culprit_ranks"].end(), 0));

  docs[0]["communicators"][0]["health"]["proxy_async_result"] = "ncclSuccess";  // an abort of its own
  json own = triage(docs);
  const json* blamed = finding_of(own, "aborted-rank");
  BOOST_REQUIRE(blamed);
  BOOST_TEST(ints((*blamed)["waited_on_ranks"]) == std::vector<int>({0}));
  BOOST_TEST((*blamed)["explains_hang"] == true);
}

// Survivors that saw ncclRemoteError while no process failed by itself: the headline's third
// line says so, not only the remote-error finding.
BOOST_AUTO_TEST_CASE(others_line_says_remote_error) {
  std::vector<json> docs;
  for (int rank : {0, 1}) docs.push_back(crashed_rank(rank, 3, {0, 0, 0, 0, 4}, waiting_thread(0), std::nullopt, rank == 1));
  json report = triage(docs);
  BOOST_TEST(report["verdict"] == "incomplete");
  BOOST_REQUIRE(report["headline"]["lines"].size() == 3u);
  BOOST_TEST(report["headline"]["lines"][2].get<std::string>().rfind("Others: rank 1 saw ncclRemoteError (a peer's connection failed); ", 0) == 0,
             report["headline"]["lines"][2]);
}

BOOST_AUTO_TEST_SUITE_END()
