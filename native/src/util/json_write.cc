#include "util/json_write.h"

#include <algorithm>
#include <functional>
#include <future>
#include <vector>

#include "util/json_raw.h"
#include "util/json_scan.h"
#include "util/parallel.h"

namespace nsc {
namespace {

using nlohmann::json;
using Serializer = nlohmann::detail::serializer<json>;

constexpr unsigned kIndentStep = 2;

// Whether nlohmann writes `text` as it is: printable ASCII without a quote or a backslash
// (0x7f included: it escapes only control characters without ensure_ascii).
bool plain(const std::string& text) { return json_plain_prefix(text.data(), text.data() + text.size()) == text.size(); }

// One per thread and buffer: containers and plain strings written here, everything else
// (numbers, strings to escape or repair) by nlohmann's own serializer into the same buffer.
class PrettyWriter {
 public:
  // With `drain`, *out is handed to it (written out and emptied) whenever it passes
  // kJsonDrainAt, between array elements and inside a raw value: *out holds the text in order.
  explicit PrettyWriter(std::string* out, std::function<void()> drain = {})
      : out_(out),
        drain_(std::move(drain)),
        fallback_(nlohmann::detail::output_adapter<char>(*out), ' ', json::error_handler_t::replace) {}

  void value(const json& v, unsigned indent) {
    switch (v.type()) {
      case json::value_t::object: {
        const json::object_t& object = v.get_ref<const json::object_t&>();
        if (object.empty()) return out_->append("{}"), void();
        out_->append("{\n");
        size_t left = object.size();
        for (const auto& [key, child] : object) {
          out_->append(indent + kIndentStep, ' ');
          quoted(key);
          out_->append(": ");
          value(child, indent + kIndentStep);
          out_->append(--left ? ",\n" : "\n");
        }
        out_->append(indent, ' ');
        out_->push_back('}');
        return;
      }
      case json::value_t::array: {
        const json::array_t& array = v.get_ref<const json::array_t&>();
        if (array.empty()) return out_->append("[]"), void();
        out_->append("[\n");
        for (size_t i = 0; i < array.size(); ++i) element(array, i, indent + kIndentStep);
        out_->append(indent, ' ');
        out_->push_back(']');
        return;
      }
      case json::value_t::string: {
        const std::string& text = v.get_ref<const std::string&>();
        if (!plain(text)) return fallback_.dump(v, true, false, kIndentStep, indent);
        out_->push_back('"');
        out_->append(text);
        out_->push_back('"');
        return;
      }
      case json::value_t::binary:
        if (is_raw_json(v)) return append_pretty_compact_json(raw_json_text(v), indent, out_, drain_ ? &drain_ : nullptr);
        [[fallthrough]];
      default:
        fallback_.dump(v, true, false, kIndentStep, indent);
    }
  }

  // Element i of an array whose elements sit at `indent`, with its line's end.
  void element(const json::array_t& array, size_t i, unsigned indent) {
    out_->append(indent, ' ');
    value(array[i], indent);
    out_->append(i + 1 < array.size() ? ",\n" : "\n");
    if (drain_ && out_->size() >= kJsonDrainAt) drain_();
  }

  void quoted(const std::string& key) {
    if (!plain(key)) return fallback_.dump(json(key), true, false, kIndentStep, 0);
    out_->push_back('"');
    out_->append(key);
    out_->push_back('"');
  }

 private:
  std::string* out_;
  std::function<void()> drain_;
  Serializer fallback_;
};

// Roughly how much text an element is: its own and its members' raw values and strings, and
// its members' arrays at a few bytes an element (a report's per-rank arrays are of numbers).
size_t rough_size(const json& v) {
  auto own = [](const json& x) -> size_t {
    if (is_raw_json(x)) return raw_json_text(x).size();
    if (x.is_string()) return x.get_ref<const std::string&>().size();
    if (x.is_array()) return x.size() * 8;
    return 8;
  };
  if (!v.is_object()) return own(v);
  size_t size = 0;
  for (const auto& [key, child] : v.get_ref<const json::object_t&>()) size += key.size() + own(child);
  return size;
}

// Streams a document to a file: its first levels walked here, the buffer written out between
// elements, big arrays' elements written over the CPUs into one buffer per chunk.
class Streamer {
 public:
  Streamer(std::FILE* file, size_t parallel_from)
      : file_(file), parallel_from_(parallel_from), writer_(&buffer_, [this] { drain(0); }) {}

