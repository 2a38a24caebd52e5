"""ctypes side: locating libncclscope.so and the memory callback (no gdb needed)."""
import ctypes
import os
import re
import tempfile
import unittest

from ncclscope import library


class LocateTest(unittest.TestCase):
    def test_env_comes_first_and_accepts_a_directory(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "libncclscope.so")
            open(path, "wb").close()
            self.assertEqual(library.find_library({"NCCLSCOPE_LIB": directory}), path)
            self.assertEqual(library.find_library({"NCCLSCOPE_LIB": path}), path)

    def test_missing_env_library_is_a_clear_error(self):
        with self.assertRaises(library.LibraryNotFound) as caught:
            library.find_library({"NCCLSCOPE_LIB": "/nonexistent/libncclscope.so"})
        self.assertEqual(str(caught.exception),
                         "NCCLSCOPE_LIB=/nonexistent/libncclscope.so: no libncclscope.so there")

    def test_source_tree_build_then_installed_paths(self):
        package_dir = "/src/ncclscope/gdbext/ncclscope"
        candidates = library.candidate_paths({}, package_dir)
        self.assertEqual(candidates[0], "/src/ncclscope/build/lib/libncclscope.so")
        self.assertIn("/usr/local/lib/libncclscope.so", candidates)
        installed = library.candidate_paths({}, "/opt/nsc/share/ncclscope/gdb/ncclscope")
        self.assertIn("/opt/nsc/lib/libncclscope.so", installed)


class CallbackTest(unittest.TestCase):
    def call(self, reader, address, length):
        callback = library.READ_MEMORY_FN(library.make_read_callback(reader))
        buffer = ctypes.create_string_buffer(length)
        why = ctypes.create_string_buffer(32)
        status = callback(None, address, ctypes.addressof(buffer), length, ctypes.addressof(why), 32)
        return status, buffer.raw, why.value

    def test_bytes_are_copied(self):
        status, data, _why = self.call(lambda address, length: bytes(range(length)), 0x1000, 4)
        self.assertEqual((status, data), (0, b"\x00\x01\x02\x03"))

    def test_failure_reason_is_written_and_truncated(self):
        def reader(address, length):
            raise library.ReadFailed("Cannot access memory at address 0x%x" % address)
        status, _data, why = self.call(reader, 0x7F0000001234, 8)
        self.assertEqual(status, 1)
        self.assertEqual(why, b"Cannot access memory at address")  # 31 bytes + NUL

    def test_calls_from_another_thread_are_refused(self):
        import threading
        callback = library.READ_MEMORY_FN(library.make_read_callback(lambda a, n: b"x" * n, owner_thread=-1))
        buffer = ctypes.create_string_buffer(4)
        why = ctypes.create_string_buffer(64)
        result = []
        worker = threading.Thread(target=lambda: result.append(
            callback(None, 0, ctypes.addressof(buffer), 4, ctypes.addressof(why), 64)))
        worker.start()
        worker.join()
        self.assertEqual(result, [1])
        self.assertEqual(why.value, b"read_memory called from another thread")

    def test_short_reads_and_exceptions_never_cross_into_c(self):
        status, _data, why = self.call(lambda address, length: b"ab", 0, 4)
        self.assertEqual((status, why), (1, b"short read (2 of 4 bytes)"))
        status, _data, why = self.call(lambda address, length: 1 / 0, 0, 4)
        self.assertEqual(status, 1)
        self.assertTrue(why.startswith(b"reader raised ZeroDivisionError"))


class NativeTest(unittest.TestCase):
    """Runs only when the build has the library (NCCLSCOPE_BUILD/lib/libncclscope.so)."""

    def setUp(self):
        build = os.environ.get("NCCLSCOPE_BUILD", "")
        self.path = os.path.join(build, "lib", "libncclscope.so")
        if not build or not os.path.isfile(self.path):
            self.skipTest("no libncclscope.so in NCCLSCOPE_BUILD")
        self.lib = library.NativeLibrary(self.path)

    def test_version(self):
        self.assertRegex(self.lib.version(), r"^\d+\.\d+\.\d+$")

    def test_bad_requests_raise_with_kind(self):
        with self.assertRaises(library.NativeError) as caught:
            self.lib.run({"command": "no-such-command"})
        self.assertEqual(caught.exception.kind, library.NSC_ERROR_USAGE)
        with self.assertRaises(library.NativeError) as caught:
            self.lib.run({"command": "state", "core": "/nonexistent/core.1"})
        self.assertEqual(caught.exception.kind, library.NSC_ERROR_BAD_INPUT)
        self.assertIn("/nonexistent/core.1", caught.exception.message)

    def test_the_headers_requests_are_the_ones_capi_accepts(self):
        """Each request ncclscope.h describes is answered (not "unknown command"), and each
        command capi.cc dispatches on is described there: the header's list is the API's."""
        described = set(re.findall(r'"command":\s*"([a-z-]+)"', _source("native/include/ncclscope/ncclscope.h")))
        dispatched = set(re.findall(r'command [!=]= "([a-z-]+)"', _source("native/src/capi/capi.cc")))
        self.assertEqual(described, dispatched)
        self.assertEqual(len(described), 9)
        for command in sorted(described):
            try:
                self.lib.run({"command": command})
            except library.NativeError as error:
                self.assertNotIn("unknown command", error.message, command)
        with self.assertRaises(library.NativeError) as caught:
            self.lib.run({"command": "triage"})
        self.assertEqual(caught.exception.message, "unknown command 'triage'")


def _source(path):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", path)) as handle:
        return handle.read()


if __name__ == "__main__":
    unittest.main()
