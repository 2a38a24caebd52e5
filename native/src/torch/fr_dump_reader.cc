#include "torch/fr_dump_reader.h"

#include <cctype>
#include <cstring>

#include "util/errors.h"

namespace nsc::torch {
namespace {

// The pickle machine's values, in one arena: no value owns heap memory but containers'
// item lists, so a dump of 2,000 entries is read in a few milliseconds.
enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kText, kList, kTuple, kDict, kMark };

struct Value {
  Kind kind = Kind::kNone;
  bool flag = false;
  int64_t integer = 0;
  double real = 0;
  std::string_view text;  // into the file's bytes
  uint32_t items = 0;     // containers: index into Machine::items_ (a dict: key, value, key, ...)
};

constexpr uint32_t kNoValue = UINT32_MAX;

Value value_of(Kind kind) {
  Value value;
  value.kind = kind;
  return value;
}

class Machine {
 public:
  Machine(std::string_view bytes, const std::string& name) : bytes_(bytes), name_(name) {}

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
      case 'l': collect(Kind::kList, pop_mark()); return;         // LIST
      case 'd': collect_dict(pop_mark()); return;                 // DICT
      case 't': collect(Kind::kTuple, pop_mark()); return;        // TUPLE
      case 0x85: collect(Kind::kTuple, pop_n(1)); return;         // TUPLE1
      case 0x86: collect(Kind::kTuple, pop_n(2)); return;         // TUPLE2
      case 0x87: collect(Kind::kTuple, pop_n(3)); return;         // TUPLE3
      case 'a': append_to(Kind::kList, pop_n(1)); return;         // APPEND
      case 'e': append_to(Kind::kList, pop_mark()); return;       // APPENDS
      case 's': append_to(Kind::kDict, pop_n(2)); return;         // SETITEM
      case 'u': append_to(Kind::kDict, pop_mark()); return;       // SETITEMS
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
  void push_text(uint64_t length) { Value v = value_of(Kind::kText); v.text = take(length); push(v); }
  void push_container(Kind kind) {
    Value v{kind};
    v.items = static_cast<uint32_t>(items_.size());
    items_.emplace_back();
    push(v);
  }

  uint32_t top() const {
    if (stack_.size() <= floor()) fail("malformed pickle: stack underflow");
    return stack_.back();
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  uint32_t pop() { uint32_t id = top(); stack_.pop_back(); return id; }
  std::vector<uint32_t> pop_n(size_t count) {
    if (stack_.size() < floor() + count) fail("malformed pickle: stack underflow");
    std::vector<uint32_t> out(stack_.end() - count, stack_.end());
    stack_.resize(stack_.size() - count);
    return out;
  }
  std::vector<uint32_t> pop_mark() {
    if (marks_.empty()) fail("malformed pickle: no MARK");
    size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<uint32_t> out(stack_.begin() + mark, stack_.end());
    stack_.resize(mark);
    return out;
  }

  void collect(Kind kind, std::vector<uint32_t> members) {
    uint32_t id = push(value_of(kind));
    values_[id].items = static_cast<uint32_t>(items_.size());
    items_.push_back(std::move(members));
  }
  void collect_dict(std::vector<uint32_t> members) {
    if (members.size() % 2) fail("malformed pickle: a dict with a key and no value");
    collect(Kind::kDict, std::move(members));
  }
  void append_to(Kind kind, std::vector<uint32_t> members) {
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
  std::vector<Value> values_;
  std::vector<std::vector<uint32_t>> items_;
  std::vector<uint32_t> stack_, memo_;
  std::vector<size_t> marks_;

};

// The dump's schema over the machine's values: only the keys triage uses, each type-checked.
class DumpReader {
 public:
  DumpReader(const Machine& machine, const std::string& name) : m_(machine), name_(name) {}

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

  uint32_t sizes(const Value* list) {
    if (list == nullptr || list->kind != Kind::kList) return out_.intern("[]");
    std::vector<std::vector<int64_t>> tensors;
    for (uint32_t id : m_.items(*list)) {
      const Value& tensor = m_.value(id);
      tensors.emplace_back();
      if (tensor.kind == Kind::kList || tensor.kind == Kind::kTuple)
        for (uint32_t dim : m_.items(tensor))
          if (m_.value(dim).kind == Kind::kInt) tensors.back().push_back(m_.value(dim).integer);
    }
    return out_.intern(fr_sizes_text(tensors));
  }
  uint32_t dtypes(const Value* list) {
    std::string text = "[";
    if (list != nullptr && list->kind == Kind::kList)
      for (uint32_t id : m_.items(*list))
        if (m_.value(id).kind == Kind::kText) text += (text.size() > 1 ? ", " : "") + std::string(m_.value(id).text);
    return out_.intern(text + "]");
  }

  void read_entry(const Value& entry, size_t index) {
    if (entry.kind != Kind::kDict)
      m_.fail("not a flight-recorder dump: entry " + std::to_string(index) + " is not a dict");
    FrRecord record;
    record.record_id = integer(member(entry, "record_id"));
    record.collective_seq = integer(member(entry, "collective_seq_id"));
    record.p2p_seq = integer(member(entry, "p2p_seq_id"));
    const Value* pg = member(entry, "process_group");
    const Value* name = member(entry, "profiling_name");
    if (pg == nullptr || pg->kind != Kind::kTuple || m_.items(*pg).size() != 2 || name == nullptr ||
        name->kind != Kind::kText)
      m_.fail("not a flight-recorder dump: entry " + std::to_string(index) + " has no process_group or profiling_name");
    record.pg_name = out_.intern(text(&m_.value(m_.items(*pg)[0])));
    record.pg_desc = out_.intern(text(&m_.value(m_.items(*pg)[1])));
    record.profiling_name = out_.intern(std::string(name->text));
    record.input_sizes = sizes(member(entry, "input_sizes"));
    record.output_sizes = sizes(member(entry, "output_sizes"));
    record.input_dtypes = dtypes(member(entry, "input_dtypes"));
    record.output_dtypes = dtypes(member(entry, "output_dtypes"));
    std::string state = text(member(entry, "state"));
    record.state = state == "scheduled" ? FrState::kScheduled
                   : state == "started" ? FrState::kStarted
                   : state == "completed" ? FrState::kCompleted : FrState::kUnknown;
    const Value* p2p = member(entry, "is_p2p");
    record.is_p2p = p2p && p2p->kind == Kind::kBool && p2p->flag;
    std::vector<FrFrame> frames;
    if (const Value* list = member(entry, "frames"); list && list->kind == Kind::kList)
      for (uint32_t id : m_.items(*list)) {
        const Value& frame = m_.value(id);
        if (frame.kind != Kind::kDict) continue;
        frames.push_back({out_.intern(text(member(frame, "name"))), out_.intern(text(member(frame, "filename"))),
                          integer(member(frame, "line"))});
      }
    record.stack = out_.intern_stack(std::move(frames));
    out_.records.push_back(record);
  }

  const Machine& m_;
  const std::string& name_;
  FrRankRecords out_;
};

}  // namespace

bool looks_like_pickle(std::string_view head) {
  return head.size() >= 2 && static_cast<uint8_t>(head[0]) == 0x80 && head[1] >= 2 && head[1] <= 5;
}

FrRankRecords read_fr_dump(std::string_view bytes, const std::string& name) {
  Machine machine(bytes, name);
  uint32_t root = machine.run();
  return DumpReader(machine, name).read(root);
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