  void value(const json& v, unsigned indent, int depth) {
    if (depth >= kDepthWalked || !(v.is_object() || v.is_array()) || v.empty()) return writer_.value(v, indent);
    if (v.is_object()) {
      buffer_.append("{\n");
      size_t left = v.size();
      for (const auto& [key, child] : v.get_ref<const json::object_t&>()) {
        buffer_.append(indent + kIndentStep, ' ');
        writer_.quoted(key);
        buffer_.append(": ");
        value(child, indent + kIndentStep, depth + 1);
        buffer_.append(--left ? ",\n" : "\n");
        drain();
      }
      buffer_.append(indent, ' ');
      buffer_.push_back('}');
      return;
    }
    const json::array_t& array = v.get_ref<const json::array_t&>();
    buffer_.append("[\n");
    if (array.size() >= parallel_from_) {
      parallel_elements(array, indent + kIndentStep);
    } else {
      for (size_t i = 0; i < array.size(); ++i) {
        buffer_.append(indent + kIndentStep, ' ');
        value(array[i], indent + kIndentStep, depth + 1);
        buffer_.append(i + 1 < array.size() ? ",\n" : "\n");
        drain();
      }
    }
    buffer_.append(indent, ' ');
    buffer_.push_back(']');
  }

  bool finish() {
    drain(0);
    return ok_;
  }

 private:
  static constexpr int kDepthWalked = 3;         // report -> graph -> nodes
  static constexpr size_t kChunk = 256;          // elements a thread writes in one turn
  static constexpr size_t kChunksInWindow = 16;  // chunks held before they are written out

  // An element of a megabyte or more (the world communicator's per-rank counters: tens of MB at
  // 100,000 ranks) is written here, streamed; a chunk's buffer would hold it whole and keep
  // that size. The runs between such elements are written over the CPUs.
  void parallel_elements(const json::array_t& array, unsigned indent) {
    drain(0);
    size_t run = 0;
    for (size_t i : big_elements(array)) {
      parallel_run(array, run, i, indent);
      writer_.element(array, i, indent);
      drain(0);
      run = i + 1;
    }
    parallel_run(array, run, array.size(), indent);
  }

  // The elements of a megabyte or more, in order, found over the CPUs (100,000 graph nodes'
  // members walked on one CPU took a tenth of a second while the other idled).
  static std::vector<size_t> big_elements(const json::array_t& array) {
    constexpr size_t kRange = 4096;
    std::vector<std::vector<size_t>> found((array.size() + kRange - 1) / kRange);
    for_each_range(array.size(), kRange, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i)
        if (rough_size(array[i]) >= kJsonDrainAt) found[begin / kRange].push_back(i);
    });
    std::vector<size_t> all;
    for (const std::vector<size_t>& range : found) all.insert(all.end(), range.begin(), range.end());
    return all;
  }

  // Elements [from, to): a window's chunks are written out on another thread while the next
  // window is formatted (two sets of chunks in turn): the write's copy into the page cache
  // overlaps the work.
  void parallel_run(const json::array_t& array, size_t from, size_t to, unsigned indent) {
    std::vector<std::string> windows[2] = {std::vector<std::string>(kChunksInWindow),
                                           std::vector<std::string>(kChunksInWindow)};
    std::future<void> writing;
    int turn = 0;
    for (size_t window = from; window < to; window += kChunk * kChunksInWindow, turn ^= 1) {
      size_t count = std::min(to - window, kChunk * kChunksInWindow);
      std::vector<std::string>& chunks = windows[turn];
      for_each_range(count, kChunk, [&](size_t begin, size_t end) {
        for (size_t first = begin; first < end; first += kChunk) {  // one chunk a turn, or all on one CPU
          std::string& out = chunks[first / kChunk];
          out.clear();
          PrettyWriter writer(&out);
          for (size_t i = first; i < std::min(end, first + kChunk); ++i) writer.element(array, window + i, indent);
        }
      });
      if (writing.valid()) writing.get();
      writing = std::async(std::launch::async, [this, &chunks, count] {
        for (size_t c = 0; c * kChunk < count; ++c) put(chunks[c]);
      });
    }
    if (writing.valid()) writing.get();
  }

  void drain(size_t above = kJsonDrainAt) {
    if (buffer_.size() < above) return;
    put(buffer_);
    buffer_.clear();
  }

  void put(const std::string& text) {
    if (!text.empty() && std::fwrite(text.data(), 1, text.size(), file_) != text.size()) ok_ = false;
  }

  std::FILE* file_;
  size_t parallel_from_;
  std::string buffer_;
  PrettyWriter writer_;
  bool ok_ = true;
};

}  // namespace

void append_pretty_json(const json& value, std::string* out, unsigned current_indent) {
  PrettyWriter(out).value(value, current_indent);
}

bool write_pretty_json(const json& value, std::FILE* file, size_t parallel_from) {
  Streamer streamer(file, std::max<size_t>(parallel_from, 1));
  streamer.value(value, 0, 0);
  return streamer.finish();
}

}  // namespace nsc
