// The shipped CPython layout profiles turned into PythonOffsets, checked
// against gdb's `ptype/o` of the same DWARF (Debian 3.11.2: python3.11-dbg's
// debug file; Ubuntu 3.12.3: layout_tu.c built against python3.12-dev's headers).
#define BOOST_TEST_MODULE python_layout
#include <boost/test/unit_test.hpp>

#include "layout/layout_profile.h"
#include "python/python_layout.h"
#include "python/python_offsets.h"

namespace {

nsc::PythonOffsets offsets_of(const std::string& build_id) {
  return nsc::python_offsets_from_layout(
      nsc::read_layout_profile(std::string(NCCLSCOPE_SOURCE_DIR) + "/native/profiles/" + build_id + ".json"));
}

}  // namespace

BOOST_AUTO_TEST_CASE(debian_3_11_2) {
  nsc::PythonOffsets offsets = offsets_of("c561f3aa7232f2bd6ac6d56bd475f1c154a00486");
  BOOST_TEST(nsc::py_version_text(offsets.version_hex) == "3.11.2");
  // gdb: ptype/o struct _PyInterpreterFrame, struct _ts, struct _PyCFrame
  BOOST_TEST(offsets.frame_code == 32u);
  BOOST_TEST(offsets.frame_previous == 48u);
  BOOST_TEST(offsets.frame_instr == 56u);  // prev_instr
  BOOST_TEST(*offsets.frame_is_entry == 68u);
  BOOST_TEST(offsets.frame_owner == 69u);
  BOOST_TEST(offsets.owner_shims.empty());  // 3.11 has no shim frames
  BOOST_TEST(*offsets.thread_cframe == 56u);
  BOOST_TEST(offsets.cframe_current_frame == 8u);
  BOOST_TEST(offsets.thread_id == 152u);
  BOOST_TEST(offsets.thread_native_id == 160u);
  BOOST_TEST(offsets.state_kind_shift == 2u);  // interned:2, kind:3, compact:1, ascii:1
  BOOST_TEST(offsets.state_compact_shift == 5u);
  BOOST_TEST(offsets.state_ascii_shift == 6u);
  BOOST_TEST(offsets.ascii_object_size == 48u);  // 3.11 still has wstr
}

BOOST_AUTO_TEST_CASE(ubuntu_3_12_3) {
  nsc::PythonOffsets offsets = offsets_of("337d65cf00021797985cc9f77c0cc334a9fbeb38");
  BOOST_TEST(nsc::py_version_text(offsets.version_hex) == "3.12.3");
  BOOST_TEST(offsets.frame_code == 0u);
  BOOST_TEST(offsets.frame_previous == 8u);
  BOOST_TEST(offsets.frame_instr == 56u);
  BOOST_TEST(offsets.frame_owner == 70u);
  BOOST_TEST(!offsets.frame_is_entry);
  BOOST_TEST(offsets.owner_shims == std::vector<int64_t>{3});  // FRAME_OWNED_BY_CSTACK
  BOOST_TEST(offsets.code_qualname == 128u);
  BOOST_TEST(offsets.code_linetable == 136u);
  BOOST_TEST(offsets.code_code_adaptive == 192u);
  BOOST_TEST(offsets.code_firstlineno == 68u);
}
