// Target pieces on synthetic bytes: note parsing (well-formed and corrupt),
// range merging and the recording wrapper, chunk sweeps, address-range parsing.
#define BOOST_TEST_MODULE target_synthetic
#include <boost/test/unit_test.hpp>

#include <elf.h>

#include <cstring>
#include <map>
#include <vector>

#include "target/build_ids.h"
#include "target/core_notes.h"
#include "target/memory_chunks.h"
#include "target/recording_target.h"
#include "target/slice_ranges.h"

using namespace nsc;

namespace {

void put_u64(std::vector<uint8_t>* bytes, uint64_t value) {
  const uint8_t* raw = reinterpret_cast<const uint8_t*>(&value);
  bytes->insert(bytes->end(), raw, raw + 8);
}

// NT_FILE desc: count, page size, {start, end, page offset}..., names.
std::vector<uint8_t> file_note(const std::vector<std::tuple<uint64_t, uint64_t, uint64_t, std::string>>& files) {
  std::vector<uint8_t> desc;
  put_u64(&desc, files.size());
  put_u64(&desc, 4096);
  for (const auto& [start, end, page, name] : files) {
    put_u64(&desc, start);
    put_u64(&desc, end);
    put_u64(&desc, page);
  }
  for (const auto& file : files) {
    const std::string& name = std::get<3>(file);
    desc.insert(desc.end(), name.begin(), name.end());
    desc.push_back(0);
  }
  return desc;
}

// A target over a map of address -> bytes (one flat buffer at `base`).
class BufferTarget : public Target {
 public:
  BufferTarget(uint64_t base, size_t size) : base_(base), bytes_(size) {
    for (size_t i = 0; i < size; ++i) bytes_[i] = static_cast<uint8_t>(i * 7);
    MemoryRegion region;
    region.start = base;
    region.end = base + size;
    region.readable = region.writable = true;
    regions_.push_back(region);
  }
  std::string describe() const override { return "buffer"; }
  bool is_core() const override { return false; }
  int pid() const override { return 0; }
  bool read(uint64_t addr, void* buf, size_t len, ReadError* error) override {
    if (addr < base_ || addr + len > base_ + bytes_.size()) {
      if (error) *error = ReadError{addr < base_ ? addr : base_ + bytes_.size(), ReadFailure::kNotMapped, ""};
      return false;
    }
    std::memcpy(buf, bytes_.data() + (addr - base_), len);
    return true;
  }
  const std::vector<MemoryRegion>& regions() const override { return regions_; }
  const std::vector<MappedFile>& mapped_files() const override { return files_; }
  std::vector<ThreadInfo> threads() override { return {}; }
  std::string executable() const override { return ""; }

