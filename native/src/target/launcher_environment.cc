#include "target/launcher_environment.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "target/core_notes.h"
#include "target/live_process.h"
#include "util/strings.h"

namespace nsc {
namespace {

constexpr uint64_t kWord = 8;
constexpr uint64_t kPage = 4096;
constexpr uint64_t kMaxStackScan = 64ull << 20;  // auxv copy searched in the top 64 MiB
constexpr size_t kMaxArrayEntries = 1 << 17;     // argv[] + envp[] of a sane process
constexpr size_t kMaxValueBytes = 4096;          // launcher values are short
constexpr size_t kMaxEnvironBytes = 64u << 20;   // /proc/PID/environ read cap

size_t longest_name() {
  size_t longest = 0;
  for (const std::string& name : launcher_variable_names()) longest = std::max(longest, name.size());
  return longest;
}

// Bytes [addr, addr + len) one by one where a block read fails; returns how many were read.
size_t read_prefix(Target& target, uint64_t addr, char* out, size_t len, bool recorded, ReadError* error) {
  auto read = [&](uint64_t at, void* buf, size_t n, ReadError* e) {
    return recorded ? target.read(at, buf, n, e) : target.scan_read(at, buf, n, e);
  };
  if (read(addr, out, len, error)) return len;
  for (size_t i = 0; i < len; ++i)
    if (!read(addr + i, out + i, 1, error)) return i;
  return len;
}

// The initial stack as the kernel built it: where the auxv copy sits and the mapping.
struct InitialStack {
  const MemoryRegion* region = nullptr;
  uint64_t auxv_copy = 0;     // address of the copy (envp[]'s NULL is the word below)
  uint64_t strings_low = 0;   // the argv/env strings lie in [strings_low, region->end)
  uint64_t env_end = 0;       // AT_EXECFN: the env strings end right below it (0 if unknown)
};

std::vector<uint64_t> auxv_words(const std::vector<uint8_t>& auxv) {
  std::vector<uint64_t> words(auxv.size() / kWord);
  if (!words.empty()) std::memcpy(words.data(), auxv.data(), words.size() * kWord);
  for (size_t i = 0; i + 1 < words.size(); i += 2)
    if (words[i] == AT_NULL) return std::vector<uint64_t>(words.begin(), words.begin() + i + 2);
  return words;  // no AT_NULL: compare what there is
}

// Words of [low, high) read without recording; unreadable words are marked.
void read_words(Target& target, uint64_t low, uint64_t high, std::vector<uint64_t>* words,
                std::vector<bool>* readable) {
  size_t count = (high - low) / kWord;
  words->assign(count, 0);
  readable->assign(count, false);
  for (uint64_t page = low; page < high; page = (page / kPage + 1) * kPage) {
    uint64_t end = std::min(high, (page / kPage + 1) * kPage);
    size_t first = (page - low) / kWord, n = (end - page) / kWord;
    if (target.scan_read(page, &(*words)[first], n * kWord, nullptr)) {
      std::fill_n(readable->begin() + first, n, true);
      continue;
    }
    for (size_t i = first; i < first + n; ++i)
      (*readable)[i] = target.scan_read(low + i * kWord, &(*words)[i], kWord, nullptr);
  }
}

// Searches the mapping from the top down, a window at a time (the copy sits below the
// strings, near the top), for the auxv words; unreadable words never match. The word
// below the copy (envp[]'s NULL) must lie in the mapping.
std::optional<uint64_t> find_auxv_copy(Target& target, const MemoryRegion& region,
                                       const std::vector<uint64_t>& auxv) {
  constexpr uint64_t kWindow = 1u << 20;
  uint64_t floor = region.size() > kMaxStackScan ? region.end - kMaxStackScan : region.start;
  floor = (floor + kWord - 1) & ~(kWord - 1);
  uint64_t top = floor + (region.end - floor) / kWord * kWord;
  uint64_t pattern = auxv.size() * kWord;
  if (auxv.empty() || top - floor < pattern + kWord) return std::nullopt;
  std::vector<uint64_t> words;
  std::vector<bool> readable;
  // Candidate starts in [low, high); each window also reads the pattern's length above.
  for (uint64_t high = top - pattern + kWord; high > floor + kWord;) {
    uint64_t low = high - floor - kWord > kWindow ? high - kWindow : floor + kWord;
    read_words(target, low, high - kWord + pattern, &words, &readable);
    for (size_t i = (high - low) / kWord; i-- > 0;) {
      bool match = true;
      for (size_t k = 0; k < auxv.size() && match; ++k) match = readable[i + k] && words[i + k] == auxv[k];
      if (match) return low + i * kWord;
    }
    high = low;
  }
  return std::nullopt;
}

// The stack mapping holding `address`, joined with the contiguous writable regions below
// it: a sliced core splits one mapping into kept and unsaved pieces.
std::optional<MemoryRegion> joined_region(const std::vector<MemoryRegion>& regions, uint64_t address) {
  const MemoryRegion* found = find_region(regions, address);
  if (found == nullptr) return std::nullopt;
  MemoryRegion joined = *found;
  for (bool grew = true; grew;) {
    grew = false;
    for (const MemoryRegion& region : regions)
      if (region.end == joined.start && region.writable == joined.writable && region.path == joined.path) {
        joined.start = region.start;
        grew = true;
      }
  }
  return joined;
}

std::optional<MemoryRegion> stack_region(Target& target, uint64_t env_end, uint64_t main_thread_sp) {
  if (env_end)
    if (auto region = joined_region(target.regions(), env_end)) return region;
  if (main_thread_sp) return joined_region(target.regions(), main_thread_sp);
  return std::nullopt;
}

// envp[] as found below the auxv copy: the kernel's pointers, or the program's rewrites.
struct EnvpArray {
  std::vector<uint64_t> slots;  // in envp[] order
  size_t cleared = 0;           // NULL slots skipped between the array and its NULL (unsetenv)
  uint64_t argv0 = 0;           // argv[0]: where the argument strings start
  std::string why;              // set when the arrays do not look as the kernel left them
};

// Walks down from the auxv copy: envp[]'s NULL, envp[], argv[]'s NULL, argv[], argc.
// argc must equal the number of argv[] pointers into the strings: the check that
// this really is the kernel's layout. skip_cleared: NULL slots that unsetenv() left
// at the top of envp[] are passed over.
EnvpArray walk_envp(Target& target, const InitialStack& stack, bool skip_cleared) {
  EnvpArray array;
  uint64_t at = stack.auxv_copy - kWord, word = 0;
  auto read_word = [&](uint64_t addr) {
    ReadError error;
    if (addr < stack.region->start) {
      array.why = "initial stack: arrays run below the mapping start " + hex(stack.region->start);
      return false;
    }
    if (target.read(addr, &word, kWord, &error)) return true;
    array.why = "initial stack: " + error.message();
    return false;
  };
  if (!read_word(at)) return array;
  if (word != 0) {
    array.why = "initial stack: the word below the auxv copy at " + hex(at) + " is not envp[]'s NULL";
    return array;
  }
  at -= kWord;
  if (!read_word(at)) return array;
  while (skip_cleared && word == 0 && array.cleared < kMaxArrayEntries) {
    ++array.cleared;
    at -= kWord;
    if (!read_word(at)) return array;
  }
  while (word != 0 && array.slots.size() < kMaxArrayEntries) {
    array.slots.push_back(word);
    at -= kWord;
    if (!read_word(at)) return array;
  }
  std::reverse(array.slots.begin(), array.slots.end());
  uint64_t argv_count = 0;
  auto in_strings = [&](uint64_t p) { return p >= stack.strings_low && p < stack.region->end; };
  do {
    at -= kWord;
    if (!read_word(at)) return array;
    if (in_strings(word)) array.argv0 = word;  // walking down: the last one is argv[0]
  } while (in_strings(word) && ++argv_count < kMaxArrayEntries);
  if (word != argv_count)
    array.why = "initial stack: argc check failed (word at " + hex(at) + " is " + std::to_string(word) +
                ", argv[] has " + std::to_string(argv_count) + " entries): argv[]/envp[] rewritten?";
  return array;
}

// Reads the NAME of "NAME=VALUE" at addr, "" when it cannot be an allowlisted name.
// Found without recording, then the name and its '=' (never a value byte) read again
// recorded, so a slice keeps every name and the reader says the same on it.
std::optional<std::string> read_name(Target& target, uint64_t addr, uint64_t limit, ReadError* error) {
  static const size_t longest = longest_name();
  char bytes[64];
  size_t want = std::min<uint64_t>(longest + 1, limit - addr);
  size_t got = read_prefix(target, addr, bytes, want, false, error);
  if (got == 0) return std::nullopt;
  const char* begin = bytes;
  const char* end = begin + got;
  const char* stop = std::find_if(begin, end, [](char c) { return c == '=' || c == '\0'; });
  size_t name_bytes = stop == end ? got : stop - begin + 1;
  if (!target.read(addr, bytes, name_bytes, error)) return std::nullopt;
  if (stop == end || *stop != '=') return std::string();
  return std::string(begin, stop);
}

// Reads a NUL-terminated value; reason set when truncated or unreadable. Found without
// recording, then exactly its bytes and NUL read again recorded: a slice keeps this value
// and not the neighbouring strings a block read would cover.
std::optional<std::string> read_value(Target& target, uint64_t addr, uint64_t limit, std::string* why) {
  std::string value;
  const uint64_t start = addr;
  char block[256];
  while (value.size() < kMaxValueBytes) {
    if (addr >= limit) { *why = "runs to the end of the stack mapping without a NUL"; return std::nullopt; }
    size_t want = std::min<uint64_t>({sizeof block, limit - addr, kMaxValueBytes - value.size()});
    ReadError error;
    size_t got = read_prefix(target, addr, block, want, false, &error);
    const char* nul = static_cast<const char*>(std::memchr(block, 0, got));
    if (nul) {
      value.append(block, nul - block);
      std::string recorded(value.size() + 1, '\0');
      if (!target.read(start, recorded.data(), recorded.size(), &error)) { *why = "unreadable: " + error.message(); return std::nullopt; }
      return value;
    }
    value.append(block, got);
    if (got < want) { *why = "truncated: " + error.message(); return std::nullopt; }
    addr += got;
  }
  *why = "truncated: no NUL within " + std::to_string(kMaxValueBytes) + " bytes";
  return std::nullopt;
}

// A slot the program rewrote (setenv/putenv replace envp[] entries in place) points off
// the stack; the launcher's string is still there, right below the next string `next`.
// Read backwards without recording; returns its start, which must lie above `floor`.
std::optional<uint64_t> original_string_before(Target& target, uint64_t next, uint64_t floor) {
  char byte = 1;
  if (next < floor + 2 || !target.scan_read(next - 1, &byte, 1, nullptr) || byte != 0) return std::nullopt;
  for (uint64_t at = next - 2; at > floor; --at) {
    if (!target.scan_read(at, &byte, 1, nullptr)) return std::nullopt;
    if (byte == 0) return at + 1 < next - 1 ? std::optional<uint64_t>(at + 1) : std::nullopt;
  }
  return std::nullopt;
}

// The start of each envp[] string as the kernel placed it; 0 where it cannot be told.
std::vector<uint64_t> original_string_starts(Target& target, const InitialStack& stack,
                                             const std::vector<uint64_t>& slots, LauncherEnvironment* out) {
  auto in_strings = [&](uint64_t p) { return p >= stack.strings_low && p < stack.region->end; };
  std::vector<uint64_t> starts(slots.size(), 0);
  size_t rewritten = 0, lost = 0;
  uint64_t next = stack.env_end;  // the env strings end right below AT_EXECFN's string
  for (size_t i = slots.size(); i-- > 0;) {
    if (in_strings(slots[i])) {
      next = starts[i] = slots[i];
      continue;
    }
    ++rewritten;
    uint64_t floor = stack.strings_low;
    for (size_t j = i; j-- > 0;)
      if (in_strings(slots[j])) { floor = slots[j]; break; }
    auto start = next ? original_string_before(target, next, floor) : std::nullopt;
    if (start) next = starts[i] = *start;
    else { ++lost; next = 0; }
  }
  if (rewritten)
    out->notes.push_back(std::to_string(rewritten) + " envp[] slot(s) point off the initial stack (rewritten by the "
                         "program): the launcher's strings were read instead, " + std::to_string(lost) + " not found");
  return starts;
}

void read_strings(Target& target, const InitialStack& stack, const std::vector<uint64_t>& starts,
                  LauncherEnvironment* out) {
  size_t unreadable = 0;
  std::string first_unreadable;
  for (uint64_t start : starts) {
    if (start == 0) continue;
    ReadError error;
    std::optional<std::string> name = read_name(target, start, stack.region->end, &error);
    if (!name) {
      if (unreadable++ == 0) first_unreadable = error.message();
      continue;
    }
    if (!is_launcher_variable(*name) || out->variables.count(*name)) continue;  // getenv: first wins
    std::string why;
    std::optional<std::string> value = read_value(target, start + name->size() + 1, stack.region->end, &why);
    if (value) out->variables[*name] = *value;
    else out->notes.push_back(*name + " at " + hex(start) + ": " + why);
  }
  if (unreadable)
    out->notes.push_back(std::to_string(unreadable) + " environment string(s) unreadable (first: " +
                         first_unreadable + ")");
}

// The end of the NUL-terminated string at addr (unrecorded reads), 0 when none within the mapping.
uint64_t string_end(Target& target, uint64_t addr, uint64_t limit) {
  char block[256];
  for (uint64_t at = addr; at < limit && at - addr < kMaxValueBytes + 256;) {
    size_t want = std::min<uint64_t>(sizeof block, limit - at);
    if (!target.scan_read(at, block, want, nullptr)) return 0;
    if (const char* nul = static_cast<const char*>(std::memchr(block, 0, want))) return at + (nul - block) + 1;
    at += want;
  }
  return 0;
}

// [lowest string start, end of the environment strings): AT_EXECFN's string follows them.
void locate_strings(Target& target, const InitialStack& stack, const std::vector<uint64_t>& starts,
                    LauncherEnvironment* out) {
  uint64_t low = 0, high = 0;
  for (uint64_t start : starts)
    if (start != 0) {
      low = low == 0 ? start : std::min(low, start);
      high = std::max(high, start);
    }
  if (low == 0) return;
  uint64_t end = stack.env_end != 0 && stack.env_end > high ? stack.env_end : string_end(target, high, stack.region->end);
  if (end == 0) return;
  out->strings_start = low;
  out->strings_end = end;
}

LauncherEnvironment unavailable(std::string why) {
  LauncherEnvironment out;
  out.unavailable = std::move(why);
  return out;
}

LauncherEnvironment read_proc_environ(int pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/environ";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return unavailable(path + ": " + std::strerror(errno));
  std::string block;
  char buffer[65536];
  ssize_t got;
  while (block.size() < kMaxEnvironBytes && (got = ::read(fd, buffer, sizeof buffer)) != 0) {
    if (got < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      ::close(fd);
      return unavailable(path + ": " + std::strerror(saved));
    }
    block.append(buffer, got);
  }
  ::close(fd);
  if (block.empty()) return unavailable(path + ": empty (a zombie or kernel thread?)");
  LauncherEnvironment out = parse_environ_block(block);
  out.source = path;
  return out;
}

uint64_t main_thread_stack_pointer(Target& target) {
  std::vector<ThreadInfo> threads = target.threads();
  for (const ThreadInfo& thread : threads)
    if (thread.tid == target.pid()) return stack_pointer_of(thread).value_or(0);
  return threads.empty() ? 0 : stack_pointer_of(threads.front()).value_or(0);
}

}  // namespace

const std::vector<std::string>& launcher_variable_names() {
  static const std::vector<std::string> names = {
      "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
      "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID", "SLURM_LOCALID",
      "SLURM_NTASKS", "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_NODEID", "OMPI_COMM_WORLD_RANK",
      "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "PMI_SIZE", "PMIX_RANK",
      "CUDA_VISIBLE_DEVICES", "NCCL_HOSTID"};
  return names;
}

size_t visible_argument_prefix(std::string_view argument, size_t index) {
  if (index == 0) return argument.size();
  if (argument.size() < 2 || argument[0] != '-') return 0;
  if (argument[1] != '-') return 2;  // "-pSECRET": a short option's value may be glued on
  size_t equals = argument.find('=');
  return equals == std::string_view::npos ? argument.size() : equals + 1;
}

bool is_launcher_variable(std::string_view name) {
  const auto& names = launcher_variable_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

LauncherEnvironment parse_environ_block(const std::string& block) {
  LauncherEnvironment out;
  size_t at = 0;
  while (at < block.size()) {
    size_t end = block.find('\0', at);
    if (end == std::string::npos) end = block.size();
    std::string_view entry(block.data() + at, end - at);
    size_t equals = entry.find('=');
    if (equals != std::string_view::npos && is_launcher_variable(entry.substr(0, equals)))
      out.variables.emplace(std::string(entry.substr(0, equals)), std::string(entry.substr(equals + 1)));
    at = end + 1;
  }
  return out;
}

LauncherEnvironment read_initial_stack_environment(Target& target, const std::vector<uint8_t>& auxv,
                                                   uint64_t main_thread_sp) {
  std::vector<uint64_t> words = auxv_words(auxv);
  if (words.size() < 2) return unavailable("no auxiliary vector (NT_AUXV): the initial stack cannot be found");
  InitialStack stack;
  for (size_t i = 0; i + 1 < words.size(); i += 2)
    if (words[i] == AT_EXECFN) stack.env_end = words[i + 1];
  std::optional<MemoryRegion> region = stack_region(target, stack.env_end, main_thread_sp);
  stack.region = region ? &*region : nullptr;
  if (!stack.region)
    return unavailable("initial stack not found: AT_EXECFN " + hex(stack.env_end) + " and the main thread's SP " +
                       hex(main_thread_sp) + " lie in no mapping");
  std::string mapping = "stack mapping " + hex(stack.region->start) + "-" + hex(stack.region->end);
  if (!stack.region->saved) return unavailable(mapping + " not saved in core");
  if (stack.env_end && (stack.env_end < stack.region->start || stack.env_end >= stack.region->end))
    stack.env_end = 0;  // AT_EXECFN elsewhere: the strings' end is unknown
  std::optional<uint64_t> copy = find_auxv_copy(target, *stack.region, words);
  if (!copy) return unavailable("auxv copy not found in the " + mapping + " (initial stack not saved?)");
  stack.auxv_copy = *copy;
  stack.strings_low = *copy + words.size() * kWord;
  std::vector<uint8_t> recorded(words.size() * kWord);
  target.read(stack.auxv_copy, recorded.data(), recorded.size(), nullptr);  // so a slice keeps it

  EnvpArray array = walk_envp(target, stack, false);
  if (!array.why.empty()) {
    EnvpArray retry = walk_envp(target, stack, true);
    if (!retry.why.empty() || retry.cleared == 0) return unavailable(array.why);
    array = retry;
  }
  LauncherEnvironment out;
  out.source = "initial stack";
  if (array.cleared)
    out.notes.push_back(std::to_string(array.cleared) + " envp[] slot(s) cleared by the program (unsetenv): "
                        "the strings they pointed to are not known");
  std::vector<uint64_t> starts = original_string_starts(target, stack, array.slots, &out);
  read_strings(target, stack, starts, &out);
  locate_strings(target, stack, starts, &out);
  uint64_t arguments_end = out.strings_start ? out.strings_start : stack.env_end;
  if (array.argv0 >= stack.strings_low && array.argv0 < arguments_end) {
    out.arguments_start = array.argv0;
    out.arguments_end = arguments_end;
  }
  return out;
}

LauncherEnvironment read_launcher_environment(Target& target) {
  if (auto* live = dynamic_cast<LiveProcess*>(&target)) return read_proc_environ(live->pid());
  if (!target.is_core() && target.auxv().empty())
    return unavailable(target.describe() + ": the environment is read from /proc (live) or the initial stack (core)");
  return read_initial_stack_environment(target, target.auxv(), main_thread_stack_pointer(target));
}

}  // namespace nsc
