// Compiled -g (not linked into ncclscope) against a torch wheel's own headers, so that its
// DWARF describes the flight recorder as that wheel built it: scripts/torch-layout-from-tu.sh.
// sizeof() makes the compiler complete (and describe) each class template instance.
#include <c10/cuda/CUDAEvent.h>
#include <torch/csrc/distributed/c10d/FlightRecorder.hpp>
#include <torch/csrc/profiler/combined_traceback.h>
// The watchdog's liveness (torch/watchdog.h): needs NCCL's nccl.h on the include path.
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

using Recorder = c10d::FlightRecorder<c10::cuda::CUDAEvent>;
using StatusMap = decltype(Recorder::all_pg_status_);
using RanksMap = decltype(Recorder::pg_name_to_ranks_);

extern const unsigned long ncclscope_sizes[] = {
    sizeof(Recorder), sizeof(Recorder::Entry), sizeof(torch::CapturedTraceback),
    sizeof(torch::CapturedTraceback::PyFrame), sizeof(c10d::ProcessGroupStatus),
    sizeof(StatusMap::value_type), sizeof(RanksMap::value_type),
    sizeof(std::_Rb_tree_node<StatusMap::value_type>), sizeof(std::_Rb_tree_node<RanksMap::value_type>),
    sizeof(c10d::ProcessGroupNCCL), sizeof(c10d::ProcessGroupNCCL::Watchdog), sizeof(c10d::ProcessGroupNCCL::HeartbeatMonitor),
    sizeof(c10d::ProcessGroupNCCL::Options)};
Recorder* ncclscope_recorder;
Recorder::Entry* ncclscope_entry;
torch::CapturedTraceback* ncclscope_traceback;
torch::CapturedTraceback::PyFrame* ncclscope_frame;
c10d::ProcessGroupStatus* ncclscope_pg_status;
std::_Rb_tree_node<StatusMap::value_type>* ncclscope_status_node;
std::_Rb_tree_node<RanksMap::value_type>* ncclscope_ranks_node;
StatusMap::value_type* ncclscope_status_pair;
RanksMap::value_type* ncclscope_ranks_pair;
c10d::ProcessGroupNCCL* ncclscope_process_group;
c10d::ProcessGroupNCCL::Watchdog* ncclscope_watchdog;
c10d::ProcessGroupNCCL::HeartbeatMonitor* ncclscope_monitor;
c10d::ProcessGroupNCCL::Options* ncclscope_pg_options;
