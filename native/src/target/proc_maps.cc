#include "target/proc_maps.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace nsc {

std::optional<MemoryRegion> parse_maps_line(const std::string& line) {
  unsigned long long start, end, offset, inode;
  char perms[8] = {0};
  int path_at = 0;
  if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %llu %n", &start, &end, perms, &offset,
                  &inode, &path_at) < 5)
    return std::nullopt;
  MemoryRegion region;
  region.start = start;
  region.end = end;
  region.readable = perms[0] == 'r';
  region.writable = perms[1] == 'w';
  region.executable = perms[2] == 'x';
  region.shared = perms[3] == 's';
  region.file_offset = offset;
  if (path_at > 0 && static_cast<size_t>(path_at) <= line.size()) region.path = line.substr(path_at);
  return region;
}

std::optional<std::string> read_proc_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buffer[65536];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) text.append(buffer, n);
  int saved_errno = errno;
  close(fd);
  if (n < 0) {
    errno = saved_errno;
    return std::nullopt;
  }
  return text;
}

bool read_proc_maps(int pid, std::vector<MemoryRegion>* regions) {
  auto text = read_proc_file("/proc/" + std::to_string(pid) + "/maps");
  if (!text) return false;
  regions->clear();
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line))
    if (auto region = parse_maps_line(line)) regions->push_back(*region);
  std::sort(regions->begin(), regions->end(),
            [](const MemoryRegion& a, const MemoryRegion& b) { return a.start < b.start; });
  return true;
}

std::vector<MappedFile> mapped_files_of(const std::vector<MemoryRegion>& regions) {
  std::vector<MappedFile> files;
  for (const MemoryRegion& region : regions)
    if (!region.path.empty() && region.path[0] == '/')
      files.push_back(MappedFile{region.start, region.end, region.file_offset, region.path});
  return files;
}

std::vector<int> list_thread_ids(int pid) {
  std::vector<int> tids;
  DIR* dir = opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
  if (!dir) return tids;
  while (dirent* entry = readdir(dir)) {
    int tid = std::atoi(entry->d_name);
    if (tid > 0) tids.push_back(tid);
  }
  closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

namespace {
std::string task_file(int pid, int tid, const char* name) {
  return "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/" + name;
}
}  // namespace

std::optional<ThreadStat> thread_stat(int pid, int tid) {
  std::optional<std::string> stat = read_proc_file(task_file(pid, tid, "stat"));
  if (!stat) return std::nullopt;
  size_t open = stat->find('(');
  size_t close = stat->rfind(')');  // "tid (comm) S ...": comm may hold ')' itself
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ThreadStat thread;
  thread.name = stat->substr(open + 1, close - open - 1);
  if (close + 2 < stat->size()) thread.state = (*stat)[close + 2];
  return thread;
}

char thread_state(int pid, int tid) {
  std::optional<ThreadStat> stat = thread_stat(pid, tid);
  return stat ? stat->state : '?';
}

std::string thread_wait_channel(int pid, int tid) {
  std::optional<std::string> wchan = read_proc_file(task_file(pid, tid, "wchan"));
  return wchan && *wchan != "0" ? *wchan : "";
}

}  // namespace nsc
