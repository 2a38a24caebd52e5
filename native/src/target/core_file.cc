#include "target/core_file.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/errors.h"
#include "util/input_file.h"
#include "util/strings.h"

namespace nsc {
namespace {

const char* elf_type_name(unsigned type) {
  switch (type) {
    case ET_NONE: return "NONE";
    case ET_REL: return "REL (object file)";
    case ET_EXEC: return "EXEC (executable)";
    case ET_DYN: return "DYN (shared object or PIE executable)";
    default: return "unknown";
  }
}

// MAP_SHARED anonymous and SysV shm memory show up under these names in NT_FILE.
bool is_shared_memory_path(const std::string& path) {
  return path.rfind("/dev/zero", 0) == 0 || path.rfind("/SYSV", 0) == 0;
}

const MappedFile* file_containing(const std::vector<MappedFile>& sorted, uint64_t addr) {
  auto after = std::upper_bound(sorted.begin(), sorted.end(), addr,
                                [](uint64_t a, const MappedFile& f) { return a < f.start; });
  if (after == sorted.begin()) return nullptr;
  return addr < (after - 1)->end ? &*(after - 1) : nullptr;
}

}  // namespace

CoreFile::CoreFile(const std::string& path, const std::string& executable_hint) : path_(path) {
  try {
    open_elf();
    check_header();
    load_program_headers();
    build_regions();
    attach_file_paths();
    choose_executable(executable_hint);
  } catch (...) {
    // A throwing constructor runs no destructor: release the Elf, its mapping and the fd here.
    if (elf_) elf_end(elf_);
    if (fd_ >= 0) close(fd_);
    throw;
  }
}

CoreFile::~CoreFile() {
  if (elf_) elf_end(elf_);
  if (fd_ >= 0) close(fd_);
}

void CoreFile::fail(const std::string& why) const {
  throw BadInput("core_open " + path_ + ": " + why);
}

void CoreFile::open_elf() {
  InputFile file = open_regular_file(path_, "core_open " + path_);
  if (file.size() == 0) fail("empty file");
  fd_ = file.release();
  elf_version(EV_CURRENT);
  // READ_MMAP: libelf maps the file read-only; elf_rawfile then gives us the bytes.
  elf_ = elf_begin(fd_, ELF_C_READ_MMAP, nullptr);
  if (!elf_ || elf_kind(elf_) != ELF_K_ELF) fail("not an ELF file");
  size_t size = 0;
  file_bytes_ = reinterpret_cast<const uint8_t*>(elf_rawfile(elf_, &size));
  if (!file_bytes_) fail(std::string("cannot map: ") + elf_errmsg(-1));
  file_size_ = size;
}

void CoreFile::check_header() {
  if (gelf_getclass(elf_) != ELFCLASS64) fail("not a 64-bit ELF file");
  GElf_Ehdr header;
  if (!gelf_getehdr(elf_, &header)) fail("ELF header unreadable (truncated?)");
  if (header.e_type != ET_CORE)
    fail(std::string("not a core file (ELF type ") + elf_type_name(header.e_type) + ")");
  if (header.e_machine != EM_X86_64)
    fail("unsupported architecture: ELF machine " + std::to_string(header.e_machine) +
         " (only x86-64 cores are supported)");
}

void CoreFile::load_program_headers() {
  size_t count = 0;
  GElf_Ehdr header;
  // libelf reports 0 headers when the table lies past the end: check e_phnum ourselves.
  if (elf_getphdrnum(elf_, &count) != 0 || !gelf_getehdr(elf_, &header) ||
      (header.e_phnum != PN_XNUM && count < header.e_phnum) ||
      header.e_phoff + count * sizeof(Elf64_Phdr) > file_size_)
    fail("program headers unreadable (truncated?)");
  for (size_t i = 0; i < count; ++i) {
    GElf_Phdr phdr;
    if (!gelf_getphdr(elf_, static_cast<int>(i), &phdr))
      fail("program header " + std::to_string(i) + " unreadable (truncated?)");
    if (phdr.p_type == PT_LOAD)
      add_segment(phdr.p_vaddr, phdr.p_memsz, phdr.p_filesz, phdr.p_offset, phdr.p_flags,
                  phdr.p_align);
    else if (phdr.p_type == PT_NOTE)
      add_note_segment(phdr.p_offset, phdr.p_filesz);
  }
  if (segments_.empty()) fail("no memory segments (PT_LOAD) in the core");
  std::sort(segments_.begin(), segments_.end(),
            [](const CoreSegment& a, const CoreSegment& b) { return a.vaddr < b.vaddr; });
  if (notes_.threads.empty()) warnings_.push_back("core_open " + path_ + ": no thread notes");
  if (notes_.pid == 0 && !notes_.threads.empty()) notes_.pid = notes_.threads[0].tid;
  for (ThreadInfo& thread : notes_.threads)  // a core names only the process (pr_fname)
    if (thread.tid == notes_.pid) thread.name = notes_.command_name;
  for (const std::string& problem : notes_.problems)
    warnings_.push_back("core_open " + path_ + ": " + problem);
  for (const std::string& line : notes_.slice_provenance)  // what `ncclscope slice` could not carry
    warnings_.push_back("core_open " + path_ + ": slice note: " + valid_utf8(line));
}

std::optional<SignalInfo> CoreFile::fatal_signal() const {
  if (!notes_.signal) return std::nullopt;
  SignalInfo signal = *notes_.signal;
  if (!notes_.threads.empty()) signal.tid = notes_.threads.front().tid;
  return signal;
}

std::string CoreFile::fatal_signal_unavailable() const {
  if (notes_.signal) return "";
  bool truncated_notes = std::find(notes_.problems.begin(), notes_.problems.end(), "note segment truncated") !=
                         notes_.problems.end();
  if (!notes_.notes_seen) return "the core holds no notes" + std::string(truncated_notes ? " (cut before them)" : "");
  if (truncated_notes) return "no NT_SIGINFO note in what the core holds of its notes (cut inside them)";
  return "the core has no NT_SIGINFO note (written by a tool that omits it)";
}

void CoreFile::add_segment(uint64_t vaddr, uint64_t memsz, uint64_t filesz, uint64_t offset,
                           uint32_t flags, uint64_t align) {
  CoreSegment segment{vaddr, memsz, filesz, offset, 0, flags, align};
  uint64_t in_file = offset >= file_size_ ? 0 : file_size_ - offset;
  segment.available = std::min({filesz, memsz, in_file});
  if (segment.available < std::min(filesz, memsz) && !truncated_) {
    truncated_ = true;
    warnings_.push_back("core_open " + path_ + ": core file truncated (" +
                        std::to_string(file_size_) + " bytes; segment at " + hex(vaddr) +
                        " needs up to byte " + std::to_string(offset + filesz) + ")");
  }
  segments_.push_back(segment);
}

void CoreFile::add_note_segment(uint64_t offset, uint64_t filesz) {
  uint64_t in_file = offset >= file_size_ ? 0 : std::min(filesz, file_size_ - offset);
  if (in_file < filesz) notes_.problems.push_back("note segment truncated");
  // A note offset past the end of the file reads nothing (and forms no pointer past the mapping).
  const uint8_t* begin = in_file > 0 ? file_bytes_ + offset : file_bytes_;
  note_segments_.emplace_back(begin, begin + in_file);
  parse_note_segment(note_segments_.back().data(), in_file, &notes_);
}

void CoreFile::build_regions() {
  for (const CoreSegment& segment : segments_) {
    MemoryRegion region;
    region.readable = segment.flags & PF_R;
    region.writable = segment.flags & PF_W;
    region.executable = segment.flags & PF_X;
    region.start = segment.vaddr;
    if (segment.available > 0) {
      region.end = segment.vaddr + segment.available;
      regions_.push_back(region);
    }
    if (segment.available < segment.memsz) {
      region.start = segment.vaddr + segment.available;
      region.end = segment.end();
      region.saved = false;
      regions_.push_back(region);
    }
  }
}

void CoreFile::attach_file_paths() {
  sorted_files_ = notes_.files;
  std::sort(sorted_files_.begin(), sorted_files_.end(),
            [](const MappedFile& a, const MappedFile& b) { return a.start < b.start; });
  add_undumped_file_regions();
  for (MemoryRegion& region : regions_) {
    const MappedFile* file = file_containing(sorted_files_, region.start);
    if (!file) continue;
    region.path = file->path;
    region.file_offset = file->file_offset + (region.start - file->start);
    region.shared = is_shared_memory_path(file->path);
  }
}

// gdb's gcore leaves read-only file mappings out entirely (no PT_LOAD): they are
// still mapped memory, so they become unsaved regions rather than holes.
void CoreFile::add_undumped_file_regions() {
  std::vector<MemoryRegion> added;
  for (const MappedFile& file : sorted_files_) {
    uint64_t at = file.start;
    while (at < file.end) {
      const CoreSegment* segment = segment_at(at);
      if (segment) {
        at = segment->end();
        continue;
      }
      auto next = std::upper_bound(segments_.begin(), segments_.end(), at,
                                   [](uint64_t a, const CoreSegment& s) { return a < s.vaddr; });
      uint64_t gap_end = next == segments_.end() ? file.end : std::min(file.end, next->vaddr);
      MemoryRegion region;
      region.start = at;
      region.end = gap_end;
      region.readable = true;
      region.saved = false;
      added.push_back(region);
      at = gap_end;
    }
  }
  regions_.insert(regions_.end(), added.begin(), added.end());
  std::sort(regions_.begin(), regions_.end(),
            [](const MemoryRegion& a, const MemoryRegion& b) { return a.start < b.start; });
}

void CoreFile::choose_executable(const std::string& hint) {
  if (!hint.empty()) {
    executable_ = hint;
    return;
  }
  auto entry = notes_.auxv.find(AT_ENTRY);
  if (entry != notes_.auxv.end()) {
    if (const MemoryRegion* region = find_region(regions_, entry->second))
      if (!region->path.empty()) executable_ = region->path;
  }
  auto execfn = notes_.auxv.find(AT_EXECFN);
  if (executable_.empty() && execfn != notes_.auxv.end()) {
    if (auto name = read_c_string(*this, execfn->second, 4096, nullptr)) executable_ = *name;
  }
  if (executable_.empty()) executable_ = notes_.command_name;
}

const CoreSegment* CoreFile::segment_at(uint64_t addr) const {
  auto after = std::upper_bound(segments_.begin(), segments_.end(), addr,
                                [](uint64_t a, const CoreSegment& s) { return a < s.vaddr; });
  if (after == segments_.begin()) return nullptr;
  const CoreSegment& candidate = *(after - 1);
  return addr < candidate.end() ? &candidate : nullptr;
}

bool CoreFile::read(uint64_t addr, void* buf, size_t len, ReadError* error) {
  uint8_t* out = static_cast<uint8_t*>(buf);
  while (len > 0) {
    const CoreSegment* segment = segment_at(addr);
    uint64_t offset_in_segment = segment ? addr - segment->vaddr : 0;
    if (!segment || offset_in_segment >= segment->available) {
      if (error) {
        *error = ReadError{addr, segment ? ReadFailure::kNotSavedInCore : ReadFailure::kNotMapped, ""};
        if (segment && offset_in_segment < segment->filesz) error->detail = "core file truncated";
        if (!segment && file_containing(sorted_files_, addr)) {
          error->reason = ReadFailure::kNotSavedInCore;
          error->detail = "file-backed mapping not dumped";
        }
      }
      return false;
    }
    size_t chunk = std::min<uint64_t>(len, segment->available - offset_in_segment);
    std::memcpy(out, file_bytes_ + segment->offset + offset_in_segment, chunk);
    out += chunk;
    addr += chunk;
    len -= chunk;
  }
  return true;
}

const uint8_t* CoreFile::direct(uint64_t addr, size_t len) {
  const CoreSegment* segment = segment_at(addr);
  if (!segment) return nullptr;
  uint64_t offset_in_segment = addr - segment->vaddr;
  if (offset_in_segment + len > segment->available) return nullptr;
  return file_bytes_ + segment->offset + offset_in_segment;
}

std::unique_ptr<CoreFile> open_core_file(const std::string& path,
                                         const std::string& executable_hint) {
  return std::make_unique<CoreFile>(path, executable_hint);
}

std::unique_ptr<Target> open_core(const std::string& path, const std::string& executable_hint) {
  return open_core_file(path, executable_hint);
}

}  // namespace nsc
