// Splits an index range over the CPUs: triage's per-rank report sections (graph nodes,
// communicators, inputs) are independent per element, and 100,000 ranks' worth took seconds on
// one thread while the other CPU idled (docs/triage.md "Scale").
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/thread_heap.h"

namespace nsc {

// Calls run(begin, end) on ranges of `chunk` items covering [0, n), handed out in turn to one
// thread per CPU (the calling thread one of them), so that uneven items (a world communicator
// beside thousands of small ones) still share the CPUs. `run` must only read shared state. The
// first exception a range throws is rethrown here, after every thread has finished.
template <typename Run>
void for_each_range(size_t n, size_t chunk, const Run& run) {
  chunk = std::max<size_t>(chunk, 1);
  size_t chunks = (n + chunk - 1) / chunk;
  size_t threads = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), chunks);
  if (threads <= 1) return run(size_t{0}, n);
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errors(threads);
  auto work = [&](size_t t) {
    try {
      for (size_t c; (c = next.fetch_add(1)) < chunks;) {
        advise_huge_pages_for_thread_heap();  // what the other threads build stays till the report is out
        run(c * chunk, std::min(n, (c + 1) * chunk));
      }
    } catch (...) {
      errors[t] = std::current_exception();
      next = chunks;  // the others stop at their next range
    }
  };
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(work, t);
  work(0);
  for (std::thread& worker : workers) worker.join();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
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
