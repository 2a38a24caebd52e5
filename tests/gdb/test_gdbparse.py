"""Parsers of gdb command output, on text captured from gdb 13 (no gdb needed)."""
import unittest

from ncclscope import gdbparse

LIVE_MAPPINGS = """process 6184
Mapped address spaces:

          Start Addr           End Addr       Size     Offset  Perms  objfile
      0x5604ed7ac000     0x5604ed7ad000     0x1000        0x0  r--p   /tmp/t
      0x56050b0cb000     0x56050b0ec000    0x21000        0x0  rw-p   [heap]
      0x7f5c266d6000     0x7f5c266d9000     0x3000        0x0  rw-p   
      0x7f5c266ff000     0x7f5c26855000   0x156000    0x26000  r-xp   /usr/lib/x86_64-linux-gnu/libc.so.6
      0x7f5c268ac000     0x7f5c268ae000     0x2000   0x1d3000  rw-s   /dev/zero (deleted)
"""

CORE_MAPPINGS = """Mapped address spaces:

          Start Addr           End Addr       Size     Offset objfile
      0x5604ed7ac000     0x5604ed7ad000     0x1000        0x0 /tmp/t
      0x7f5c266d9000     0x7f5c266ff000    0x26000        0x0 /usr/lib/x86_64-linux-gnu/libc.so.6
      0x7f5c266ff000     0x7f5c26855000   0x156000    0x26000 /usr/lib/x86_64-linux-gnu/libc.so.6
      0x7f5c268ac000     0x7f5c268ae000     0x2000   0x1d3000 /usr/lib/x86_64-linux-gnu/libc.so.6
"""

CORE_SECTIONS = """Core file: `/tmp/t.core', file type elf64-x86-64.
 [12]     0x00000000->0x00003520 at 0x0008c818: .gdb-tdesc/6184 HAS_CONTENTS
 [14]     0x5604ed7ac000->0x5604ed7ad000 at 0x000003f8: load1 ALLOC LOAD READONLY HAS_CONTENTS
 [17]     0x56050b0cb000->0x56050b0ec000 at 0x000033f8: load4 ALLOC LOAD HAS_CONTENTS
 [19]     0x7f5c266d9000->0x7f5c266ff000 at 0x000273f8: load6 ALLOC LOAD READONLY HAS_CONTENTS
 [21]     0x7f5c268ac000->0x7f5c268ae000 at 0x000513f8: load8 ALLOC LOAD HAS_CONTENTS
 [24]     0x7f5c268ce000->0x7f5c268d0000 at 0x000623f8: load11 ALLOC LOAD READONLY CODE HAS_CONTENTS
"""

INFO_TARGET_CORE = """Symbols from "/tmp/t".
Local core dump file:
\t`/tmp/my core.1', file type elf64-x86-64.
\t0x00005604ed7ac000 - 0x00005604ed7ad000 is load1
Local exec file:
\t`/tmp/t', file type elf64-x86-64.
"""

INFO_TARGET_LIVE = """Symbols from "/tmp/t".
Native process:
\tUsing the running image of attached Thread 0x7f5c266d6740 (LWP 6184).
Local exec file:
\t`/tmp/t', file type elf64-x86-64.
"""


# cuda-gdb 13.0 on an H200, rank 0 of a hung 2-rank AllReduce (tests/gdb/device_cuda_gdb.sh).
CUDA_KERNELS = """  Kernel Parent Dev Grid Status                             SMs Mask  GridDim  BlockDim Invocation                                
*      0      -   0    6 Active 0x000000000000000000000000000fff0fff (24,1,1) (544,1,1) ncclDevKernel_AllReduce_Sum_f32_RING_LL() 
       1      -   1    9 Active 0x00000000000000000000000000000000ff (8,1,1) (256,1,1) myKernel(float*, int) 
"""


