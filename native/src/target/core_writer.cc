#include "target/core_writer.h"

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "target/core_notes.h"
#include "util/errors.h"
#include "util/output_file.h"

namespace nsc {
namespace {

constexpr uint64_t kPage = 4096;

uint64_t page_down(uint64_t value) { return value & ~(kPage - 1); }
uint64_t page_up(uint64_t value) { return (value + kPage - 1) & ~(kPage - 1); }
uint64_t align_to(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

std::vector<AddressRange> page_aligned(const std::vector<AddressRange>& ranges) {
  std::vector<AddressRange> aligned;
  for (const AddressRange& range : ranges)
    aligned.push_back({page_down(range.start), page_up(range.end)});
  return merge_ranges(std::move(aligned));
}

void add_piece(std::vector<SlicePiece>* pieces, const CoreSegment& segment, uint64_t start,
               uint64_t end, bool saved) {
  if (end <= start) return;
  pieces->push_back({start, end - start, saved, segment.flags,
                     saved ? segment.offset + (start - segment.vaddr) : 0});
}

// Output writer over a descriptor (not owned) that tracks the offset and pads with zeros.
class OutputFile {
 public:
  OutputFile(int fd, const std::string& name) : name_(name), fd_(fd) {}
  void write(const void* data, size_t size) {
    const uint8_t* bytes = static_cast<const uint8_t*>(data);
    for (size_t done = 0; done < size;) {
      ssize_t n = ::write(fd_, bytes + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw BadInput("slice " + name_ + ": cannot write: " + std::strerror(n < 0 ? errno : ENOSPC));
      done += static_cast<size_t>(n);
    }
    offset_ += size;
  }
  void pad_to(uint64_t offset) {
    static const uint8_t zeros[kPage] = {};
    while (offset_ < offset) write(zeros, std::min<uint64_t>(kPage, offset - offset_));
  }
  uint64_t offset() const { return offset_; }

 private:
  std::string name_;
  int fd_;
  uint64_t offset_ = 0;
};

// The provenance note: owner "NCCLSCOPE", type kSliceProvenanceNote, the lines joined by '\n'.
std::vector<uint8_t> provenance_note(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += (text.empty() ? "" : "\n") + line;
  Elf64_Nhdr header{sizeof kNcclscopeNoteOwner, static_cast<Elf64_Word>(text.size()), kSliceProvenanceNote};
  std::vector<uint8_t> note(reinterpret_cast<const uint8_t*>(&header), reinterpret_cast<const uint8_t*>(&header + 1));
  note.insert(note.end(), kNcclscopeNoteOwner, kNcclscopeNoteOwner + sizeof kNcclscopeNoteOwner);
  note.resize(align_to(note.size(), 4));
  note.insert(note.end(), text.begin(), text.end());
  note.resize(align_to(note.size(), 4));
  return note;
}

Elf64_Ehdr output_header(const CoreFile& core, size_t phdr_count) {
  Elf64_Ehdr header;
  std::memcpy(&header, core.file_bytes(), sizeof header);  // ident, machine, version, flags
  header.e_phoff = sizeof header;
  header.e_phentsize = sizeof(Elf64_Phdr);
  header.e_shoff = 0;
  header.e_shentsize = sizeof(Elf64_Shdr);
  header.e_shnum = 0;
  header.e_shstrndx = SHN_UNDEF;
  header.e_phnum = phdr_count < PN_XNUM ? phdr_count : PN_XNUM;
  return header;
}

// Writes the bytes of [vaddr, vaddr + size) inside `redact` as '*' (NULs kept) into *copy,
// made from `bytes` on the first change. Counts the bytes changed in *redacted.
void redact_into(const uint8_t* bytes, uint64_t vaddr, uint64_t size, const std::vector<AddressRange>& redact,
                 std::vector<uint8_t>* out, uint64_t* redacted) {
  std::vector<uint8_t>& copy = *out;
  for (const AddressRange& range : redact) {
    uint64_t start = std::max(range.start, vaddr), end = std::min(range.end, vaddr + size);
    if (start >= end) continue;
    if (copy.empty()) copy.assign(bytes, bytes + size);
    for (uint64_t at = start; at < end; ++at) {
      uint8_t& byte = copy[at - vaddr];
      if (byte != 0 && byte != '*') {
        byte = '*';
        ++*redacted;
      }
    }
  }
}

// The memory of one kept piece as the slice writes it: empty when nothing in it is redacted.
std::vector<uint8_t> redacted_copy(const uint8_t* bytes, uint64_t vaddr, uint64_t size, const SliceEdits& edits,
                                   SliceStats* stats) {
  std::vector<uint8_t> copy;
  redact_into(bytes, vaddr, size, edits.redact_environment, &copy, &stats->redacted_environment_bytes);
  redact_into(bytes, vaddr, size, edits.redact_arguments, &copy, &stats->redacted_argument_bytes);
  redact_into(bytes, vaddr, size, edits.redact_stacks, &copy, &stats->redacted_stack_bytes);
  return copy;
}

}  // namespace

std::vector<SlicePiece> plan_slice(const CoreFile& core, const std::vector<AddressRange>& keep) {
  std::vector<AddressRange> kept = page_aligned(keep);
  std::vector<SlicePiece> pieces;
  for (const CoreSegment& segment : core.segments()) {
    uint64_t saved_end = segment.vaddr + segment.available;
    uint64_t at = segment.vaddr;
    auto range = std::upper_bound(kept.begin(), kept.end(), segment.vaddr,
                                  [](uint64_t a, const AddressRange& r) { return a < r.end; });
    for (; range != kept.end() && range->start < saved_end; ++range) {
      uint64_t start = std::max(range->start, segment.vaddr), end = std::min(range->end, saved_end);
      add_piece(&pieces, segment, at, start, false);
      add_piece(&pieces, segment, start, end, true);
      at = std::max(at, end);
    }
    add_piece(&pieces, segment, at, segment.end(), false);
  }
  return pieces;
}

void check_not_the_input(const CoreFile& core, const std::string& output_path) {
  struct stat input, output;
  if (stat(core.path().c_str(), &input) == 0 && stat(output_path.c_str(), &output) == 0 &&
      input.st_dev == output.st_dev && input.st_ino == output.st_ino)
    throw BadInput("slice " + output_path + ": would overwrite the core being sliced");
}

SliceStats write_sliced_core(const CoreFile& core, const std::vector<AddressRange>& keep,
                             const std::string& output_path, const SliceEdits& edits) {
  check_not_the_input(core, output_path);
  ReplacingOutput output(output_path, "slice " + output_path);
  SliceStats stats = write_sliced_core(core, keep, output.fd(), output_path, edits);
  output.commit();
  return stats;
}

SliceStats write_sliced_core(const CoreFile& core, const std::vector<AddressRange>& keep, int output,
                             const std::string& output_name, const SliceEdits& edits) {
  std::vector<SlicePiece> pieces = plan_slice(core, keep);
  SliceStats stats;
  // The input's notes with the FP/SIMD registers zeroed (and pr_psargs' argument values
  // redacted), then the provenance note when the slice has something to say.
  std::vector<std::vector<uint8_t>> notes = core.note_segments();
  for (std::vector<uint8_t>& segment : notes)
    stats.cleared_register_bytes += redact_note_segment(segment.data(), segment.size());
  if (!edits.provenance.empty()) notes.push_back(provenance_note(edits.provenance));
  size_t phdr_count = notes.size() + pieces.size();
  bool extended_count = phdr_count >= PN_XNUM;  // real count goes in section header 0
  Elf64_Ehdr header = output_header(core, phdr_count);

  uint64_t offset = sizeof(Elf64_Ehdr) + phdr_count * sizeof(Elf64_Phdr);
  std::vector<Elf64_Phdr> phdrs;
  for (const auto& note : notes) {
    offset = align_to(offset, 4);
    phdrs.push_back({PT_NOTE, PF_R, offset, 0, 0, note.size(), 0, 4});
    offset += note.size();
  }
  if (extended_count) {
    offset = align_to(offset, 8);
    header.e_shoff = offset;
    header.e_shnum = 1;
    offset += sizeof(Elf64_Shdr);
  }
  offset = page_up(offset);
  for (const SlicePiece& piece : pieces) {
    uint64_t filesz = piece.saved ? piece.memsz : 0;
    // Unsaved pieces get the running offset too, as the kernel writes them:
    // libdwfl treats file offsets as monotonic when it joins segments.
    phdrs.push_back({PT_LOAD, piece.flags, offset, piece.vaddr, 0, filesz, piece.memsz, kPage});
    offset = page_up(offset + filesz);  // a truncated input can end a piece mid-page
    stats.kept_bytes += filesz;
  }

  OutputFile out(output, output_name);
  out.write(&header, sizeof header);
  out.write(phdrs.data(), phdrs.size() * sizeof(Elf64_Phdr));
  for (size_t i = 0; i < notes.size(); ++i) {
    out.pad_to(phdrs[i].p_offset);
    out.write(notes[i].data(), notes[i].size());
    stats.note_bytes += notes[i].size();
  }
  if (extended_count) {
    Elf64_Shdr section0 = {};
    section0.sh_info = static_cast<uint32_t>(phdr_count);
    out.pad_to(header.e_shoff);
    out.write(&section0, sizeof section0);
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Elf64_Phdr& phdr = phdrs[notes.size() + i];
    if (!phdr.p_filesz) continue;
    out.pad_to(phdr.p_offset);
    const uint8_t* bytes = core.file_bytes() + pieces[i].input_offset;
    std::vector<uint8_t> redacted = redacted_copy(bytes, pieces[i].vaddr, phdr.p_filesz, edits, &stats);
    out.write(redacted.empty() ? bytes : redacted.data(), phdr.p_filesz);
  }
  stats.output_bytes = out.offset();
  stats.input_bytes = core.file_size();
  stats.load_segments = pieces.size();
  return stats;
}

}  // namespace nsc