 private:
  uint64_t base_;
  std::vector<uint8_t> bytes_;
  std::vector<MemoryRegion> regions_;
  std::vector<MappedFile> files_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(file_note_gives_paths_and_byte_offsets) {
  CoreNotes notes;
  auto desc = file_note({{0x1000, 0x3000, 0, "/lib/a.so"}, {0x3000, 0x5000, 2, "/lib/b.so (deleted)"}});
  add_core_note(NT_FILE, "CORE", desc.data(), desc.size(), &notes);
  BOOST_REQUIRE_EQUAL(notes.files.size(), 2u);
  BOOST_TEST(notes.files[1].path == "/lib/b.so (deleted)");
  BOOST_TEST(notes.files[1].file_offset == 0x2000u);  // pages -> bytes
  BOOST_TEST(notes.problems.empty());
}

BOOST_AUTO_TEST_CASE(corrupt_file_note_is_a_problem_not_a_crash) {
  CoreNotes notes;
  auto desc = file_note({{0x1000, 0x3000, 0, "/lib/a.so"}});
  uint64_t huge = 1ull << 60;
  std::memcpy(desc.data(), &huge, 8);  // count far beyond the note
  add_core_note(NT_FILE, "CORE", desc.data(), desc.size(), &notes);
  BOOST_TEST(notes.files.empty());
  BOOST_TEST(notes.problems.size() == 1u);
  // Names cut short: entries without a name are not invented.
  CoreNotes cut;
  auto two = file_note({{0x1000, 0x3000, 0, "/a"}, {0x3000, 0x5000, 0, "/b"}});
  add_core_note(NT_FILE, "CORE", two.data(), two.size() - 3, &cut);
  BOOST_TEST(cut.files.size() == 1u);
}

BOOST_AUTO_TEST_CASE(note_segment_with_bad_sizes_stops_cleanly) {
  std::vector<uint8_t> segment(sizeof(Elf64_Nhdr) + 8);
  Elf64_Nhdr header{5, 0x7fffffff, NT_PRSTATUS};
  std::memcpy(segment.data(), &header, sizeof header);
  std::memcpy(segment.data() + sizeof header, "CORE", 5);
  CoreNotes notes;
  parse_note_segment(segment.data(), segment.size(), &notes);
  BOOST_TEST(notes.threads.empty());
  BOOST_TEST(notes.problems.size() == 1u);
}

BOOST_AUTO_TEST_CASE(prstatus_gives_tid_and_registers) {
  std::vector<uint8_t> desc(336, 0);
  int tid = 4242;
  std::memcpy(desc.data() + 32, &tid, 4);                       // pr_pid
  uint64_t rsp = 0x7ffd1234, rip = 0x401000;
  std::memcpy(desc.data() + 112 + 19 * 8, &rsp, 8);             // user_regs_struct.rsp
  std::memcpy(desc.data() + 112 + 16 * 8, &rip, 8);             // .rip
  CoreNotes notes;
  add_core_note(NT_PRSTATUS, "CORE", desc.data(), desc.size(), &notes);
  BOOST_REQUIRE_EQUAL(notes.threads.size(), 1u);
  BOOST_TEST(notes.threads[0].tid == 4242);
  BOOST_TEST(stack_pointer_of(notes.threads[0]).value() == rsp);
  BOOST_TEST(instruction_pointer_of(notes.threads[0]).value() == rip);
  ThreadInfo empty;
  BOOST_TEST(!stack_pointer_of(empty).has_value());
}

BOOST_AUTO_TEST_CASE(prstatus_gives_the_system_call_and_auxv_its_entries) {
  // The unwinder takes these from here (stacks/thread_stacks.cc): orig_rax, AT_ENTRY.
  std::vector<uint8_t> desc(336, 0);
  int64_t orig_rax = 34;  // pause
  std::memcpy(desc.data() + 112 + 15 * 8, &orig_rax, 8);        // user_regs_struct.orig_rax
  CoreNotes notes;
  add_core_note(NT_PRSTATUS, "CORE", desc.data(), desc.size(), &notes);
  BOOST_REQUIRE_EQUAL(notes.threads.size(), 1u);
  BOOST_TEST(syscall_of(notes.threads[0]).value_or(-1) == 34);
  orig_rax = -1;  // not in a system call
  std::memcpy(desc.data() + 112 + 15 * 8, &orig_rax, 8);
  add_core_note(NT_PRSTATUS, "CORE", desc.data(), desc.size(), &notes);
  BOOST_TEST(!syscall_of(notes.threads[1]).has_value());
  BOOST_TEST(!syscall_of(ThreadInfo{}).has_value());

  std::vector<uint8_t> auxv;
  for (uint64_t word : {uint64_t{AT_PAGESZ}, uint64_t{4096}, uint64_t{AT_ENTRY}, uint64_t{0x401020},
                        uint64_t{AT_NULL}, uint64_t{0}, uint64_t{AT_ENTRY}, uint64_t{0xbad}})
    put_u64(&auxv, word);
  BOOST_TEST(auxv_value(auxv, AT_ENTRY).value_or(0) == 0x401020u);  // AT_NULL ends the vector
  BOOST_TEST(auxv_value(auxv, AT_PAGESZ).value_or(0) == 4096u);
  BOOST_TEST(!auxv_value(auxv, AT_BASE).has_value());
  BOOST_TEST(!auxv_value(std::vector<uint8_t>(12, 0), AT_ENTRY).has_value());  // cut short
}

BOOST_AUTO_TEST_CASE(gnu_build_id_found_among_notes) {
  std::vector<uint8_t> notes;
  auto add = [&](uint32_t type, const char* name, std::vector<uint8_t> desc) {
    Elf64_Nhdr header{static_cast<Elf64_Word>(std::strlen(name) + 1), static_cast<Elf64_Word>(desc.size()), type};
    const uint8_t* raw = reinterpret_cast<const uint8_t*>(&header);
    notes.insert(notes.end(), raw, raw + sizeof header);
    notes.insert(notes.end(), name, name + header.n_namesz);
    while (notes.size() % 4) notes.push_back(0);
    notes.insert(notes.end(), desc.begin(), desc.end());
    while (notes.size() % 4) notes.push_back(0);
  };
  add(1, "GNU", {0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0});  // ABI tag first
  add(NT_GNU_BUILD_ID, "GNU", {0x9f, 0xcf, 0x74, 0xd9, 0x00, 0xab});
  BOOST_TEST(find_gnu_build_id(notes.data(), notes.size()).value_or("") == "9fcf74d900ab");
  BOOST_TEST(!find_gnu_build_id(notes.data(), 20).has_value());  // cut inside the first note
}

BOOST_AUTO_TEST_CASE(ranges_merge_and_recording_target_records_reads) {
  auto merged = merge_ranges({{30, 40}, {0, 10}, {10, 20}, {35, 50}, {60, 60}});
  BOOST_REQUIRE_EQUAL(merged.size(), 2u);
  BOOST_TEST(merged[0].start == 0u);
  BOOST_TEST(merged[0].end == 20u);
  BOOST_TEST(merged[1].start == 30u);
  BOOST_TEST(merged[1].end == 50u);

  BufferTarget inner(0x10000, 0x10000);
  RecordingTarget recording(inner);
  uint64_t word;
  BOOST_TEST(recording.read_value(0x10100, &word, nullptr));
  BOOST_TEST(recording.read_value(0x10108, &word, nullptr));   // extends the last range
  BOOST_TEST(!recording.read_value(0x5, &word, nullptr));       // failed: not recorded
  std::vector<uint8_t> chunk(0x8000);
  BOOST_TEST(recording.scan_read(0x10000, chunk.data(), chunk.size(), nullptr));  // scan: not recorded
  auto ranges = recording.recorded_ranges();
  BOOST_REQUIRE_EQUAL(ranges.size(), 1u);
  BOOST_TEST(ranges[0].start == 0x10100u);
  BOOST_TEST(ranges[0].end == 0x10110u);
  BOOST_TEST(recording.read_count() == 2u);
}

BOOST_AUTO_TEST_CASE(chunk_sweep_visits_everything_once_and_skips_faults) {
  BufferTarget target(0x20000, 0x9000);
  uint64_t visited = 0, next_expected = 0x20000;
  bool in_order = true;
  ChunkScanStats stats;
  for_each_chunk(target, 0x20000, 0x2b000, 0x4000, [&](uint64_t address, const uint8_t* bytes, size_t size) {
    in_order &= address == next_expected && bytes[0] == static_cast<uint8_t>((address - 0x20000) * 7);
    next_expected = address + size;
    visited += size;
  }, &stats);
  BOOST_TEST(in_order);
  BOOST_TEST(visited == 0x9000u);              // [0x29000, 0x2b000) is not mapped
  BOOST_TEST(stats.bytes_unreadable == 0x2000u);
  BOOST_REQUIRE_EQUAL(stats.failures.size(), 1u);
  BOOST_TEST(stats.failures[0].address == 0x29000u);
}

BOOST_AUTO_TEST_CASE(address_ranges_parse) {
  AddressRange range;
  BOOST_TEST(parse_address_range("0x1000-0x2000", &range));
  BOOST_TEST(range.start == 0x1000u);
  BOOST_TEST(range.end == 0x2000u);
  BOOST_TEST(!parse_address_range("0x2000-0x1000", &range));
  BOOST_TEST(!parse_address_range("0x2000", &range));
  BOOST_TEST(!parse_address_range("zz-0x10", &range));
}
