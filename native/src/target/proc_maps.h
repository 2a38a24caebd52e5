// Parsing of /proc/PID/maps and small /proc readers for the live target.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "target/target.h"

namespace nsc {

// One line of /proc/PID/maps: "start-end perms offset dev inode path".
std::optional<MemoryRegion> parse_maps_line(const std::string& line);

// Regions of /proc/PID/maps (sorted as the kernel lists them). Returns false
// and sets errno when the file cannot be read.
bool read_proc_maps(int pid, std::vector<MemoryRegion>* regions);

// File-backed regions as mapped files (path starts with '/').
std::vector<MappedFile> mapped_files_of(const std::vector<MemoryRegion>& regions);

// Thread ids of /proc/PID/task, ascending.
std::vector<int> list_thread_ids(int pid);

// Whole small /proc file, or nullopt (errno set).
std::optional<std::string> read_proc_file(const std::string& path);

// A thread's name and state letter ('S', 'D', 't', ...) from one read of /proc/PID/task/TID/stat
// (its name is the comm file's); nullopt when unreadable.
struct ThreadStat {
  std::string name;
  char state = '?';
};
std::optional<ThreadStat> thread_stat(int pid, int tid);

// thread_stat's state letter, '?' when unreadable.
char thread_state(int pid, int tid);

// The kernel function a sleeping thread waits in (/proc/PID/task/TID/wchan), "" when unknown.
std::string thread_wait_channel(int pid, int tid);

}  // namespace nsc
