// DWARF extraction of tests/fixtures/layout_types_fixture.cc, checked against
// the offsets the compiler itself reports when the fixture runs.
#define BOOST_TEST_MODULE layout_synthetic
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "layout/dwarf_layout.h"

namespace nsc {
// Lets Boost.Test print ValueKind in failure messages.
std::ostream& operator<<(std::ostream& out, ValueKind kind) { return out << value_kind_name(kind); }
}  // namespace nsc

namespace {

std::string fixture_path() {
  return std::string(NCCLSCOPE_BINARY_DIR) + "/fixtures/layout_types_fixture";
}

struct Extracted {
  nsc::LayoutProfile profile;
  nlohmann::json compiler;  // what the fixture printed: offsetof-style facts
  Extracted() {
    profile = nsc::extract_layout_from_dwarf(fixture_path(),
                                             {"LayoutOuter", "LayoutOuter::Inner", "LayoutAnon_t"},
                                             {"LayoutColor", "LayoutBig_t", "NoSuchEnum"});
    FILE* pipe = popen(fixture_path().c_str(), "r");
    BOOST_REQUIRE(pipe != nullptr);
    std::string output;
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
    BOOST_REQUIRE(pclose(pipe) == 0);
    compiler = nlohmann::json::parse(output);
  }
  const nsc::MemberLayout& member(const std::string& name) const {
    const nsc::MemberLayout* found = profile.find_struct("LayoutOuter")->find(name);
    BOOST_REQUIRE_MESSAGE(found != nullptr, "LayoutOuter." << name);
    return *found;
  }
  uint64_t expected(const std::string& key) const { return compiler.at(key).get<uint64_t>(); }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(synthetic, Extracted)

BOOST_AUTO_TEST_CASE(sizes_and_plain_offsets) {
  BOOST_REQUIRE(profile.find_struct("LayoutOuter") != nullptr);
  BOOST_TEST(profile.find_struct("LayoutOuter")->size == expected("sizeof_outer"));
  BOOST_TEST(profile.find_struct("LayoutOuter::Inner")->size == expected("sizeof_inner"));
  BOOST_TEST(profile.find_struct("LayoutAnon_t")->size == expected("sizeof_anon"));
  for (const char* name : {"inner", "inner_pointer", "named_anonymous", "matrix", "anon_typedef",
                           "cv_int", "color", "big", "self", "callback", "inners", "packed",
                           "tail"})
    BOOST_TEST(member(name).offset == expected(name), name);
  BOOST_TEST(profile.find_struct("LayoutOuter::Inner")->find("y")->offset == expected("inner_y"));
}

BOOST_AUTO_TEST_CASE(base_class_and_anonymous_union_flatten) {
  BOOST_TEST(member("base_field").offset == expected("base_field"));
  BOOST_TEST(member("union_int").offset == expected("union_int"));
  BOOST_TEST(member("union_float").offset == expected("union_float"));
  BOOST_TEST(member("union_float").kind == nsc::ValueKind::kFloat);
  // A named member of anonymous struct type gets a synthetic, stable type name.
  BOOST_TEST(member("named_anonymous").type_name == "(anonymous LayoutOuter::named_anonymous)");
  BOOST_TEST(profile.find_struct("(anonymous LayoutOuter::named_anonymous)")->find("q")->offset == 4u);
}

BOOST_AUTO_TEST_CASE(bitfields) {
  for (const char* name : {"flag_a", "flag_b", "signed_bits"}) {
    const nsc::MemberLayout& field = member(name);
    BOOST_TEST(field.offset * 8 + field.bit_offset == expected(std::string(name) + "_bit"), name);
  }
  BOOST_TEST(member("flag_b").bit_size == 5u);
  BOOST_TEST(member("signed_bits").bit_size == 10u);
  BOOST_TEST(member("signed_bits").kind == nsc::ValueKind::kSigned);
  BOOST_TEST(member("flag_a").kind == nsc::ValueKind::kUnsigned);
}

BOOST_AUTO_TEST_CASE(packed_bitfields_stay_inside_their_struct) {
  const nsc::StructLayout* packed = profile.find_struct("LayoutPacked");
  BOOST_REQUIRE(packed != nullptr);  // reached by value from LayoutOuter
  BOOST_TEST(packed->size == expected("sizeof_packed"));
  uint64_t base_bits = expected("packed") * 8;
  for (const char* name : {"low", "high"}) {
    const nsc::MemberLayout* field = packed->find(name);
    BOOST_TEST(base_bits + field->offset * 8 + field->bit_offset ==
                   expected(std::string("packed_") + name + "_bit"),
               name);
    BOOST_TEST(field->offset + field->size <= packed->size, name);
  }
  BOOST_TEST(packed->find("high")->bit_size == 7u);
}

BOOST_AUTO_TEST_CASE(arrays_pointers_and_qualifiers) {
  BOOST_TEST(member("matrix").array_dims == std::vector<uint64_t>({3, 4}),
             boost::test_tools::per_element());
  BOOST_TEST(member("matrix").element_size == 8u);
  BOOST_TEST(member("matrix").size == 96u);
  BOOST_TEST(member("inners").type_name == "LayoutOuter::Inner");
  BOOST_TEST(member("inners").element_size == expected("sizeof_inner"));
  BOOST_TEST(member("tail").array_dims == std::vector<uint64_t>({0}), boost::test_tools::per_element());
  BOOST_TEST(member("tail").size == 0u);
  BOOST_TEST(member("inner_pointer").kind == nsc::ValueKind::kPointer);
  BOOST_TEST(member("inner_pointer").type_name == "LayoutOuter::Inner");
  BOOST_TEST(member("self").type_name == "LayoutOuter");
  BOOST_TEST(member("callback").type_name == "function");
  BOOST_TEST(member("cv_int").type_name == "int");  // const volatile stripped
  BOOST_TEST(member("cv_int").kind == nsc::ValueKind::kSigned);
  BOOST_TEST(member("anon_typedef").type_name == "LayoutAnon_t");
}

BOOST_AUTO_TEST_CASE(enums_signed_unsigned_and_missing) {
  const nsc::EnumLayout* color = profile.find_enum("LayoutColor");
  BOOST_REQUIRE(color != nullptr);
  BOOST_TEST(color->size == 1u);
  BOOST_TEST(color->name_of(-2).value_or("?") == "kNegative");
  BOOST_TEST(color->name_of(5).value_or("?") == "kPositive");
  BOOST_TEST(member("color").kind == nsc::ValueKind::kEnum);
  const nsc::EnumLayout* big = profile.find_enum("LayoutBig_t");
  BOOST_REQUIRE(big != nullptr);
  BOOST_TEST(big->name_of(0x80000000LL).value_or("?") == "kLayoutBigHigh");  // not sign-extended
  BOOST_TEST(profile.find_enum("NoSuchEnum") == nullptr);  // missing roots are skipped
}

BOOST_AUTO_TEST_SUITE_END()
