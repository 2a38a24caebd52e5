#include "target/slice_ranges.h"

#include <elf.h>
#include <link.h>

#include <algorithm>

#include "target/build_ids.h"
#include "util/strings.h"

namespace nsc {
namespace {

constexpr int kMaxLinkMapEntries = 4096;  // cycles in a corrupt list stop here
constexpr int kMaxDynamicEntries = 512;

const CoreSegment* segment_holding(const CoreFile& core, uint64_t addr) {
  for (const CoreSegment& segment : core.segments())
    if (addr >= segment.vaddr && addr < segment.end()) return &segment;
  return nullptr;
}

// Reads a dynamic section entry by entry (recorded) until DT_NULL; returns DT_DEBUG's value.
uint64_t read_dynamic_section(Target& target, uint64_t address) {
  uint64_t debug = 0;
  for (int i = 0; i < kMaxDynamicEntries; ++i) {
    Elf64_Dyn entry;
    if (!target.read_value(address + i * sizeof entry, &entry, nullptr) || entry.d_tag == DT_NULL) break;
    if (entry.d_tag == DT_DEBUG) debug = entry.d_un.d_ptr;
  }
  return debug;
}

// The executable's in-memory dynamic section, from AT_PHDR/AT_PHNUM.
uint64_t executable_dynamic_address(CoreFile& core, Target& target) {
  const auto& auxv = core.notes().auxv;
  auto phdr_at = auxv.find(AT_PHDR), phnum = auxv.find(AT_PHNUM);
  if (phdr_at == auxv.end() || phnum == auxv.end() || phnum->second > 256) return 0;
  std::vector<Elf64_Phdr> phdrs(phnum->second);
  if (!target.read(phdr_at->second, phdrs.data(), phdrs.size() * sizeof(Elf64_Phdr), nullptr)) return 0;
  uint64_t bias = 0, dynamic = 0;
  for (const Elf64_Phdr& phdr : phdrs) {
    if (phdr.p_type == PT_PHDR) bias = phdr_at->second - phdr.p_vaddr;
    if (phdr.p_type == PT_DYNAMIC) dynamic = phdr.p_vaddr;
  }
  return dynamic ? bias + dynamic : 0;
}

// Walks r_debug -> link_map list the way gdb's solib-svr4 does, reading (and so
// recording) each entry, its name and its dynamic section.
void walk_link_maps(Target& target, uint64_t r_debug_address) {
  r_debug debug;
  if (!target.read_value(r_debug_address, &debug, nullptr)) return;
  uint64_t extended[6];  // glibc 2.35+ r_debug_extended: r_next after r_debug
  target.read(r_debug_address, extended, sizeof extended, nullptr);
  uint64_t entry = reinterpret_cast<uint64_t>(debug.r_map);
  for (int i = 0; i < kMaxLinkMapEntries && entry; ++i) {
    link_map map;
    if (!target.read_value(entry, &map, nullptr)) return;
    read_c_string(target, reinterpret_cast<uint64_t>(map.l_name), 4096, nullptr);
    if (map.l_ld) read_dynamic_section(target, reinterpret_cast<uint64_t>(map.l_ld));
    entry = reinterpret_cast<uint64_t>(map.l_next);
  }
}

}  // namespace

// The mapping holding `segment`: adjacent segments with the same flags joined (a sliced core
// splits one mapping into kept and unsaved pieces).
uint64_t mapping_size(const CoreFile& core, const CoreSegment& segment) {
  const std::vector<CoreSegment>& all = core.segments();
  size_t at = static_cast<size_t>(&segment - all.data()), first = at, last = at;
  while (first > 0 && all[first - 1].end() == all[first].vaddr && all[first - 1].flags == segment.flags) --first;
  while (last + 1 < all.size() && all[last].end() == all[last + 1].vaddr && all[last + 1].flags == segment.flags)
    ++last;
  return all[last].end() - all[first].vaddr;
}

// AT_RANDOM's 16 bytes lie near the top of the initial stack (the kernel puts them there).
std::vector<AddressRange> initial_stack_top(CoreFile& core, const SliceKeepOptions& options) {
  auto random = core.notes().auxv.find(AT_RANDOM);
  const CoreSegment* segment = random != core.notes().auxv.end() ? segment_holding(core, random->second) : nullptr;
  if (!segment) return {};
  uint64_t size = std::min<uint64_t>(segment->end() - segment->vaddr, options.stack_cap);
  return {{segment->end() - size, segment->end()}};
}

std::vector<AddressRange> thread_stack_ranges(CoreFile& core, const SliceKeepOptions& options) {
  std::vector<AddressRange> ranges = initial_stack_top(core, options);
  for (const ThreadInfo& thread : core.threads()) {
    auto sp = stack_pointer_of(thread);
    const CoreSegment* segment = sp ? segment_holding(core, *sp) : nullptr;
    if (!segment) continue;
    uint64_t low = *sp > segment->vaddr + options.stack_below_sp ? *sp - options.stack_below_sp
                                                                 : segment->vaddr;
    bool signal_stack = mapping_size(core, *segment) > options.stack_segment_max;
    uint64_t cap = signal_stack ? options.signal_stack_cap : options.stack_cap;
    ranges.push_back({low, std::min(segment->end(), *sp + cap)});
    if (auto tcb = thread_pointer_of(thread); tcb && *tcb > options.tcb_bytes)
      ranges.push_back({*tcb - options.tcb_bytes, *tcb + options.tcb_bytes});  // TLS below, TCB above
  }
  return ranges;
}

std::vector<AddressRange> vdso_ranges(CoreFile& core) {
  auto vdso = core.notes().auxv.find(AT_SYSINFO_EHDR);
  const CoreSegment* segment = vdso != core.notes().auxv.end() ? segment_holding(core, vdso->second) : nullptr;
  if (!segment || segment->memsz > (1u << 20)) return {};
  return {{segment->vaddr, segment->end()}};
}

std::vector<AddressRange> elf_header_ranges(CoreFile& core, const SliceKeepOptions& options) {
  RecordingTarget recording(core);
  std::vector<AddressRange> ranges;
  for (const MappedObjectBuildId& object : mapped_object_build_ids(recording)) {
    const CoreSegment* segment = segment_holding(core, object.mapping_start);
    uint64_t end = object.mapping_start + options.elf_header_bytes;
    if (segment) ranges.push_back({object.mapping_start, std::min(end, segment->end())});
  }
  for (const AddressRange& range : recording.recorded_ranges()) ranges.push_back(range);
  return ranges;
}

std::vector<AddressRange> dynamic_linker_ranges(CoreFile& core) {
  RecordingTarget recording(core);
  uint64_t dynamic = executable_dynamic_address(core, recording);
  uint64_t r_debug_address = dynamic ? read_dynamic_section(recording, dynamic) : 0;
  if (r_debug_address) walk_link_maps(recording, r_debug_address);
  return recording.recorded_ranges();
}

// A writable file-backed segment, and the anonymous one right after it (its .bss).
std::vector<AddressRange> small_data_segment_ranges(CoreFile& core, const SliceKeepOptions& options) {
  std::vector<AddressRange> ranges;
  const MemoryRegion* previous = nullptr;
  for (const MemoryRegion& region : core.regions()) {
    bool file_data = region.writable && !region.path.empty() && !region.shared;
    bool bss = region.writable && region.path.empty() && previous && previous->end == region.start &&
               previous->writable && !previous->path.empty() && !previous->shared;
    if (region.saved && (file_data || bss) && region.size() <= options.small_data_segment)
      ranges.push_back({region.start, region.end});
    previous = &region;
  }
  return ranges;
}

std::vector<AddressRange> default_keep_ranges(CoreFile& core, const SliceKeepOptions& options) {
  std::vector<AddressRange> all = thread_stack_ranges(core, options);
  for (auto part : {elf_header_ranges(core, options), dynamic_linker_ranges(core), vdso_ranges(core),
                    small_data_segment_ranges(core, options)})
    all.insert(all.end(), part.begin(), part.end());
  return merge_ranges(std::move(all));
}

bool parse_address_range(const std::string& text, AddressRange* range) {
  size_t dash = text.find('-');
  if (dash == std::string::npos) return false;
  AddressRange parsed;
  if (!parse_u64(text.substr(0, dash), &parsed.start) || !parse_u64(text.substr(dash + 1), &parsed.end) ||
      parsed.end <= parsed.start)
    return false;
  *range = parsed;
  return true;
}

}  // namespace nsc
