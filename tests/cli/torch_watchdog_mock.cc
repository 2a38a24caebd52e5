// A stand-in for libtorch_cuda.so's watchdog (tests/cli/torch_watchdog_live_test.sh): classes
// nested as PyTorch 2.11 nests them (c10d::ProcessGroupNCCL::Watchdog / HeartbeatMonitor),
// started as PyTorch starts them (std::thread(&Watchdog::run, this), named pt_nccl_watchdg /
// pt_nccl_heartbt), built as a shared library named libtorch_cuda.so. The group has timed out:
// error_ TIMEOUT, terminating, the watchdog stored the exception it rethrows, shouldDump_ set.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <thread>

namespace c10d {
enum class ErrorType { SUCCESS = 0, TIMEOUT = 1, COMM_ERROR = 2, REMOTE_ERROR = 3 };
struct Backend {
  virtual ~Backend() = default;
  int rank_ = 1, size_ = 2;
};
class ProcessGroupNCCL : public Backend {
 public:
  struct Options {
    bool is_high_priority_stream = false;
    std::chrono::milliseconds timeout{80000};
  };
  class HeartbeatMonitor {
   public:
    explicit HeartbeatMonitor(ProcessGroupNCCL* pg) : pg_(pg) {}
    virtual ~HeartbeatMonitor() = default;
    void start() { ncclHeartbeatMonitorThread_ = std::thread(&HeartbeatMonitor::runLoop, this); }
    virtual void runLoop();
    ProcessGroupNCCL* pg_;
    bool logCppStackOnUncleanShutdown_ = false;
    int heartbeatTimeoutInSec_ = 20, waitTimeoutDumpInMilSec_ = 2000, coordCheckIntervalMilSec_ = 1000;
    bool watchdogHeartbeatMonitorEnabled_ = true;
    std::thread ncclHeartbeatMonitorThread_;
    std::atomic<bool> terminateHeartbeatMonitorThread_{false};
    std::chrono::time_point<std::chrono::steady_clock> lastWorkListUpdateTime_;
  };
  class Watchdog {
   public:
    explicit Watchdog(ProcessGroupNCCL* pg) : pg_(pg) {}
    virtual ~Watchdog() = default;
    void start() { ncclCommWatchdogThread_ = std::thread(&Watchdog::run, this); }
    void run();
    std::thread ncclCommWatchdogThread_;
    ProcessGroupNCCL* pg_;
    bool rethrowCUDAErrors_ = true;
    std::exception_ptr watchDogException_ = nullptr;
    std::atomic_uint64_t heartbeat_{1};
  };
  std::unique_ptr<HeartbeatMonitor> heartbeatMonitor_;
  std::unique_ptr<Watchdog> watchdog_;
  Options* options_ = new Options;
  std::atomic<bool> terminateProcessGroup_{false};
  ErrorType error_ = ErrorType::SUCCESS;
  size_t local_id_ = 0;
  static std::atomic<bool> shouldDump_;
  std::atomic<int> threads_up{0};
  long watchdog_tid = 0, monitor_tid = 0;
};
std::atomic<bool> ProcessGroupNCCL::shouldDump_{false};

void ProcessGroupNCCL::HeartbeatMonitor::runLoop() {
  pthread_setname_np(pthread_self(), "pt_nccl_heartbt");
  pg_->monitor_tid = syscall(SYS_gettid);
  pg_->threads_up++;
  while (!terminateHeartbeatMonitorThread_) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

void ProcessGroupNCCL::Watchdog::run() {
  pthread_setname_np(pthread_self(), "pt_nccl_watchdg");
  pg_->watchdog_tid = syscall(SYS_gettid);
  pg_->heartbeatMonitor_->start();
  pg_->heartbeatMonitor_->lastWorkListUpdateTime_ = std::chrono::steady_clock::now();
  watchDogException_ = std::make_exception_ptr(std::runtime_error("Watchdog caught collective operation timeout"));
  pg_->error_ = ErrorType::TIMEOUT;
  pg_->terminateProcessGroup_ = true;
  shouldDump_ = true;
  pg_->threads_up++;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    heartbeat_++;
  }
}
}  // namespace c10d

// Starts the group's threads and prints what a reader must find, as JSON.
extern "C" void start_watchdog_mock() {
  auto* pg = new c10d::ProcessGroupNCCL;
  pg->heartbeatMonitor_.reset(new c10d::ProcessGroupNCCL::HeartbeatMonitor(pg));
  pg->watchdog_.reset(new c10d::ProcessGroupNCCL::Watchdog(pg));
  pg->watchdog_->start();
  while (pg->threads_up < 2) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::printf("{\"watchdog\": \"%p\", \"monitor\": \"%p\", \"process_group\": \"%p\", \"watchdog_tid\": %ld, "
              "\"monitor_tid\": %ld}\n",
              static_cast<void*>(pg->watchdog_.get()), static_cast<void*>(pg->heartbeatMonitor_.get()),
              static_cast<void*>(pg), pg->watchdog_tid, pg->monitor_tid);
  std::fflush(stdout);
}
