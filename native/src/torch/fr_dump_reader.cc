#include "torch/fr_dump_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

#include "util/errors.h"

namespace nsc::torch {
namespace {

// The pickle machine's values, in one arena: no value owns heap memory but containers'
// item lists, so a dump of 2,000 entries is read in a few milliseconds.
enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kText, kList, kTuple, kDict };

constexpr uint32_t kNoValue = UINT32_MAX;

// 16 bytes: a dump of 2,000 entries makes ~70,000 values, and writing them was the opcode
// loop's largest cost. The schema pass keeps what it learns of a text in the text's own value
// (its string id, the dump field it names): a memoized string is one value however often the
// pickle repeats it, so each key is classified and each string interned once per dump.
constexpr int8_t kFieldNotLooked = -2;

struct Value {
  Kind kind = Kind::kNone;
  bool flag = false;
  int8_t field = kFieldNotLooked;  // a text used as a dict key: the field it names (-1: none)
  uint32_t aux = 0;                // a container: index of its item list (a dict: key, value, ...); a text: length
  union {
    int64_t integer = 0;
    double real;
    struct {
      uint32_t offset;  // into the file's bytes
      uint32_t id;      // its string id once interned, kNoValue before
    } text;
  };
};
static_assert(sizeof(Value) == 16, "a value is 16 bytes");

// The machine's storage, kept per thread from one dump to the next: allocating it afresh for
// each of 4,096 dumps cost more (page faults, malloc) than reading them.
struct Arena {
  std::vector<Value> values;
  std::vector<std::vector<uint32_t>> items;  // the first `items_used` are live
  size_t items_used = 0;
  std::vector<uint32_t> stack, memo;  // memo: kNoValue where not written
  size_t memo_entries = 0;            // indices written: MEMOIZE's next index, as in Python's len(memo)
  std::vector<size_t> marks;

  // Every opcode that makes or pushes a value reads at least one byte: a dump of n bytes needs
  // at most n of each, so neither grows while it is read.
  void reset(size_t bytes) {
    values.clear();
    items_used = 0;
    stack.clear();
    memo.clear();
    memo_entries = 0;
    marks.clear();
    values.reserve(bytes);
    stack.reserve(bytes);
  }
  uint32_t new_items() {
    if (items_used == items.size()) items.emplace_back();
    items[items_used].clear();
    return static_cast<uint32_t>(items_used++);
  }
};

class Machine {
 public:
  Machine(std::string_view bytes, const std::string& name, Arena* arena) : bytes_(bytes), name_(name), arena_(*arena) {
    if (bytes.size() >= UINT32_MAX) fail("too large for a flight-recorder dump (4 GiB or more)");
    arena->reset(bytes.size());
  }

  // Runs to STOP; returns the top value.
  uint32_t run() {
    if (bytes_.size() < 2 || static_cast<uint8_t>(bytes_[0]) != 0x80) fail("not a pickle (no PROTO opcode)");
    while (true) {
      if (at_ >= bytes_.size()) fail("truncated: the pickle ends before its STOP opcode");
      uint8_t op = static_cast<uint8_t>(bytes_[at_++]);
      if (op == '.') break;
      step(op);
    }
    if (arena_.stack.size() != 1 || arena_.marks.size() != 0)
      fail("malformed pickle: " + std::to_string(arena_.stack.size()) + " values left at STOP");
    return arena_.stack.back();
  }

  const Value& value(uint32_t id) const { return arena_.values[id]; }
  Value& value(uint32_t id) { return arena_.values[id]; }
  std::string_view text(const Value& value) const { return bytes_.substr(value.text.offset, value.aux); }
  const std::vector<uint32_t>& items(const Value& container) const { return arena_.items[container.aux]; }
  [[noreturn]] void fail(const std::string& why) const { throw BadInput(name_ + ": " + why); }

