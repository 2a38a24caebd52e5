#include "torch/fr_dump_reader.h"

#include <cctype>
#include <charconv>
#include <cstring>

#include "util/errors.h"

namespace nsc::torch {
namespace {

// The pickle machine's values, in one arena: no value owns heap memory but containers'
// item lists, so a dump of 2,000 entries is read in a few milliseconds.
enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kText, kList, kTuple, kDict, kMark };

// 32 bytes. The schema pass keeps what it learns of a text in the text's own value (its string
// id, the dump field it names): a memoized string is one value however often the pickle
// repeats it, so each key is classified and each string interned once per dump.
constexpr int8_t kFieldNotLooked = -2;

struct Value {
  Kind kind = Kind::kNone;
  bool flag = false;
  int8_t field = kFieldNotLooked;  // a text used as a dict key: the field it names (-1: none)
  uint32_t items = 0;              // containers: index into Machine::items_ (a dict: key, value, key, ...)
  union {
    int64_t integer = 0;  // a text: its string id once interned, -1 before
    double real;
  };
  std::string_view text;  // into the file's bytes
};

constexpr uint32_t kNoValue = UINT32_MAX;

Value value_of(Kind kind) {
  Value value;
  value.kind = kind;
  return value;
}

// The machine's storage, kept per thread from one dump to the next: a dump of 2,000 entries
// makes ~200,000 values and ~30,000 containers, and allocating them afresh for each of 4,096
// dumps cost more (page faults, malloc) than reading them.
struct Arena {
  std::vector<Value> values;
  std::vector<std::vector<uint32_t>> items;  // the first `items_used` are live
  size_t items_used = 0;
  std::vector<uint32_t> stack, memo, popped;
  std::vector<size_t> marks;

  void reset() {
    values.clear();
    items_used = 0;
    stack.clear();
    memo.clear();
    marks.clear();
  }
  uint32_t new_items() {
    if (items_used == items.size()) items.emplace_back();
    items[items_used].clear();
    return static_cast<uint32_t>(items_used++);
  }
};

class Machine {
 public:
  Machine(std::string_view bytes, const std::string& name, Arena* arena)
      : bytes_(bytes), name_(name), values_(arena->values), items_(arena->items), stack_(arena->stack),
        memo_(arena->memo), popped_(arena->popped), marks_(arena->marks), arena_(*arena) {
    arena->reset();
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
    if (stack_.size() != 1 || marks_.size() != 0) fail("malformed pickle: " + std::to_string(stack_.size()) + " values left at STOP");
    return stack_.back();
  }

  const Value& value(uint32_t id) const { return values_[id]; }
  Value& value(uint32_t id) { return values_[id]; }
  const std::vector<uint32_t>& items(const Value& container) const { return items_[container.items]; }
  [[noreturn]] void fail(const std::string& why) const { throw BadInput(name_ + ": " + why); }