class ParseTest(unittest.TestCase):
    def test_live_mappings_have_permissions(self):
        regions = gdbparse.parse_proc_mappings(LIVE_MAPPINGS)
        self.assertEqual(len(regions), 5)
        self.assertEqual(regions[1], {"start": "0x56050b0cb000", "end": "0x56050b0ec000", "file_offset": "0x0",
                                      "readable": True, "writable": True, "executable": False,
                                      "shared": False, "path": "[heap]"})
        self.assertEqual(regions[2]["path"], "")
        self.assertFalse(regions[3]["writable"])
        self.assertEqual(regions[3]["file_offset"], "0x26000")
        self.assertTrue(regions[4]["shared"])
        self.assertEqual(regions[4]["path"], "/dev/zero (deleted)")

    def test_core_mappings_have_no_permission_keys(self):
        regions = gdbparse.parse_proc_mappings(CORE_MAPPINGS)
        self.assertEqual(len(regions), 4)
        self.assertNotIn("writable", regions[0])  # unknown: never sent as null
        self.assertEqual(regions[1]["path"], "/usr/lib/x86_64-linux-gnu/libc.so.6")

    def test_core_sections(self):
        sections = gdbparse.parse_core_sections(CORE_SECTIONS)
        self.assertEqual([s["start"] for s in sections],
                         ["0x5604ed7ac000", "0x56050b0cb000", "0x7f5c266d9000", "0x7f5c268ac000", "0x7f5c268ce000"])
        self.assertEqual([s["writable"] for s in sections], [False, True, False, True, False])
        self.assertTrue(sections[4]["executable"])

    def test_merge_core_regions_names_segments_and_adds_unsaved_files(self):
        merged = gdbparse.merge_core_regions(gdbparse.parse_core_sections(CORE_SECTIONS),
                                             gdbparse.parse_proc_mappings(CORE_MAPPINGS))
        by_start = {region["start"]: region for region in merged}
        self.assertEqual(by_start["0x7f5c268ac000"]["path"], "/usr/lib/x86_64-linux-gnu/libc.so.6")
        self.assertEqual(by_start["0x7f5c268ac000"]["file_offset"], "0x1d3000")
        self.assertTrue(by_start["0x7f5c268ac000"]["writable"])
        self.assertNotIn("path", by_start["0x56050b0cb000"])  # heap: anonymous
        # libc text was not saved in the core: present, read-only, not saved.
        self.assertEqual(by_start["0x7f5c266ff000"]["saved"], False)
        self.assertEqual(by_start["0x7f5c266ff000"]["writable"], False)
        self.assertEqual(len(merged), 6)
        self.assertEqual([r["start"] for r in merged], sorted([r["start"] for r in merged], key=lambda s: int(s, 16)))

    def test_core_path(self):
        self.assertEqual(gdbparse.parse_core_path(INFO_TARGET_CORE), "/tmp/my core.1")
        self.assertIsNone(gdbparse.parse_core_path(INFO_TARGET_LIVE))

    def test_info_symbol(self):
        self.assertEqual(gdbparse.parse_info_symbol(
            "clock_nanosleep + 35 in section .text of /lib/x86_64-linux-gnu/libc.so.6\n"),
            ("clock_nanosleep", 35, "/lib/x86_64-linux-gnu/libc.so.6"))
        self.assertEqual(gdbparse.parse_info_symbol("main + 300 in section .text\n"), ("main", 300, None))
        self.assertEqual(gdbparse.parse_info_symbol("free_derivation in section __libc_freeres_fn of /l.so\n"),
                         ("free_derivation", 0, "/l.so"))
        self.assertIsNone(gdbparse.parse_info_symbol("No symbol matches 0.\n"))

    def test_cuda_focus_command(self):
        self.assertEqual(gdbparse.cuda_focus_command("kernel 0, block (0,0,0), thread (0,0,0)\n"),
                         "cuda kernel 0 block (0,0,0) thread (0,0,0)")
        self.assertEqual(gdbparse.cuda_focus_command(
            "kernel 3, grid 6, cluster (0,0,0), block (1, 2, 0), thread (31,0,0)"),
            "cuda kernel 3 block (1,2,0) thread (31,0,0)")
        self.assertIsNone(gdbparse.cuda_focus_command("Focus not set on any active CUDA kernel."))

    def test_cuda_kernels(self):
        kernels = gdbparse.parse_cuda_kernels(CUDA_KERNELS)
        self.assertEqual(len(kernels), 2)
        first = kernels[0]
        self.assertEqual((first["kernel"], first["device"], first["grid"], first["status"]), (0, 0, 6, "Active"))
        self.assertEqual((first["grid_dim"], first["block_dim"], first["sms"]), ("(24,1,1)", "(544,1,1)", 24))
        self.assertTrue(first["focus"])
        self.assertFalse(kernels[1]["focus"])
        self.assertEqual(kernels[1]["invocation"], "myKernel(float*, int)")
        self.assertEqual(gdbparse.parse_cuda_kernels("No CUDA kernels.\n"), [])

    def test_sysroot(self):
        self.assertEqual(gdbparse.normalise_sysroot("target:"), "")
        self.assertEqual(gdbparse.normalise_sysroot("target:/srv/root"), "/srv/root")
        self.assertEqual(gdbparse.normalise_sysroot("/srv/root"), "/srv/root")
        self.assertEqual(gdbparse.parse_quoted_setting('The current system root is "target:".'), "target:")


if __name__ == "__main__":
    unittest.main()
