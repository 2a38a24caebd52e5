"""Registers the ncclscope commands, settings and $nccl_comm with gdb."""

import json
import traceback

import gdb  # noqa: E402 - only importable inside gdb

from .commands import communicators_of
from .gdb_session import MEMORY_MODES, GdbSession
from .registry import COMMANDS, HelpShown, UsageError
from .text import parse_number

SESSION = GdbSession()
_DEBUG = {"on": False}


def _write(text):
    gdb.write(text)


def _run_command(spec, argument_text):
    """Parses, collects, renders; every failure becomes a one-line gdb.GdbError."""
    try:
        args = spec.parse(gdb.string_to_argv(argument_text or ""))
        data = spec.collect(SESSION, args)
        if args.json:
            _write(json.dumps(data, indent=2, sort_keys=False) + "\n")
        else:
            _write(spec.render(data, args, SESSION))
        if SESSION.last_note and not args.json:
            gdb.write("note: %s\n" % SESSION.last_note.replace("\n", " "), gdb.STDERR)
    except HelpShown as shown:
        _write(str(shown))
    except UsageError as error:
        if _DEBUG["on"]:
            traceback.print_exc()
        raise gdb.GdbError(str(error).replace("\n", " "))
    except gdb.GdbError:
        raise
    except KeyboardInterrupt:
        raise
    except Exception as error:  # noqa: B902 - one line for the user, traceback on demand
        if _DEBUG["on"]:
            traceback.print_exc()
            raise gdb.GdbError("%s: internal error: %s: %s" % (spec.name, type(error).__name__, error))
        raise gdb.GdbError("%s: internal error: %s: %s (set ncclscope debug on for a traceback)"
                           % (spec.name, type(error).__name__, str(error).replace("\n", " ")))


def _make_command_class(spec):
    def __init__(self):
        gdb.Command.__init__(self, spec.name, gdb.COMMAND_DATA, gdb.COMPLETE_EXPRESSION)

    def invoke(self, argument_text, from_tty):
        self.dont_repeat()
        _run_command(spec, argument_text)

    # gdb's `help NAME` shows the docstring; its first line is the summary.
    doc = spec.summary + "\n" + spec.help_text()
    class_name = "Command_" + spec.name.replace("-", "_")
    return type(class_name, (gdb.Command,), {"__doc__": doc, "__init__": __init__, "invoke": invoke})


class _SetPrefix(gdb.Command):
    """Settings of the ncclscope gdb extension."""

    def __init__(self, name):
        super().__init__(name, gdb.COMMAND_DATA, gdb.COMPLETE_NONE, True)


class DebugParameter(gdb.Parameter):
    """When on, ncclscope commands print Python tracebacks for their errors."""

    set_doc = "Set whether ncclscope prints Python tracebacks."
    show_doc = "Show whether ncclscope prints Python tracebacks."

    def __init__(self):
        super().__init__("ncclscope debug", gdb.COMMAND_DATA, gdb.PARAM_BOOLEAN)
        self.value = False

    def get_set_string(self):
        _DEBUG["on"] = bool(self.value)
        return ""

    def get_show_string(self, svalue):
        return "ncclscope debug is %s." % svalue


class MemoryParameter(gdb.Parameter):
    """How the native library gets target memory.

    auto: the library opens the live process or core itself (fast), and falls
    back to gdb when it cannot (remote targets, cuda-gdb); library: never fall
    back; callback: always read through gdb (inferior.read_memory)."""

    set_doc = "Set how ncclscope reads target memory (auto, library, callback)."
    show_doc = "Show how ncclscope reads target memory."

    def __init__(self):
        super().__init__("ncclscope memory", gdb.COMMAND_DATA, gdb.PARAM_ENUM, MEMORY_MODES)
        self.value = "auto"

    def get_set_string(self):
        SESSION.memory_mode = self.value
        SESSION.invalidate()
        return ""

    def get_show_string(self, svalue):
        return "ncclscope memory is %s." % svalue