 private:
  void step(uint8_t op) {
    switch (op) {
      case 0x80: take(1); return;                    // PROTO n
      case 0x95: take(8); return;                    // FRAME (protocol 4+): a length hint only
      case '(': arena_.marks.push_back(arena_.stack.size()); return;  // MARK
      case '0': pop(); return;                       // POP
      case '1': drop(pop_mark()); return;            // POP_MARK
      case '2': push_id(top()); return;              // DUP
      case 'N': push(Kind::kNone); return;
      case 0x88: case 0x89: push(Kind::kBool).flag = op == 0x88; return;  // NEWTRUE, NEWFALSE
      case 'J': push_int(static_cast<int32_t>(le<uint32_t>())); return;  // BININT
      case 'K': push_int(le<uint8_t>()); return;                          // BININT1
      case 'M': push_int(le<uint16_t>()); return;                         // BININT2
      case 0x8a: push_long(le<uint8_t>()); return;                        // LONG1
      case 'G': push_float(); return;                                     // BINFLOAT
      case 'X': push_text(le<uint32_t>()); return;                        // BINUNICODE
      case 0x8c: push_text(le<uint8_t>()); return;                        // SHORT_BINUNICODE
      case 0x8d: push_text(le<uint64_t>()); return;                       // BINUNICODE8
      case ']': push_container(Kind::kList); return;                      // EMPTY_LIST
      case '}': push_container(Kind::kDict); return;                      // EMPTY_DICT
      case ')': push_container(Kind::kTuple); return;                     // EMPTY_TUPLE
      case 'l': collect(Kind::kList, pop_mark()); return;                 // LIST
      case 'd': collect(Kind::kDict, pop_mark()); return;                 // DICT
      case 't': collect(Kind::kTuple, pop_mark()); return;                // TUPLE
      case 0x85: collect(Kind::kTuple, pop_n(1)); return;                 // TUPLE1
      case 0x86: collect(Kind::kTuple, pop_n(2)); return;                 // TUPLE2
      case 0x87: collect(Kind::kTuple, pop_n(3)); return;                 // TUPLE3
      case 'a': append_to(Kind::kList, pop_n(1)); return;                 // APPEND
      case 'e': append_to(Kind::kList, pop_mark()); return;               // APPENDS
      case 's': append_to(Kind::kDict, pop_n(2)); return;                 // SETITEM
      case 'u': append_to(Kind::kDict, pop_mark()); return;               // SETITEMS
      case 'q': memo_put(le<uint8_t>()); return;                          // BINPUT
      case 'r': memo_put(le<uint32_t>()); return;                         // LONG_BINPUT
      case 0x94: memo_put(arena_.memo_entries); return;                   // MEMOIZE
      case 'h': push_id(memo_get(le<uint8_t>())); return;                 // BINGET
      case 'j': push_id(memo_get(le<uint32_t>())); return;                // LONG_BINGET
      default: refuse(op);
    }
  }

  // Every opcode a flight-recorder dump never uses: above all those that name a global or
  // build an object (the ways a pickle runs code). Named, so the line says what was refused.
  [[noreturn]] void refuse(uint8_t op) const {
    const char* what = nullptr;
    switch (op) {
      case 'c': what = "GLOBAL"; break;
      case 0x93: what = "STACK_GLOBAL"; break;
      case 'R': what = "REDUCE"; break;
      case 'b': what = "BUILD"; break;
      case 'i': what = "INST"; break;
      case 'o': what = "OBJ"; break;
      case 0x81: what = "NEWOBJ"; break;
      case 0x92: what = "NEWOBJ_EX"; break;
      case 'P': case 'Q': what = "PERSID"; break;
      case 0x82: case 0x83: case 0x84: what = "EXT"; break;
    }
    char offset[32];
    std::snprintf(offset, sizeof offset, "%zu", at_ - 1);
    if (what != nullptr)
      fail(std::string("refused: opcode ") + what + " at byte " + offset +
           " would import or call code; a flight-recorder dump holds plain data only (never unpickled)");
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    fail(std::string("not a flight-recorder dump: pickle opcode ") + hex + " at byte " + offset +
         " is not one a dump uses");
  }

  const char* take(uint64_t count) {
    if (count > bytes_.size() - at_) fail("truncated: the pickle ends inside an opcode's argument");
    const char* out = bytes_.data() + at_;
    at_ += count;
    return out;
  }
  // A little-endian argument (x86 and arm64 hosts are little-endian, like pickle's arguments).
  template <class T>
  T le() {
    T value;
    std::memcpy(&value, take(sizeof value), sizeof value);
    return value;
  }

