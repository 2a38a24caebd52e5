// Splits an index range over the CPUs: triage's per-rank report sections (graph nodes,
// communicators, inputs) are independent per element, and 100,000 ranks' worth took seconds on
// one thread while the other CPU idled (docs/triage.md "Scale").
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/thread_heap.h"

namespace nsc {

// One thread per CPU but the caller's, made on first use and kept for the process's life: the
// parallel work of every phase runs on the same threads. A thread's heap (glibc's arena) keeps
// what the thread freed, so a later phase reuses it; a thread made per call took whichever heap
// was free, or a new one of fresh memory (slow to first-touch on a VM: docs/triage.md "Scale").
class WorkerPool {
 public:
  static WorkerPool& shared();
  size_t size() const { return size_; }
  void post(std::function<void()> task);  // runs on one of the threads, in the order posted

 private:
  explicit WorkerPool(size_t threads);
  void serve();

  size_t size_;
  std::mutex mutex_;
  std::condition_variable posted_;
  std::vector<std::function<void()>> queue_;  // posted, not yet taken (taken from the front)
  size_t taken_ = 0;
};

// Calls run(begin, end) on ranges of `chunk` items covering [0, n), handed out in turn to the
// calling thread and the pool's, so that uneven items (a world communicator beside thousands of
// small ones) still share the CPUs. `run` must only read shared state. A pool thread busy
// elsewhere joins late or not at all: the caller never waits for one that has not begun. The
// first exception a range throws is rethrown here, after every range begun has finished.
template <typename Run>
void for_each_range(size_t n, size_t chunk, const Run& run) {
  chunk = std::max<size_t>(chunk, 1);
  size_t chunks = (n + chunk - 1) / chunk;
  size_t helpers = std::min(WorkerPool::shared().size(), chunks > 0 ? chunks - 1 : 0);
  if (helpers == 0) return run(size_t{0}, n);
  struct Shared {
    std::atomic<size_t> next{0};
    std::mutex mutex;
    std::condition_variable finished;
    size_t running = 0;   // pool threads inside work()
    bool closed = false;  // the caller is done: a pool thread that begins now does nothing
    std::exception_ptr error;
  };
  auto shared = std::make_shared<Shared>();
  auto work = [&run, chunks, chunk, n](Shared& state) {
    try {
      for (size_t c; (c = state.next.fetch_add(1)) < chunks;) {
        advise_huge_pages_for_thread_heap();  // what the other threads build stays till the report is out
        run(c * chunk, std::min(n, (c + 1) * chunk));
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(state.mutex);
      if (!state.error) state.error = std::current_exception();
      state.next = chunks;  // the others stop at their next range
    }
  };
  for (size_t h = 0; h < helpers; ++h)
    WorkerPool::shared().post([shared, work] {
      {
        std::lock_guard<std::mutex> lock(shared->mutex);
        if (shared->closed) return;
        ++shared->running;
      }
      work(*shared);
      std::lock_guard<std::mutex> lock(shared->mutex);
      if (--shared->running == 0) shared->finished.notify_all();
    });
  work(*shared);
  std::unique_lock<std::mutex> lock(shared->mutex);
  shared->closed = true;
  shared->finished.wait(lock, [&] { return shared->running == 0; });
  if (shared->error) std::rethrow_exception(shared->error);
}

// A result of run_beside: dropped unread (an exception on the caller's way), it waits for its
// task, which may still read what the caller's scope holds (as std::async's future does).
template <typename T>
class BesideResult {
 public:
  explicit BesideResult(std::future<T> future) : future_(std::move(future)) {}
  BesideResult(BesideResult&&) noexcept = default;
  BesideResult& operator=(BesideResult&&) = delete;
  ~BesideResult() {
    if (future_.valid()) future_.wait();
  }
  T get() { return future_.get(); }

 private:
  std::future<T> future_;
};

// make() run on a pool thread, beside the caller's work; made here when the pool has none.
template <typename Make>
auto run_beside(Make make) -> BesideResult<decltype(make())> {
  using Result = decltype(make());
  auto task = std::make_shared<std::packaged_task<Result()>>(std::move(make));
  BesideResult<Result> result(task->get_future());
  if (WorkerPool::shared().size() == 0) (*task)();
  else WorkerPool::shared().post([task] { (*task)(); });
  return result;
}

// A JSON array of make(i) for i in [0, n), the elements built over the CPUs, in order.
template <typename Make>
nlohmann::json parallel_json_array(size_t n, const Make& make, size_t chunk = 1024) {
  std::vector<nlohmann::json> elements(n);
  for_each_range(n, chunk, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) elements[i] = make(i);
  });
  nlohmann::json out = nlohmann::json::array();
  out.get_ref<nlohmann::json::array_t&>() = std::move(elements);
  return out;
}

}  // namespace nsc