 private:
  void step(uint8_t op) {
    switch (op) {
      case 0x80: take(1); return;                    // PROTO n
      case 0x95: take(8); return;                    // FRAME (protocol 4+): a length hint only
      case '(': marks_.push_back(stack_.size()); return;  // MARK
      case '0': pop(); return;                       // POP
      case '1': pop_mark(); return;                  // POP_MARK
      case '2': push_id(top()); return;              // DUP
      case 'N': push(value_of(Kind::kNone)); return;
      case 0x88: case 0x89: { Value v = value_of(Kind::kBool); v.flag = op == 0x88; push(v); return; }
      case 'J': push_int(static_cast<int32_t>(le(4))); return;   // BININT
      case 'K': push_int(static_cast<int64_t>(le(1))); return;   // BININT1
      case 'M': push_int(static_cast<int64_t>(le(2))); return;   // BININT2
      case 0x8a: push_long(le(1)); return;                        // LONG1
      case 'G': push_float(); return;                             // BINFLOAT
      case 'X': push_text(le(4)); return;                         // BINUNICODE
      case 0x8c: push_text(le(1)); return;                        // SHORT_BINUNICODE
      case 0x8d: push_text(le(8)); return;                        // BINUNICODE8
      case ']': push_container(Kind::kList); return;              // EMPTY_LIST
      case '}': push_container(Kind::kDict); return;              // EMPTY_DICT
      case ')': push_container(Kind::kTuple); return;             // EMPTY_TUPLE
      case 'l': collect_marked(Kind::kList); return;              // LIST
      case 'd': collect_marked(Kind::kDict); return;              // DICT
      case 't': collect_marked(Kind::kTuple); return;             // TUPLE
      case 0x85: collect(Kind::kTuple, pop_n(1)); return;         // TUPLE1
      case 0x86: collect(Kind::kTuple, pop_n(2)); return;         // TUPLE2
      case 0x87: collect(Kind::kTuple, pop_n(3)); return;         // TUPLE3
      case 'a': append_to(Kind::kList, pop_n(1)); return;         // APPEND
      case 'e': append_marked(Kind::kList); return;               // APPENDS
      case 's': append_to(Kind::kDict, pop_n(2)); return;         // SETITEM
      case 'u': append_marked(Kind::kDict); return;               // SETITEMS
      case 'q': memo_put(le(1)); return;                          // BINPUT
      case 'r': memo_put(le(4)); return;                          // LONG_BINPUT
      case 0x94: memo_put(memo_.size()); return;                  // MEMOIZE
      case 'h': push_id(memo_get(le(1))); return;                 // BINGET
      case 'j': push_id(memo_get(le(4))); return;                 // LONG_BINGET
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

  std::string_view take(uint64_t count) {
    if (count > bytes_.size() - at_) fail("truncated: the pickle ends inside an opcode's argument");
    std::string_view out = bytes_.substr(at_, count);
    at_ += count;
    return out;
  }
  uint64_t le(int width) {
    std::string_view raw = take(width);
    uint64_t value = 0;
    for (int i = width - 1; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(raw[i]);
    return value;
  }

  uint32_t push(const Value& value) {
    if (values_.size() >= kMaxValues) fail("malformed pickle: more values than a dump of its size can hold");
    values_.push_back(value);
    uint32_t id = static_cast<uint32_t>(values_.size() - 1);
    stack_.push_back(id);
    return id;
  }
  void push_id(uint32_t id) { stack_.push_back(id); }
  void push_int(int64_t number) { Value v = value_of(Kind::kInt); v.integer = number; push(v); }
  void push_long(uint64_t count) {
    std::string_view raw = take(count);
    if (count > 8) fail("integer wider than 64 bits");
    uint64_t bits = 0;
    for (size_t i = count; i-- > 0;) bits = (bits << 8) | static_cast<uint8_t>(raw[i]);
    if (count > 0 && count < 8 && (static_cast<uint8_t>(raw[count - 1]) & 0x80)) bits |= ~0ull << (8 * count);
    push_int(static_cast<int64_t>(bits));
  }
  void push_float() {
    std::string_view raw = take(8);
    uint64_t bits = 0;
    for (char byte : raw) bits = (bits << 8) | static_cast<uint8_t>(byte);  // big-endian
    Value v = value_of(Kind::kFloat);
    std::memcpy(&v.real, &bits, sizeof bits);
    push(v);
  }
  void push_text(uint64_t length) {
    Value v = value_of(Kind::kText);
    v.text = take(length);
    v.integer = -1;
    push(v);
  }
  void push_container(Kind kind) {
    Value v = value_of(kind);
    v.items = arena_.new_items();
    push(v);
  }

  uint32_t top() const {
    if (stack_.size() <= floor()) fail("malformed pickle: stack underflow");
    return stack_.back();
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  uint32_t pop() { uint32_t id = top(); stack_.pop_back(); return id; }
  // The values popped go to one reused list (valid until the next pop).
  const std::vector<uint32_t>& pop_n(size_t count) {
    if (stack_.size() < floor() + count) fail("malformed pickle: stack underflow");
    popped_.assign(stack_.end() - count, stack_.end());
    stack_.resize(stack_.size() - count);
    return popped_;
  }
  const std::vector<uint32_t>& pop_mark() {
    if (marks_.empty()) fail("malformed pickle: no MARK");
    size_t mark = marks_.back();
    marks_.pop_back();
    popped_.assign(stack_.begin() + mark, stack_.end());
    stack_.resize(mark);
    return popped_;
  }

  // LIST, DICT, TUPLE: the values above the last MARK become the container, copied once.
  void collect_marked(Kind kind) {
    if (marks_.empty()) fail("malformed pickle: no MARK");
    size_t mark = marks_.back();
    marks_.pop_back();
    if (kind == Kind::kDict && (stack_.size() - mark) % 2) fail("malformed pickle: a dict with a key and no value");
    uint32_t list = arena_.new_items();
    items_[list].assign(stack_.begin() + mark, stack_.end());
    stack_.resize(mark);
    Value v = value_of(kind);
    v.items = list;
    push(v);
  }
  // APPENDS, SETITEMS: the values above the last MARK go into the container below it.
  void append_marked(Kind kind) {
    if (marks_.empty()) fail("malformed pickle: no MARK");
    size_t mark = marks_.back();
    marks_.pop_back();
    if (mark == 0 || mark <= floor()) fail("malformed pickle: stack underflow");
    const Value& target = values_[stack_[mark - 1]];
    if (target.kind != kind) fail("malformed pickle: items added to a value that is not a " + std::string(kind == Kind::kList ? "list" : "dict"));
    if (kind == Kind::kDict && (stack_.size() - mark) % 2) fail("malformed pickle: a dict with a key and no value");
    std::vector<uint32_t>& list = items_[target.items];
    list.insert(list.end(), stack_.begin() + mark, stack_.end());
    stack_.resize(mark);
  }

  void collect(Kind kind, const std::vector<uint32_t>& members) {
    uint32_t id = push(value_of(kind));
    uint32_t list = arena_.new_items();
    values_[id].items = list;
    items_[list].assign(members.begin(), members.end());
  }
  void append_to(Kind kind, const std::vector<uint32_t>& members) {
    const Value& target = values_[top()];
    if (target.kind != kind) fail("malformed pickle: items added to a value that is not a " + std::string(kind == Kind::kList ? "list" : "dict"));
    if (kind == Kind::kDict && members.size() % 2) fail("malformed pickle: a dict with a key and no value");
    std::vector<uint32_t>& list = items_[target.items];
    list.insert(list.end(), members.begin(), members.end());
  }

  void memo_put(uint64_t index) {
    if (index > bytes_.size()) fail("malformed pickle: memo index " + std::to_string(index) + " out of range");
    if (memo_.size() <= index) memo_.resize(index + 1, kNoValue);
    memo_[index] = top();
  }
  uint32_t memo_get(uint64_t index) const {
    if (index >= memo_.size() || memo_[index] == kNoValue)
      fail("malformed pickle: memo " + std::to_string(index) + " read before it was written");
    return memo_[index];
  }

  static constexpr size_t kMaxValues = 1u << 28;
  std::string_view bytes_;
  const std::string& name_;
  size_t at_ = 2;
  std::vector<Value>& values_;
  std::vector<std::vector<uint32_t>>& items_;
  std::vector<uint32_t>& stack_;
  std::vector<uint32_t>& memo_;
  std::vector<uint32_t>& popped_;
  std::vector<size_t>& marks_;
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
      out_.version = std::string(version->text);
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
      if (k.kind == Kind::kText && k.text == key) return &m_.value(items[i + 1]);
    }
    return nullptr;
  }
  std::string text(const Value* value) const {
    return value && value->kind == Kind::kText ? std::string(value->text) : std::string();
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
      out_.pg_status.push_back({key.kind == Kind::kText ? std::string(key.text) : std::to_string(key.integer),
                                integer(member(row, "last_enqueued_collective")),
                                integer(member(row, "last_started_collective")),
                                integer(member(row, "last_completed_collective"))});
    }
  }

  // A string value's id in the rank's table; memoized strings (the same value again) are
  // interned once: PyTorch's pickler memoizes every repeated string.
  uint32_t text_id(Value* value) {
    if (value == nullptr || value->kind != Kind::kText) return 0;
    if (value->integer < 0) {
      buffer_.assign(value->text.data(), value->text.size());
      value->integer = out_.intern(buffer_);
    }
    return static_cast<uint32_t>(value->integer);
  }
  // The field a dict key names, looked up once per key value.
  static int field_of(Value& key) {
    if (key.kind != Kind::kText) return -1;
    if (key.field == kFieldNotLooked) key.field = static_cast<int8_t>(field_named(key.text));
    return key.field;
  }

  // "[[65536], [2, 3]]": PyTorch's own repr of sizes, built in a reused buffer.
  // The text built in buffer_, interned; the same text as this field had in the entry before
  // (a job repeats its shapes) costs one comparison instead of a hash lookup.
  struct Recent {
    std::string text;
    uint32_t id = kNoValue;
  };
  uint32_t intern_buffer(Recent* recent) {
    if (recent->id == kNoValue || recent->text != buffer_) {
      recent->text = buffer_;
      recent->id = out_.intern(buffer_);
    }
    return recent->id;
  }

  uint32_t sizes(const Value* list, Recent* recent) {
    buffer_ = "[";
    if (list != nullptr && list->kind == Kind::kList) {
      bool first_tensor = true;
      for (uint32_t id : m_.items(*list)) {
        const Value& tensor = m_.value(id);
        buffer_ += first_tensor ? "[" : ", [";
        first_tensor = false;
        bool first_dim = true;
        if (tensor.kind == Kind::kList || tensor.kind == Kind::kTuple)
          for (uint32_t dim : m_.items(tensor))
            if (m_.value(dim).kind == Kind::kInt) {
              if (!first_dim) buffer_ += ", ";
              first_dim = false;
              char digits[24];
              auto written = std::to_chars(digits, digits + sizeof digits, m_.value(dim).integer);
              buffer_.append(digits, written.ptr);
            }
        buffer_ += "]";
      }
    }
    buffer_ += "]";
    return intern_buffer(recent);
  }
  uint32_t dtypes(const Value* list, Recent* recent) {
    buffer_ = "[";
    if (list != nullptr && list->kind == Kind::kList)
      for (uint32_t id : m_.items(*list))
        if (m_.value(id).kind == Kind::kText) {
          if (buffer_.size() > 1) buffer_ += ", ";
          buffer_.append(m_.value(id).text.data(), m_.value(id).text.size());
        }
    buffer_ += "]";
    return intern_buffer(recent);
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
    std::string_view state_text = state && state->kind == Kind::kText ? state->text : std::string_view();
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
    record.stack = out_.intern_stack(frames_);
    out_.records.push_back(record);
  }

  std::string buffer_;
  Recent recent_[4];  // input sizes, output sizes, input dtypes, output dtypes
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
