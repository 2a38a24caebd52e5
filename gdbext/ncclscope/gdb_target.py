"""What the debugger is attached to: the target's kind, its memory and its regions.

Read-only: memory is only read (inferior.read_memory).
"""

import functools

import gdb  # noqa: E402 - only importable inside gdb

from . import gdbparse
from .library import ReadFailed

REMOTE_CONNECTIONS = ("remote", "extended-remote")
MAX_REGIONS = 100000


class TargetInfo:
    """kind: "live" (local native process), "core", "remote", or "none"."""

    def __init__(self, kind, pid=0, core_path=None, executable=None, connection=""):
        self.kind = kind
        self.pid = pid
        self.core_path = core_path
        self.executable = executable
        self.connection = connection

    def key(self):
        return (self.kind, self.pid, self.core_path, self.executable)


def execute(command):
    """A gdb command's output as text (nothing printed)."""
    return gdb.execute(command, to_string=True)


@functools.lru_cache(maxsize=1)
def is_cuda_gdb():
    try:
        return "cuda-gdb" in execute("show version").lower()
    except gdb.error:
        return False


def _connection_type(inferior):
    connection = getattr(inferior, "connection", None)
    if connection is not None:
        return connection.type or ""
    # gdb < 12: no TargetConnection; infer it from `info target`.
    text = execute("info target")
    if "core dump file" in text:
        return "core"
    if "Remote target" in text or "Remote serial target" in text:
        return "remote"
    return "native" if inferior.pid else ""


def _core_path(inferior):
    path = getattr(inferior.progspace, "core_filename", None)  # gdb 14+
    if path:
        return path
    return gdbparse.parse_core_path(execute("info target"))


def describe_target():
    inferior = gdb.selected_inferior()
    connection = _connection_type(inferior)
    executable = inferior.progspace.filename
    if connection == "core":
        return TargetInfo("core", inferior.pid, _core_path(inferior), executable, connection)
    if inferior.pid <= 0:
        return TargetInfo("none", 0, None, executable, connection)
    if connection == "native" or (is_cuda_gdb() and connection not in REMOTE_CONNECTIONS):
        return TargetInfo("live", inferior.pid, None, executable, connection)
    return TargetInfo("remote", inferior.pid, None, executable, connection)


def read_target_memory(address, length):
    """Reader for the C API callback: bytes, or ReadFailed with gdb's reason."""
    try:
        return gdb.selected_inferior().read_memory(address, length).tobytes()
    except gdb.MemoryError as error:
        raise ReadFailed(str(error) or "Cannot access memory at address 0x%x" % address)
    except gdb.error as error:
        raise ReadFailed(str(error))


def memory_regions(target):
    """Regions for a callback request: `info proc mappings`, or a core's load segments."""
    try:
        mappings = gdbparse.parse_proc_mappings(execute("info proc mappings"))
    except gdb.error:
        mappings = []
    if target.kind == "core":
        try:
            sections = gdbparse.parse_core_sections(execute("maint info sections -all-objects"))
        except gdb.error:
            sections = []
        if sections:
            return gdbparse.merge_core_regions(sections, mappings)[:MAX_REGIONS]
    return mappings[:MAX_REGIONS]


def architecture_name():
    try:
        return gdb.selected_inferior().architecture().name()  # gdb 12+
    except (AttributeError, gdb.error, RuntimeError):
        pass
    try:
        return gdb.newest_frame().architecture().name()
    except (gdb.error, RuntimeError):
        return ""


def _vdso_address():
    """AT_SYSINFO_EHDR from `info auxv` (a core's mappings do not name the vDSO), or None."""
    try:
        text = execute("info auxv")
    except gdb.error:
        return None
    for line in text.splitlines():
        words = line.split()
        if len(words) > 2 and words[1] == "AT_SYSINFO_EHDR" and words[-1].startswith("0x"):
            return int(words[-1], 16)
    return None


def name_vdso(regions):
    """Names the unnamed region holding the vDSO "[vdso]", as a live process's mappings do:
    the library reads the vDSO's unwind tables from it."""
    if any(region.get("path") == "[vdso]" for region in regions):
        return
    address = _vdso_address()
    for region in regions if address is not None else []:
        if not region.get("path") and int(region["start"], 16) <= address < int(region["end"], 16):
            region["path"] = "[vdso]"
            return
