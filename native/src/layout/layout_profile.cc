#include "layout/layout_profile.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>

#include "util/errors.h"
#include "util/file_identity.h"
#include "util/input_file.h"

namespace nsc {

using nlohmann::json;

namespace {

// Invalid UTF-8 (only possible in hand-made profiles) becomes U+FFFD instead of throwing.
template <typename Json>
std::string dump_compact(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

constexpr uint64_t kMaxOffsetOrSize = uint64_t{1} << 32;  // no NCCL struct comes near 4 GiB
constexpr size_t kMaxArrayRank = 8;
constexpr size_t kMaxMembers = 1 << 16;
constexpr size_t kMaxNameLength = 4096;
constexpr uint64_t kMaxBitfieldBits = 64;

// Ordered keys when formatting ("name" first reads best), sorted in json values.
template <typename Json>
Json member_to_json(const MemberLayout& member) {
  Json out = Json::object();
  out["name"] = member.name;
  out["offset"] = member.offset;
  out["size"] = member.size;
  out["kind"] = value_kind_name(member.kind);
  if (!member.type_name.empty()) out["type"] = member.type_name;
  if (!member.array_dims.empty()) {
    out["element_size"] = member.element_size;
    out["dims"] = member.array_dims;
  }
  if (member.bit_size != 0) {
    out["bit_size"] = member.bit_size;
    out["bit_offset"] = member.bit_offset;
  }
  return out;
}

template <typename Json>
Json struct_header_to_json(const StructLayout& layout) {
  Json out = Json::object();
  out["size"] = layout.size;
  if (layout.is_union) out["union"] = true;
  return out;
}

json enum_to_json(const EnumLayout& layout) {
  json values = json::array();
  for (const auto& [value, name] : layout.values) values.push_back(json::array({value, name}));
  return json{{"size", layout.size}, {"values", values}};
}

// Reads one validated profile; every failure names the origin and the key path.
class ProfileReader {
 public:
  explicit ProfileReader(std::string origin) : origin_(std::move(origin)) {}

  LayoutProfile read(const json& document) {
    if (!document.is_object()) fail("(top level)", "expected a JSON object");
    std::string schema = string_at(document, "schema", "schema", true);
    if (schema != kLayoutSchema)
      fail("schema", "is \"" + schema + "\", expected \"" + kLayoutSchema + "\"");
    LayoutProfile profile;
    profile.build_id = string_at(document, "build_id", "build_id", true);
    check_build_id(profile.build_id);
    profile.nccl_version = string_at(document, "nccl_version", "nccl_version", false);
    profile.library = string_at(document, "library", "library", false);
    profile.source = "profile:" + origin_;
    read_structs(object_at(document, "structs", "structs"), &profile);
    read_enums(object_at(document, "enums", "enums"), &profile);
    read_symbols(document, &profile);
    read_constants(document, &profile);
    return profile;
  }

 private:
  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw BadInput("layout profile " + origin_ + ": bad key " + key + ": " + why);
  }

  const json& object_at(const json& parent, const char* key, const std::string& path) const {
    auto found = parent.find(key);
    if (found == parent.end()) fail(path, "missing");
    if (!found->is_object()) fail(path, "expected an object");
    return *found;
  }

  std::string string_at(const json& parent, const char* key, const std::string& path,
                        bool required) const {
    auto found = parent.find(key);
    if (found == parent.end()) {
      if (required) fail(path, "missing");
      return "";
    }
    return checked_string(*found, path);
  }

  std::string checked_string(const json& value, const std::string& path) const {
    if (!value.is_string()) fail(path, "expected a string");
    const std::string& text = value.get_ref<const std::string&>();
    if (text.size() > kMaxNameLength) fail(path, "string longer than 4096 bytes");
    return text;
  }

  uint64_t checked_unsigned(const json& value, const std::string& path, uint64_t limit) const {
    if (!value.is_number_unsigned())
      fail(path, "expected an unsigned integer, got " + truncated_dump(value));
    uint64_t number = value.get<uint64_t>();
    if (number >= limit) fail(path, std::to_string(number) + " is out of range");
    return number;
  }

  uint64_t unsigned_at(const json& parent, const char* key, const std::string& path,
                       uint64_t limit, std::optional<uint64_t> fallback) const {
    auto found = parent.find(key);
    if (found == parent.end()) {
      if (!fallback) fail(path, "missing");
      return *fallback;
    }
    return checked_unsigned(*found, path, limit);
  }

  static std::string truncated_dump(const json& value) {
    std::string text = value.dump();
    return text.size() > 40 ? text.substr(0, 40) + "..." : text;
  }

  void check_build_id(const std::string& build_id) const {
    if (build_id.size() > 128 || build_id.size() % 2 != 0)
      fail("build_id", "expected an even number of hex digits (at most 128)");
    for (char c : build_id)
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
        fail("build_id", "expected lower-case hex digits");
  }

  void read_structs(const json& structs, LayoutProfile* profile) const {
    for (const auto& [name, body] : structs.items()) {
      std::string path = "structs." + name;
      if (name.empty() || name.size() > kMaxNameLength) fail(path, "bad struct name");
      if (!body.is_object()) fail(path, "expected an object");
      StructLayout layout;
      layout.name = name;
      layout.size = unsigned_at(body, "size", path + ".size", kMaxOffsetOrSize, std::nullopt);
      auto is_union = body.find("union");
      if (is_union != body.end()) {
        if (!is_union->is_boolean()) fail(path + ".union", "expected true or false");
        layout.is_union = is_union->get<bool>();
      }
      auto members = body.find("members");
      if (members == body.end()) fail(path + ".members", "missing");
      if (!members->is_array()) fail(path + ".members", "expected an array");
      if (members->size() > kMaxMembers) fail(path + ".members", "too many members");
      for (size_t i = 0; i < members->size(); ++i)
        layout.members.push_back(
            read_member((*members)[i], path + ".members[" + std::to_string(i) + "]", layout.size));
      profile->structs[name] = std::move(layout);
    }
  }

  MemberLayout read_member(const json& body, const std::string& path, uint64_t struct_size) const {
    if (!body.is_object()) fail(path, "expected an object");
    MemberLayout member;
    member.name = string_at(body, "name", path + ".name", true);
    if (member.name.empty()) fail(path + ".name", "empty");
    member.offset = unsigned_at(body, "offset", path + ".offset", kMaxOffsetOrSize, std::nullopt);
    member.size = unsigned_at(body, "size", path + ".size", kMaxOffsetOrSize, std::nullopt);
    std::string kind = string_at(body, "kind", path + ".kind", true);
    auto parsed_kind = value_kind_from_name(kind);
    if (!parsed_kind) fail(path + ".kind", "unknown kind \"" + kind + "\"");
    member.kind = *parsed_kind;
    member.type_name = string_at(body, "type", path + ".type", false);
    read_dims(body, path, &member);
    member.bit_size = static_cast<uint32_t>(
        unsigned_at(body, "bit_size", path + ".bit_size", kMaxBitfieldBits + 1, 0));
    member.bit_offset = static_cast<uint32_t>(
        unsigned_at(body, "bit_offset", path + ".bit_offset", kMaxBitfieldBits * 8, 0));
    if (member.offset + member.size > struct_size)
      fail(path, "member ends at " + std::to_string(member.offset + member.size) +
                     ", past the struct size " + std::to_string(struct_size));
    return member;
  }

  void read_dims(const json& body, const std::string& path, MemberLayout* member) const {
    auto dims = body.find("dims");
    if (dims == body.end()) {
      member->element_size =
          unsigned_at(body, "element_size", path + ".element_size", kMaxOffsetOrSize, member->size);
      return;
    }
    if (!dims->is_array() || dims->empty() || dims->size() > kMaxArrayRank)
      fail(path + ".dims", "expected an array of 1 to 8 unsigned integers");
    uint64_t element_count = 1;
    for (size_t i = 0; i < dims->size(); ++i) {
      uint64_t dim = checked_unsigned((*dims)[i], path + ".dims[" + std::to_string(i) + "]",
                                      kMaxOffsetOrSize);
      member->array_dims.push_back(dim);
      // Both factors are below 2^32, so the product cannot overflow before the check.
      element_count *= dim;
      if (element_count >= kMaxOffsetOrSize) fail(path + ".dims", "too many elements");
    }
    member->element_size =
        unsigned_at(body, "element_size", path + ".element_size", kMaxOffsetOrSize, std::nullopt);
    if (element_count * member->element_size != member->size)
      fail(path + ".dims", "element_size times the dims is not the member size");
  }

  void read_enums(const json& enums, LayoutProfile* profile) const {
    for (const auto& [name, body] : enums.items()) {
      std::string path = "enums." + name;
      if (name.empty() || name.size() > kMaxNameLength) fail(path, "bad enum name");
      if (!body.is_object()) fail(path, "expected an object");
      EnumLayout layout;
      layout.name = name;
      layout.size = unsigned_at(body, "size", path + ".size", 9, std::nullopt);
      if (layout.size != 1 && layout.size != 2 && layout.size != 4 && layout.size != 8)
        fail(path + ".size", "expected 1, 2, 4 or 8");
      auto values = body.find("values");
      if (values == body.end() || !values->is_array())
        fail(path + ".values", "expected an array of [value, name] pairs");
      if (values->size() > kMaxMembers) fail(path + ".values", "too many values");
      for (size_t i = 0; i < values->size(); ++i) {
        std::string item_path = path + ".values[" + std::to_string(i) + "]";
        const json& pair = (*values)[i];
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer())
          fail(item_path, "expected [integer, name]");
        if (pair[0].is_number_unsigned() &&
            pair[0].get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          fail(item_path, "value out of the signed 64-bit range");
        layout.values.emplace(pair[0].get<int64_t>(), checked_string(pair[1], item_path));
      }
      profile->enums[name] = std::move(layout);
    }
  }

  void read_symbols(const json& document, LayoutProfile* profile) const {
    auto symbols = document.find("symbols");
    if (symbols == document.end()) return;
    if (!symbols->is_object()) fail("symbols", "expected an object");
    for (const auto& [name, value] : symbols->items()) {
      std::string path = "symbols." + name;
      if (!value.is_number_unsigned()) fail(path, "expected an unsigned integer");
      profile->symbols[name] = value.get<uint64_t>();
    }
  }

  void read_constants(const json& document, LayoutProfile* profile) const {
    auto constants = document.find("constants");
    if (constants == document.end()) return;
    if (!constants->is_object()) fail("constants", "expected an object");
    for (const auto& [name, value] : constants->items()) {
      std::string path = "constants." + name;
      if (!value.is_number_integer()) fail(path, "expected an integer");
      if (value.is_number_unsigned() &&
          value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(path, "out of the signed 64-bit range");
      profile->constants[name] = value.get<int64_t>();
    }
  }

  std::string origin_;
};

}  // namespace

json layout_profile_to_json(const LayoutProfile& profile) {
  json structs = json::object();
  for (const auto& [name, layout] : profile.structs) {
    json body = struct_header_to_json<json>(layout);
    json members = json::array();
    for (const MemberLayout& member : layout.members) members.push_back(member_to_json<json>(member));
    body["members"] = std::move(members);
    structs[name] = std::move(body);
  }
  json enums = json::object();
  for (const auto& [name, layout] : profile.enums) enums[name] = enum_to_json(layout);
  return json{{"schema", kLayoutSchema},
              {"build_id", profile.build_id},
              {"nccl_version", profile.nccl_version},
              {"library", profile.library},
              {"structs", structs},
              {"enums", enums},
              {"symbols", profile.symbols},
              {"constants", profile.constants}};
}

std::string format_layout_profile(const LayoutProfile& profile) {
  std::ostringstream out;
  out << "{\"schema\":" << dump_compact(json(kLayoutSchema)) << ",\n"
      << "\"build_id\":" << dump_compact(json(profile.build_id)) << ",\n"
      << "\"nccl_version\":" << dump_compact(json(profile.nccl_version)) << ",\n"
      << "\"library\":" << dump_compact(json(profile.library)) << ",\n"
      << "\"structs\":{";
  const char* struct_separator = "\n";
  for (const auto& [name, layout] : profile.structs) {
    std::string header = dump_compact(struct_header_to_json<nlohmann::ordered_json>(layout));
    header.pop_back();  // reopen the object to append the members array
    out << struct_separator << dump_compact(json(name)) << ":" << header << ",\"members\":[";
    const char* member_separator = "\n ";
    for (const MemberLayout& member : layout.members) {
      out << member_separator << dump_compact(member_to_json<nlohmann::ordered_json>(member));
      member_separator = ",\n ";
    }
    out << "]}";
    struct_separator = ",\n";
  }
  out << "},\n\"enums\":{";
  const char* enum_separator = "\n";
  for (const auto& [name, layout] : profile.enums) {
    out << enum_separator << dump_compact(json(name)) << ":" << dump_compact(enum_to_json(layout));
    enum_separator = ",\n";
  }
  out << "},\n\"symbols\":" << dump_compact(json(profile.symbols)) << ",\n"
      << "\"constants\":" << dump_compact(json(profile.constants)) << "}\n";
  return out.str();
}

void write_layout_profile(const LayoutProfile& profile, const std::string& path) {
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file) throw BadInput("layout profile " + path + ": cannot create " + temporary);
    file << format_layout_profile(profile);
    file.flush();
    if (!file) {
      std::remove(temporary.c_str());
      throw BadInput("layout profile " + path + ": write failed");
    }
  }
  // Readers never see a half-written profile.
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw BadInput("layout profile " + path + ": cannot rename " + temporary + " into place");
  }
}

