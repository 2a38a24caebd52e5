#include "util/phase_times.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace nsc {
namespace {

using Clock = std::chrono::steady_clock;

struct PhaseRecord {
  std::string subject;
  const char* phase;
  Clock::time_point start;
  Clock::time_point end;
  double cpu_ms;  // the thread's own CPU time in the phase: far below the wall = waiting
  size_t thread;
  long peak_mb;  // the process's peak resident memory when it ended
};

struct PhaseLog {
  std::mutex mutex;
  std::vector<PhaseRecord> records;
  std::map<std::thread::id, size_t> thread_numbers;
  Clock::time_point origin = Clock::now();
};

PhaseLog& phase_log() {
  static PhaseLog log;
  return log;
}

thread_local std::string current_subject;

double milliseconds(Clock::duration duration) {
  return std::chrono::duration<double, std::milli>(duration).count();
}

double thread_cpu_ms() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

long peak_resident_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;  // KiB on Linux
}

}  // namespace

bool phase_times_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("NCCLSCOPE_TIMINGS");
    return value != nullptr && *value != '\0' && std::string(value) != "0";
  }();
  return enabled;
}

PhaseTimer::PhaseTimer(const char* phase) : phase_(phase) {
  if (phase_times_enabled()) {
    phase_log();  // the origin is taken before the first phase starts
    start_ = Clock::now();
    start_cpu_ms_ = thread_cpu_ms();
  }
}

void PhaseTimer::stop() {
  if (phase_ == nullptr || !phase_times_enabled()) return;
  Clock::time_point end = Clock::now();
  double cpu_ms = thread_cpu_ms() - start_cpu_ms_;
  PhaseLog& log = phase_log();
  std::lock_guard<std::mutex> lock(log.mutex);
  size_t thread = log.thread_numbers.emplace(std::this_thread::get_id(), log.thread_numbers.size()).first->second;
  log.records.push_back({current_subject, phase_, start_, end, cpu_ms, thread, peak_resident_mb()});
  phase_ = nullptr;
}

PhaseSubject::PhaseSubject(std::string subject) : previous_(std::move(current_subject)) {
  current_subject = std::move(subject);
}

PhaseSubject::~PhaseSubject() { current_subject = std::move(previous_); }

void print_phase_times(std::FILE* out) {
  if (!phase_times_enabled()) return;
  PhaseLog& log = phase_log();
  std::lock_guard<std::mutex> lock(log.mutex);
  std::vector<PhaseRecord> records = log.records;
  std::sort(records.begin(), records.end(),
            [](const PhaseRecord& a, const PhaseRecord& b) { return a.start < b.start; });
  std::map<std::string, std::pair<double, size_t>> totals;
  std::fprintf(out, "timings (NCCLSCOPE_TIMINGS): start ms, wall ms, own CPU ms, peak MB, thread, phase, input\n");
  for (const PhaseRecord& record : records) {
    double took = milliseconds(record.end - record.start);
    std::fprintf(out, "  %9.1f %9.1f %9.1f %7ld  t%-2zu %-28s %s\n", milliseconds(record.start - log.origin), took,
                 record.cpu_ms, record.peak_mb, record.thread, record.phase, record.subject.c_str());
    auto& total = totals[record.phase];
    total.first += took;
    ++total.second;
  }
  std::fprintf(out, "timings by phase (sum ms, count):\n");
  for (const auto& [phase, total] : totals)
    std::fprintf(out, "  %-28s %9.1f %5zu\n", phase.c_str(), total.first, total.second);
  std::fprintf(out, "  %-28s %9.1f\n", "end", milliseconds(Clock::now() - log.origin));
}

}  // namespace nsc