  // The arena reserved a value and a stack slot per byte of the dump: these never reallocate.
  Value& push(Kind kind) {
    std::vector<Value>& values = arena_.values;
    uint32_t id = static_cast<uint32_t>(values.size());
    values.emplace_back().kind = kind;
    arena_.stack.push_back(id);
    return values.back();
  }
  void push_id(uint32_t id) { arena_.stack.push_back(id); }
  void push_int(int64_t number) { push(Kind::kInt).integer = number; }
  void push_long(uint64_t count) {
    const char* raw = take(count);
    if (count > 8) fail("integer wider than 64 bits");
    uint64_t bits = 0;
    for (size_t i = count; i-- > 0;) bits = (bits << 8) | static_cast<uint8_t>(raw[i]);
    if (count > 0 && count < 8 && (static_cast<uint8_t>(raw[count - 1]) & 0x80)) bits |= ~0ull << (8 * count);
    push_int(static_cast<int64_t>(bits));
  }
  void push_float() {
    const char* raw = take(8);
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<uint8_t>(raw[i]);  // big-endian
    std::memcpy(&push(Kind::kFloat).real, &bits, sizeof bits);
  }
  void push_text(uint64_t length) {
    const char* raw = take(length);
    Value& v = push(Kind::kText);
    v.aux = static_cast<uint32_t>(length);  // the file is under 4 GiB
    v.text.offset = static_cast<uint32_t>(raw - bytes_.data());
    v.text.id = kNoValue;
  }
  void push_container(Kind kind) {
    uint32_t list = arena_.new_items();
    push(kind).aux = list;
  }

  // The values between `from` and the stack's top: popped, read until the next pop.
  struct Popped {
    size_t from, count;
  };
  size_t floor() const { return arena_.marks.empty() ? 0 : arena_.marks.back(); }
  uint32_t top() const {
    if (arena_.stack.size() <= floor()) fail("malformed pickle: stack underflow");
    return arena_.stack.back();
  }
  uint32_t pop() { uint32_t id = top(); arena_.stack.pop_back(); return id; }
  Popped pop_n(size_t count) {
    if (arena_.stack.size() < floor() + count) fail("malformed pickle: stack underflow");
    return {arena_.stack.size() - count, count};
  }
  Popped pop_mark() {
    if (arena_.marks.empty()) fail("malformed pickle: no MARK");
    size_t mark = arena_.marks.back();
    arena_.marks.pop_back();
    return {mark, arena_.stack.size() - mark};
  }
  const uint32_t* begin(Popped popped) const { return arena_.stack.data() + popped.from; }
  void drop(Popped popped) { arena_.stack.resize(popped.from); }

  // LIST, DICT, TUPLE, TUPLE1-3: the popped values become a new container.
  void collect(Kind kind, Popped members) {
    if (kind == Kind::kDict && members.count % 2) fail("malformed pickle: a dict with a key and no value");
    uint32_t list = arena_.new_items();
    arena_.items[list].assign(begin(members), begin(members) + members.count);
    drop(members);
    push(kind).aux = list;
  }
  // APPEND(S), SETITEM(S): the popped values go into the container below them.
  void append_to(Kind kind, Popped members) {
    if (members.from == 0 || members.from <= floor()) fail("malformed pickle: stack underflow");
    const Value& target = arena_.values[arena_.stack[members.from - 1]];
    if (target.kind != kind)
      fail("malformed pickle: items added to a value that is not a " + std::string(kind == Kind::kList ? "list" : "dict"));
    if (kind == Kind::kDict && members.count % 2) fail("malformed pickle: a dict with a key and no value");
    std::vector<uint32_t>& list = arena_.items[target.aux];
    list.insert(list.end(), begin(members), begin(members) + members.count);
    drop(members);
  }

  void memo_put(uint64_t index) {
    if (index > bytes_.size()) fail("malformed pickle: memo index " + std::to_string(index) + " out of range");
    std::vector<uint32_t>& memo = arena_.memo;
    if (memo.size() <= index) memo.resize(std::max<size_t>(index + 1, memo.size() * 2), kNoValue);  // doubled: one fill per size
    if (memo[index] == kNoValue) ++arena_.memo_entries;
    memo[index] = top();
  }
  uint32_t memo_get(uint64_t index) const {
    const std::vector<uint32_t>& memo = arena_.memo;
    if (index >= memo.size() || memo[index] == kNoValue)
      fail("malformed pickle: memo " + std::to_string(index) + " read before it was written");
    return memo[index];
  }

  std::string_view bytes_;
  const std::string& name_;
  size_t at_ = 2;
  Arena& arena_;
};


// The dump's schema over the machine's values: only the keys triage uses, each type-checked.
class DumpReader {
 public:
  explicit DumpReader(Machine& machine) : m_(machine) {}