LayoutProfile layout_profile_from_json(const json& document, const std::string& origin) {
  return ProfileReader(origin).read(document);
}

LayoutProfile parse_layout_profile(const std::string& text, const std::string& origin) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::exception& error) {
    std::string what = error.what();
    for (char& c : what)
      if (c == '\n') c = ' ';
    throw BadInput("layout profile " + origin + ": not valid JSON: " + what);
  }
  return layout_profile_from_json(document, origin);
}

namespace {

// Every rank of a run asks for the same few profiles (libnccl's, the interpreter's, libtorch's):
// each file is parsed once per run and copied out after (issue 35).
struct ParsedProfiles {
  std::mutex mutex;
  std::map<std::pair<std::string, FileIdentity>, LayoutProfile> by_file;
  std::map<std::string, size_t> parses;
};

ParsedProfiles& parsed_profiles() {
  static ParsedProfiles cache;
  return cache;
}

}  // namespace

LayoutProfile read_layout_profile(const std::string& path) {
  std::optional<FileIdentity> identity = file_identity(path);
  ParsedProfiles& cache = parsed_profiles();
  if (identity) {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto found = cache.by_file.find({path, *identity});
    if (found != cache.by_file.end()) return found->second;
  }
  LayoutProfile profile = parse_layout_profile(read_regular_file(path, "layout profile " + path), path);
  std::lock_guard<std::mutex> lock(cache.mutex);
  ++cache.parses[path];
  if (identity) cache.by_file.emplace(std::make_pair(path, *identity), profile);
  return profile;
}

size_t layout_profile_parses(const std::string& path) {
  ParsedProfiles& cache = parsed_profiles();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto found = cache.parses.find(path);
  return found == cache.parses.end() ? 0 : found->second;
}

}  // namespace nsc
