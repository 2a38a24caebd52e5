// util/parallel.h: ranges cover [0, n) once each, a range's exception reaches the caller, nested
// calls and a pool thread busy elsewhere never make the caller wait, a task run beside is waited
// for when its result is dropped unread.
#define BOOST_TEST_MODULE parallel
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "util/parallel.h"

namespace {

// How often each index of [0, n) was visited, for `chunk` sized ranges (Boost.Test's checks are
// not for other threads: a range outside [0, n) is counted and checked here).
std::vector<int> visits(size_t n, size_t chunk) {
  std::vector<std::atomic<int>> counts(n);
  std::atomic<int> outside{0};
  nsc::for_each_range(n, chunk, [&](size_t begin, size_t end) {
    if (begin > end || end > n) ++outside;
    for (size_t i = begin; i < std::min(end, n); ++i) ++counts[i];
  });
  BOOST_CHECK_EQUAL(outside.load(), 0);
  return std::vector<int>(counts.begin(), counts.end());
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_index_once) {
  for (size_t n : {0, 1, 2, 63, 64, 65, 1000, 100003})
    for (size_t chunk : {0, 1, 7, 64, 4096}) {
      std::vector<int> counts = visits(n, chunk);
      BOOST_CHECK_EQUAL(std::count(counts.begin(), counts.end(), 1), static_cast<long>(n));
    }
}

BOOST_AUTO_TEST_CASE(an_exception_reaches_the_caller) {
  BOOST_CHECK_THROW(nsc::for_each_range(1000, 1,
                                        [&](size_t begin, size_t) {
                                          if (begin == 10) throw std::runtime_error("range 10");
                                        }),
                    std::runtime_error);
  // The pool still works after it.
  BOOST_CHECK_EQUAL(visits(500, 3).size(), 500u);
}

BOOST_AUTO_TEST_CASE(nested_calls_finish) {
  std::atomic<size_t> inner{0};
  nsc::for_each_range(64, 1, [&](size_t, size_t) {
    nsc::for_each_range(64, 1, [&](size_t begin, size_t end) { inner += end - begin; });
  });
  BOOST_CHECK_EQUAL(inner.load(), 64u * 64u);
}

// A pool thread held by a task beside the caller: the caller does every range itself and
// returns, never waiting for a thread that has not begun (else this test hangs).
BOOST_AUTO_TEST_CASE(a_busy_pool_thread_is_not_waited_for) {
  if (nsc::WorkerPool::shared().size() == 0) {  // one CPU: a task beside runs in the caller
    BOOST_TEST_MESSAGE("skipped: no pool thread on one CPU");
    return;
  }
  std::atomic<bool> ranges_done{false};
  auto held = nsc::run_beside([&] {
    while (!ranges_done) std::this_thread::yield();
    return 1;
  });
  std::vector<int> counts = visits(10000, 1);
  ranges_done = true;
  BOOST_CHECK_EQUAL(std::count(counts.begin(), counts.end(), 1), 10000);
  BOOST_CHECK_EQUAL(held.get(), 1);
}

BOOST_AUTO_TEST_CASE(run_beside_gives_the_value_and_the_exception) {
  BOOST_CHECK_EQUAL(nsc::run_beside([] { return 42; }).get(), 42);
  auto failing = nsc::run_beside([]() -> int { throw std::runtime_error("beside"); });
  BOOST_CHECK_THROW(failing.get(), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(a_dropped_result_waits_for_its_task) {
  std::atomic<bool> finished{false};
  {
    auto unread = nsc::run_beside([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      finished = true;
      return 0;
    });
  }
  BOOST_CHECK(finished.load());
}