  FrRankRecords read(uint32_t root) {
    const Value& dump = m_.value(root);
    if (dump.kind != Kind::kDict) m_.fail("not a flight-recorder dump: the pickle holds no dict");
    const Value* entries = member(dump, "entries");
    const Value* config = member(dump, "pg_config");
    if (entries == nullptr || config == nullptr || entries->kind != Kind::kList || config->kind != Kind::kDict)
      m_.fail("not a flight-recorder dump: no \"entries\" list and \"pg_config\" dict");
    if (const Value* version = member(dump, "version"); version && version->kind == Kind::kText)
      out_.version = std::string(m_.text(*version));
    read_groups(*config);
    if (const Value* status = member(dump, "pg_status"); status && status->kind == Kind::kDict) read_status(*status);
    const std::vector<uint32_t>& list = m_.items(*entries);
    out_.records.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) read_entry(m_.value(list[i]), i);
    return std::move(out_);
  }

 private:
  const Value* member(const Value& dict, std::string_view key) const {
    const std::vector<uint32_t>& items = m_.items(dict);
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      const Value& k = m_.value(items[i]);
      if (k.kind == Kind::kText && m_.text(k) == key) return &m_.value(items[i + 1]);
    }
    return nullptr;
  }
  std::string text(const Value* value) const {
    return value && value->kind == Kind::kText ? std::string(m_.text(*value)) : std::string();
  }
  std::optional<int64_t> integer(const Value* value) const {
    if (value && value->kind == Kind::kInt) return value->integer;
    return std::nullopt;
  }

  void read_groups(const Value& config) {
    const std::vector<uint32_t>& items = m_.items(config);
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      const Value& group = m_.value(items[i + 1]);
      if (group.kind != Kind::kDict) m_.fail("not a flight-recorder dump: pg_config holds a non-dict");
      FrGroupConfig out{out_.intern(text(member(group, "name"))), out_.intern(text(member(group, "desc"))), {}};
      if (!parse_ranks(text(member(group, "ranks")), &out.ranks))
        m_.fail("not a flight-recorder dump: pg_config ranks of group \"" + out_.text(out.name) + "\" are not a list of ranks");
      out_.groups.push_back(std::move(out));
    }
  }

  // pg_config's ranks are text in PyTorch's dump: "[0, 1, 2, 3]".
  static bool parse_ranks(const std::string& text, std::vector<int>* ranks) {
    if (text.size() < 2 || text.front() != '[' || text.back() != ']') return false;
    long long number = -1;
    for (size_t i = 1; i + 1 < text.size(); ++i) {
      char c = text[i];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        number = (number < 0 ? 0 : number) * 10 + (c - '0');
        if (number > (1 << 24)) return false;
      } else if (c == ',' || c == ' ') {
        if (c == ',' && number < 0) return false;
        if (number >= 0) ranks->push_back(static_cast<int>(number));
        number = -1;
      } else {
        return false;
      }
    }
    if (number >= 0) ranks->push_back(static_cast<int>(number));
    return true;
  }

  void read_status(const Value& status) {
    const std::vector<uint32_t>& items = m_.items(status);
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      const Value& row = m_.value(items[i + 1]);
      if (row.kind != Kind::kDict) continue;
      const Value& key = m_.value(items[i]);
      out_.pg_status.push_back({key.kind == Kind::kText ? std::string(m_.text(key)) : std::to_string(key.integer),
                                integer(member(row, "last_enqueued_collective")),
                                integer(member(row, "last_started_collective")),
                                integer(member(row, "last_completed_collective"))});
    }
  }

  // A string value's id in the rank's table; memoized strings (the same value again) are
  // interned once: PyTorch's pickler memoizes every repeated string.
  uint32_t text_id(Value* value) {
    if (value == nullptr || value->kind != Kind::kText) return 0;
    if (value->text.id == kNoValue) {
      std::string_view text = m_.text(*value);
      buffer_.assign(text.data(), text.size());
      value->text.id = out_.intern(buffer_);
    }
    return value->text.id;
  }
  // The field a dict key names, looked up once per key value.
  int field_of(Value& key) const {
    if (key.kind != Kind::kText) return -1;
    if (key.field == kFieldNotLooked) key.field = static_cast<int8_t>(field_named(m_.text(key)));
    return key.field;
  }

  // Sizes and dtypes repeat from one entry to the next (a job repeats its shapes): a field's
  // items are compared with the ones it had in the entry before, as a short list of numbers
  // (the key), and its text is built and interned only when they differ.
  struct Recent {
    std::vector<int64_t> key, last_key;
    uint32_t id = kNoValue;
  };
  uint32_t intern_if_new(Recent* recent, void (DumpReader::*build_text)(const std::vector<int64_t>&)) {
    if (recent->id == kNoValue || recent->key != recent->last_key) {
      (this->*build_text)(recent->key);
      recent->id = out_.intern(buffer_);
      recent->last_key.swap(recent->key);
    }
    return recent->id;
  }

  // Key: per tensor, its count of integer dims, then the dims.
  uint32_t sizes(const Value* list, Recent* recent) {
    recent->key.clear();
    if (list != nullptr && list->kind == Kind::kList)
      for (uint32_t id : m_.items(*list)) {
        const Value& tensor = m_.value(id);
        size_t count_at = recent->key.size();
        recent->key.push_back(0);
        if (tensor.kind == Kind::kList || tensor.kind == Kind::kTuple)
          for (uint32_t dim : m_.items(tensor))
            if (m_.value(dim).kind == Kind::kInt) {
              recent->key.push_back(m_.value(dim).integer);
              ++recent->key[count_at];
            }
      }
    return intern_if_new(recent, &DumpReader::sizes_text);
  }
  // "[[65536], [2, 3]]": PyTorch's own repr of sizes, in buffer_.
  void sizes_text(const std::vector<int64_t>& key) {
    buffer_ = "[";
    for (size_t at = 0; at < key.size(); at += 1 + static_cast<size_t>(key[at])) {
      buffer_ += at ? ", [" : "[";
      for (int64_t d = 0; d < key[at]; ++d) {
        if (d) buffer_ += ", ";
        char digits[24];
        auto written = std::to_chars(digits, digits + sizeof digits, key[at + 1 + static_cast<size_t>(d)]);
        buffer_.append(digits, written.ptr);
      }
      buffer_ += "]";
    }
    buffer_ += "]";
  }
  // Key: the dtype texts' value ids (a memoized string is one value).
  uint32_t dtypes(const Value* list, Recent* recent) {
    recent->key.clear();
    if (list != nullptr && list->kind == Kind::kList)
      for (uint32_t id : m_.items(*list))
        if (m_.value(id).kind == Kind::kText) recent->key.push_back(id);
    return intern_if_new(recent, &DumpReader::dtypes_text);
  }
  // "[Float, Float]", in buffer_.
  void dtypes_text(const std::vector<int64_t>& key) {
    buffer_ = "[";
    for (int64_t id : key) {
      if (buffer_.size() > 1) buffer_ += ", ";
      buffer_.append(m_.text(m_.value(static_cast<uint32_t>(id))));
    }
    buffer_ += "]";
  }

  // The stacks of the last few entries (a job alternates a few call sites): compared frame by
  // frame before the rank's table is asked.
  uint32_t stack_id(const std::vector<FrFrame>& frames) {
    auto same = [](const std::vector<FrFrame>& a, const std::vector<FrFrame>& b) {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (a[i].name != b[i].name || a[i].filename != b[i].filename || a[i].line != b[i].line) return false;
      return true;
    };
    for (const RecentStack& recent : recent_stacks_)
      if (recent.id != kNoValue && same(recent.frames, frames)) return recent.id;
    RecentStack& replaced = recent_stacks_[next_recent_stack_++ % kRecentStacks];
    replaced.frames = frames;
    replaced.id = out_.intern_stack(frames);
    return replaced.id;
  }

  // The keys an entry holds that triage reads, found in one pass over the entry's dict; then
  // a frame's keys.
  enum Field { kRecordId, kCollectiveSeq, kP2pSeq, kProcessGroup, kProfilingName, kInputSizes, kOutputSizes,
               kInputDtypes, kOutputDtypes, kState, kIsP2p, kFrames, kEntryFieldCount,
               kFrameName = kEntryFieldCount, kFrameFile, kFrameLine };
  static int field_named(std::string_view key) {
    switch (key.size()) {
      case 4: return key == "name" ? kFrameName : key == "line" ? kFrameLine : -1;
      case 8: return key == "filename" ? kFrameFile : -1;
      case 5: return key == "state" ? kState : -1;
      case 6: return key == "is_p2p" ? kIsP2p : key == "frames" ? kFrames : -1;
      case 9: return key == "record_id" ? kRecordId : -1;
      case 10: return key == "p2p_seq_id" ? kP2pSeq : -1;
      case 11: return key == "input_sizes" ? kInputSizes : -1;
      case 12: return key == "output_sizes" ? kOutputSizes : key == "input_dtypes" ? kInputDtypes : -1;
      case 13: return key == "process_group" ? kProcessGroup : key == "output_dtypes" ? kOutputDtypes : -1;
      case 14: return key == "profiling_name" ? kProfilingName : -1;
      case 17: return key == "collective_seq_id" ? kCollectiveSeq : -1;
      default: return -1;
    }
  }

  void read_entry(const Value& entry, size_t index) {
    if (entry.kind != Kind::kDict)
      m_.fail("not a flight-recorder dump: entry " + std::to_string(index) + " is not a dict");
    Value* field[kEntryFieldCount] = {};
    const std::vector<uint32_t>& items = m_.items(entry);
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      int f = field_of(m_.value(items[i]));
      if (f >= 0 && f < kEntryFieldCount) field[f] = &m_.value(items[i + 1]);
    }
    FrRecord record;
    record.record_id = integer(field[kRecordId]);
    record.collective_seq = integer(field[kCollectiveSeq]);
    record.p2p_seq = integer(field[kP2pSeq]);
    const Value* pg = field[kProcessGroup];
    Value* name = field[kProfilingName];
    if (pg == nullptr || pg->kind != Kind::kTuple || m_.items(*pg).size() != 2 || name == nullptr ||
        name->kind != Kind::kText)
      m_.fail("not a flight-recorder dump: entry " + std::to_string(index) + " has no process_group or profiling_name");
    record.pg_name = text_id(&m_.value(m_.items(*pg)[0]));
    record.pg_desc = text_id(&m_.value(m_.items(*pg)[1]));
    record.profiling_name = text_id(name);
    record.input_sizes = sizes(field[kInputSizes], &recent_[0]);
    record.output_sizes = sizes(field[kOutputSizes], &recent_[1]);
    record.input_dtypes = dtypes(field[kInputDtypes], &recent_[2]);
    record.output_dtypes = dtypes(field[kOutputDtypes], &recent_[3]);
    const Value* state = field[kState];
    std::string_view state_text = state && state->kind == Kind::kText ? m_.text(*state) : std::string_view();
    record.state = state_text == "scheduled" ? FrState::kScheduled
                   : state_text == "started" ? FrState::kStarted
                   : state_text == "completed" ? FrState::kCompleted : FrState::kUnknown;
    const Value* p2p = field[kIsP2p];
    record.is_p2p = p2p && p2p->kind == Kind::kBool && p2p->flag;
    frames_.clear();
    if (const Value* list = field[kFrames]; list && list->kind == Kind::kList)
      for (uint32_t id : m_.items(*list)) {
        const Value& frame = m_.value(id);
        if (frame.kind != Kind::kDict) continue;
        Value *function = nullptr, *file = nullptr, *line = nullptr;
        const std::vector<uint32_t>& keys = m_.items(frame);
        for (size_t i = 0; i + 1 < keys.size(); i += 2) {
          int f = field_of(m_.value(keys[i]));
          if (f == kFrameName) function = &m_.value(keys[i + 1]);
          else if (f == kFrameFile) file = &m_.value(keys[i + 1]);
          else if (f == kFrameLine) line = &m_.value(keys[i + 1]);
        }
        frames_.push_back({text_id(function), text_id(file), integer(line)});
      }
    record.stack = stack_id(frames_);
    out_.records.push_back(record);
  }

  std::string buffer_;
  Recent recent_[4];  // input sizes, output sizes, input dtypes, output dtypes
  struct RecentStack {
    std::vector<FrFrame> frames;
    uint32_t id = kNoValue;
  };
  static constexpr size_t kRecentStacks = 4;
  RecentStack recent_stacks_[kRecentStacks];
  size_t next_recent_stack_ = 0;
  std::vector<FrFrame> frames_;
  Machine& m_;
  FrRankRecords out_;
};

}  // namespace

bool looks_like_pickle(std::string_view head) {
  return head.size() >= 2 && static_cast<uint8_t>(head[0]) == 0x80 && head[1] >= 2 && head[1] <= 5;
}

FrRankRecords read_fr_dump(std::string_view bytes, const std::string& name) {
  thread_local Arena arena;
  Machine machine(bytes, name, &arena);
  uint32_t root = machine.run();
  return DumpReader(machine).read(root);
}

bool fr_dump_rank_from_name(const std::string& path, int* rank) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, ".pkl") == 0) name.resize(name.size() - 4);
  size_t digits = name.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1]))) --digits;
  if (digits == name.size() || name.size() - digits > 7) return false;
  *rank = std::stoi(name.substr(digits));
  return true;
}

}  // namespace nsc::torch
