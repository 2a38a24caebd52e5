// Test support: synthetic target memory and hand-built layouts, so decoders
// are tested without a process, a core or libnccl.
#pragma once

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "layout/layout.h"
#include "target/target.h"

namespace nsc::test {

// Memory made of byte blocks at fixed addresses; everything else is unmapped.
class SyntheticTarget : public Target {
 public:
  // Adds a zeroed block; returns a pointer to its bytes for the test to fill.
  uint8_t* add_block(uint64_t address, size_t size, bool saved = true) {
    blocks_[address] = Block{std::vector<uint8_t>(size), saved};
    MemoryRegion region;
    region.start = address;
    region.end = address + size;
    region.readable = region.writable = true;
    region.saved = saved;
    regions_.push_back(region);
    std::sort(regions_.begin(), regions_.end(),
              [](const MemoryRegion& a, const MemoryRegion& b) { return a.start < b.start; });
    return blocks_[address].bytes.data();
  }
  // Adds a read-only block the target maps from `path` at file offset 0 (a library's image).
  uint8_t* add_file_block(uint64_t address, size_t size, const std::string& path) {
    uint8_t* bytes = add_block(address, size);
    for (MemoryRegion& region : regions_)
      if (region.start == address) {
        region.writable = false;
        region.path = path;
      }
    files_.push_back(MappedFile{address, address + size, 0, path});
    return bytes;
  }
  template <typename T>
  void put(uint64_t address, T value) {
    ReadError error;
    uint8_t* bytes = locate(address, sizeof(T), &error);
    if (bytes == nullptr) throw std::runtime_error("synthetic put outside blocks: " + error.message());
    std::memcpy(bytes, &value, sizeof(T));
  }

  std::string describe() const override { return "synthetic"; }
  bool is_core() const override { return true; }
  int pid() const override { return 4242; }
  bool read(uint64_t addr, void* buf, size_t len, ReadError* error) override {
    uint8_t* bytes = locate(addr, len, error);
    if (bytes == nullptr) return false;
    std::memcpy(buf, bytes, len);
    return true;
  }
  const std::vector<MemoryRegion>& regions() const override { return regions_; }
  const std::vector<MappedFile>& mapped_files() const override { return files_; }
  std::vector<ThreadInfo> threads() override { return {}; }
  std::string executable() const override { return "/synthetic/app"; }
  uint64_t reads = 0;

 private:
  struct Block {
    std::vector<uint8_t> bytes;
    bool saved = true;
  };
  uint8_t* locate(uint64_t addr, size_t len, ReadError* error) {
    ++reads;
    auto it = blocks_.upper_bound(addr);
    if (it == blocks_.begin()) return fail(addr, ReadFailure::kNotMapped, error);
    --it;
    Block& block = it->second;
    uint64_t offset = addr - it->first;
    if (offset >= block.bytes.size()) return fail(addr, ReadFailure::kNotMapped, error);
    if (!block.saved) return fail(addr, ReadFailure::kNotSavedInCore, error);
    if (offset + len > block.bytes.size())
      return fail(it->first + block.bytes.size(), ReadFailure::kShortRead, error);
    return block.bytes.data() + offset;
  }
  static uint8_t* fail(uint64_t addr, ReadFailure reason, ReadError* error) {
    if (error) {
      error->address = addr;
      error->reason = reason;
    }
    return nullptr;
  }
  std::map<uint64_t, Block> blocks_;
  std::vector<MemoryRegion> regions_;
  std::vector<MappedFile> files_;
};

// Builds StructLayouts member by member with natural offsets given by the test.
class StructBuilder {
 public:
  explicit StructBuilder(std::string name) { layout_.name = std::move(name); }
  StructBuilder& scalar(const std::string& name, uint64_t offset, uint64_t size, ValueKind kind,
                        const std::string& type_name = "") {
    MemberLayout member;
    member.name = name;
    member.offset = offset;
    member.size = member.element_size = size;
    member.kind = kind;
    member.type_name = type_name;
    layout_.members.push_back(member);
    return *this;
  }
  StructBuilder& array(const std::string& name, uint64_t offset, uint64_t element_size, uint64_t count,
                       ValueKind kind, const std::string& type_name = "") {
    scalar(name, offset, element_size, kind, type_name);
    layout_.members.back().size = element_size * count;
    layout_.members.back().array_dims = {count};
    return *this;
  }
  StructLayout build(uint64_t size) {
    layout_.size = size;
    return layout_;
  }

 private:
  StructLayout layout_;
};

}  // namespace nsc::test
