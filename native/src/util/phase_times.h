// Where a run's wall time goes: with NCCLSCOPE_TIMINGS=1 in the environment, each timed phase
// (opening a target, unwinding, reading Python stacks, the analysis, ...) is recorded with its
// subject ("pid 1234") and printed to stderr when the command ends. Off, a phase costs one
// branch. Thread-safe: ranks are read by parallel workers.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace nsc {

bool phase_times_enabled();

// Times one phase from construction to destruction.
class PhaseTimer {
 public:
  explicit PhaseTimer(const char* phase);
  ~PhaseTimer() { stop(); }
  void stop();  // records the phase now (once)
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  const char* phase_;  // null once recorded
  std::chrono::steady_clock::time_point start_;
  double start_cpu_ms_ = 0;  // this thread's CPU time at the start
};

// The subject of this thread's phases until the scope ends ("pid 1234", a core's name).
class PhaseSubject {
 public:
  explicit PhaseSubject(std::string subject);
  ~PhaseSubject();

 private:
  std::string previous_;
};

// One line per phase, in start order, then each phase's total; nothing when disabled.
void print_phase_times(std::FILE* out);

}  // namespace nsc