class SnapshotParameter(gdb.Parameter):
    """An ncclscope.state JSON file to show instead of decoding the target ("" to decode)."""

    set_doc = "Set the ncclscope.state snapshot file the commands show (empty: decode the target)."
    show_doc = "Show the ncclscope.state snapshot file the commands show."

    def __init__(self):
        super().__init__("ncclscope snapshot", gdb.COMMAND_DATA, gdb.PARAM_OPTIONAL_FILENAME)
        self.value = ""

    def get_set_string(self):
        SESSION.snapshot_path = self.value or ""
        SESSION.invalidate()
        return ""

    def get_show_string(self, svalue):
        return "ncclscope snapshot is \"%s\"." % svalue


class ProfilePathParameter(gdb.Parameter):
    """Directories (DIR:DIR) holding layout profiles (<build-id>.json) for stripped libnccl builds."""

    set_doc = "Set the extra directories searched for ncclscope layout profiles (DIR:DIR)."
    show_doc = "Show the extra directories searched for ncclscope layout profiles."

    def __init__(self):
        super().__init__("ncclscope profile-path", gdb.COMMAND_DATA, gdb.PARAM_STRING)
        self.value = ""

    def get_set_string(self):
        SESSION.profile_path = self.value or ""
        SESSION.invalidate()
        return ""

    def get_show_string(self, svalue):
        return "ncclscope profile-path is \"%s\"." % svalue


class NcclCommFunction(gdb.Function):
    """$nccl_comm(I): the I-th communicator of nccl-state as a `struct ncclComm *`.

    Needs the DWARF of libnccl in this gdb session (official NVIDIA builds ship
    it). Example: p $nccl_comm(0)->rank"""

    def __init__(self):
        super().__init__("nccl_comm")

    def invoke(self, index_value=None, *extra):
        if index_value is None or extra:
            raise gdb.GdbError("$nccl_comm: takes one argument, the index shown by nccl-state")
        try:
            index = int(index_value)
        except (gdb.error, ValueError, TypeError):
            raise gdb.GdbError("$nccl_comm: the argument must be an integer index")
        try:
            communicators = communicators_of(SESSION.document())
        except UsageError as error:
            raise gdb.GdbError(str(error))
        if not 0 <= index < len(communicators):
            raise gdb.GdbError("$nccl_comm: no communicator %d (%d known; nccl-state lists them)"
                               % (index, len(communicators)))
        address = parse_number(communicators[index].get("address"))
        if address is None:
            raise gdb.GdbError("$nccl_comm: communicator %d has no address" % index)
        comm_type = lookup_comm_type()
        return gdb.Value(address).cast(comm_type.pointer())


def lookup_comm_type():
    for name in ("ncclComm", "struct ncclComm"):
        try:
            return gdb.lookup_type(name)
        except gdb.error:
            continue
    raise gdb.GdbError("$nccl_comm: no DWARF for struct ncclComm in this session (libnccl has no "
                       "debug info here: use nccl-comm, or load its symbols with add-symbol-file)")


_REGISTERED = {"done": False}


def register():
    """Idempotent: sourcing the entry script twice must not register twice."""
    if _REGISTERED["done"]:
        return
    _REGISTERED["done"] = True
    _SetPrefix("set ncclscope")
    _SetPrefix("show ncclscope")
    DebugParameter()
    MemoryParameter()
    SnapshotParameter()
    ProfilePathParameter()
    for spec in COMMANDS.values():
        _make_command_class(spec)()
    NcclCommFunction()
    # The cached document describes memory as it was at the last stop.
    for registry_name in ("cont", "exited", "new_objfile", "clear_objfiles", "memory_changed",
                          "inferior_call", "new_inferior", "inferior_deleted", "stop"):
        registry = getattr(gdb.events, registry_name, None)
        if registry is not None:
            registry.connect(SESSION.invalidate)
