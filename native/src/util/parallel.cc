#include "util/parallel.h"

#include <thread>

namespace nsc {

WorkerPool& WorkerPool::shared() {
  // Never destroyed: its threads wait for work until the process exits.
  static WorkerPool* pool = new WorkerPool(std::max(1u, std::thread::hardware_concurrency()) - 1);
  return *pool;
}

WorkerPool::WorkerPool(size_t threads) : size_(threads) {
  for (size_t t = 0; t < threads; ++t) std::thread([this] { serve(); }).detach();
}

void WorkerPool::post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
  }
  posted_.notify_one();
}

void WorkerPool::serve() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      posted_.wait(lock, [this] { return taken_ < queue_.size(); });
      task = std::move(queue_[taken_++]);
      if (taken_ == queue_.size()) queue_.clear(), taken_ = 0;
    }
    task();
  }
}

}  // namespace nsc
