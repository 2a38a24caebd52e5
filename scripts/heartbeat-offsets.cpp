// Prints where PyTorch keeps its watchdog's liveness, as the wheel's own headers lay it out
// (scripts/device-heartbeat-probe.sh builds it with -fno-access-control against torch/include):
// "OFFSET name offset size" lines and "TYPE name mangled" lines (typeid names: "_ZTV" + it is
// the vtable symbol of that std::thread state in libtorch_cuda.so's .symtab).
#include <cstddef>
#include <cstdio>
#include <thread>
#include <typeinfo>

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

using PG = c10d::ProcessGroupNCCL;
template <class Object>
using ThreadState = std::thread::_State_impl<std::thread::_Invoker<std::tuple<void (Object::*)(), Object*>>>;

#define OFFSET(T, member) std::printf("OFFSET %s.%s %zu %zu\n", #T, #member, offsetof(T, member), sizeof(((T*)nullptr)->member))
#define SIZE(T) std::printf("SIZE %s %zu\n", #T, sizeof(T))

template <class Object>
void thread_state(const char* name) {
  using State = ThreadState<Object>;
  using Tuple = std::tuple<void (Object::*)(), Object*>;
  Tuple tuple{};
  size_t object_in_tuple = reinterpret_cast<char*>(&std::get<1>(tuple)) - reinterpret_cast<char*>(&tuple);
  size_t method_in_tuple = reinterpret_cast<char*>(&std::get<0>(tuple)) - reinterpret_cast<char*>(&tuple);
  std::printf("TYPE %s %s\n", name, typeid(State).name());
  std::printf("OFFSET %s._M_func %zu %zu\n", name, offsetof(State, _M_func), sizeof(Tuple));
  std::printf("OFFSET %s.object %zu 8\n", name, offsetof(State, _M_func) + object_in_tuple);
  std::printf("OFFSET %s.method %zu 16\n", name, offsetof(State, _M_func) + method_in_tuple);
  std::printf("SIZE %s %zu\n", name, sizeof(State));
}

int main() {
  thread_state<PG::Watchdog>("WatchdogState");
  thread_state<PG::HeartbeatMonitor>("MonitorState");
  SIZE(PG::Watchdog);
  OFFSET(PG::Watchdog, ncclCommWatchdogThread_);
  OFFSET(PG::Watchdog, pg_);
  OFFSET(PG::Watchdog, rethrowCUDAErrors_);
  OFFSET(PG::Watchdog, watchDogException_);
  OFFSET(PG::Watchdog, heartbeat_);
  SIZE(PG::HeartbeatMonitor);
  OFFSET(PG::HeartbeatMonitor, pg_);
  OFFSET(PG::HeartbeatMonitor, heartbeatTimeoutInSec_);
  OFFSET(PG::HeartbeatMonitor, waitTimeoutDumpInMilSec_);
  OFFSET(PG::HeartbeatMonitor, coordCheckIntervalMilSec_);
  OFFSET(PG::HeartbeatMonitor, watchdogHeartbeatMonitorEnabled_);
  OFFSET(PG::HeartbeatMonitor, ncclHeartbeatMonitorThread_);
  OFFSET(PG::HeartbeatMonitor, terminateHeartbeatMonitorThread_);
  OFFSET(PG::HeartbeatMonitor, dumpOnTimeoutOrEx_);
  OFFSET(PG::HeartbeatMonitor, lastWorkListUpdateTime_);
  SIZE(PG);
  OFFSET(PG, heartbeatMonitor_);
  OFFSET(PG, watchdog_);
  OFFSET(PG, options_);
  OFFSET(PG, terminateProcessGroup_);
  OFFSET(PG, asyncErrorHandling_);
  OFFSET(PG, error_);
  OFFSET(PG, seqCollective_);
  OFFSET(PG, seqP2P_);
  OFFSET(PG, op_id_);
  OFFSET(PG, local_id_);
  OFFSET(PG, pgStatus_);
  OFFSET(PG, rank_);
  OFFSET(PG, size_);
  OFFSET(PG::Options, timeout);
  OFFSET(c10d::ProcessGroupStatus, lastEnqueuedSeq);
  OFFSET(c10d::ProcessGroupStatus, lastStartedSeq);
  OFFSET(c10d::ProcessGroupStatus, lastCompletedSeq);
  return 0;
}
