"""The built libncclscope.so for tests of what the library decides (blocked_in classes)."""
import unittest

from ncclscope import library

_loaded = []


def built_library():
    """NativeLibrary over the build's libncclscope.so; the calling test is skipped without one."""
    if not _loaded:
        try:
            _loaded.append(library.NativeLibrary(library.find_library()))
        except library.LibraryNotFound as error:
            raise unittest.SkipTest("no libncclscope.so (build the `ncclscope` target): %s" % error)
    return _loaded[0]
