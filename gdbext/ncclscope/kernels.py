"""nccl-kernels under cuda-gdb: each block's channel and what it waits for (docs/kernels.md).

No gdb import: everything cuda-gdb-specific goes through execute(command) -> text
(raising CommandFailed), so a recorded session (command -> output) replays the
same code in tests on machines without a GPU.

Works without -G (NCCL is not built with it): device memory is read with
`x/Ngx (@global void*)ADDR`, shared memory with `x/Ngx (@shared void*)OFF`, and
the kernel's arguments are found by content in shared memory, never by symbol.
This module only issues the commands and parses their text: what the values mean
(NCCL kernel names, where the arguments are, each block's channel) is decided by the
library (native/src/nccl/kernel_args.cc, C API commands kernel-names, kernel-args).
"""

from . import gdbparse
from .library import ReadFailed

SHARED_SCAN_BYTES = 0x2000   # NCCL's ncclShmem starts near the bottom of a block's shared memory
MAX_WORDS_PER_READ = 512     # one `x` command; larger reads are split
MAX_BLOCKS = 128             # NCCL grids have one block per channel (at most 64)


class CommandFailed(Exception):
    """A debugger command failed; the message is the debugger's."""


def read_words(execute, space, address, count):
    """count u64 values at address in an address space (@global, @shared), via `x/Ngx`."""
    values = []
    while len(values) < count:
        n = min(MAX_WORDS_PER_READ, count - len(values))
        text = execute("x/%dgx (@%s void*)0x%x" % (n, space, address + 8 * len(values)))
        words = gdbparse.parse_x_words(text)
        if len(words) < n:
            raise CommandFailed("x/%dgx (@%s) at 0x%x returned %d values" % (n, space, address, len(words)))
        values.extend(words[:n])
    return values


def device_reader(execute):
    """A C API reader of memory as the GPU sees it (unified addresses, peers' mapped buffers)."""
    def read(address, length):
        start = address & ~7
        words = (address + length - start + 7) // 8
        try:
            values = read_words(execute, "global", start, words)
        except CommandFailed as error:
            raise ReadFailed(str(error))
        data = b"".join(value.to_bytes(8, "little") for value in values)
        return data[address - start:address - start + length]
    return read


def _running_function(execute):
    """The function at the focused thread's pc as `info symbol $pc` names it, or None."""
    try:
        symbol = gdbparse.parse_info_symbol(execute("info symbol $pc"))
    except CommandFailed:
        return None
    return symbol[0] if symbol else None


def _focus(execute, kernel, block):
    execute("cuda kernel %d block (%d,0,0) thread (0,0,0)" % (kernel, block))


def _kernel_args(library, execute, kernel, dev_comms, nblocks, args_layout):
    """The library's kernel-args answer over block 0's shared memory (where NCCL keeps
    ncclShmem.args): {"found", "channel_id_offset", ...} or {"found": False, "reason"}."""
    _focus(execute, kernel, 0)
    words = read_words(execute, "shared", 0, SHARED_SCAN_BYTES // 8)
    answer, _partial = library.run({"command": "kernel-args", "shared_words": words, "dev_comms": dev_comms,
                                    "nblocks": nblocks, "args_layout": args_layout})
    return answer


def collect_blocks(library, execute, kernel, dev_comms, args_layout):
    """The kernel-view request entry of one cuda-gdb kernel row: what cuda-gdb shows of its blocks.

    The library decides (nccl/kernel_args.cc): where the arguments are, each block's
    channel and the check against the channel id NCCL stores after the arguments.
    """
    entry = {key: kernel.get(key) for key in ("kernel", "device", "grid", "status", "grid_dim",
                                               "block_dim", "invocation", "focus")}
    nblocks = gdbparse.grid_blocks(kernel.get("grid_dim")) or 0
    entry["nblocks"] = nblocks
    try:
        entry["args"] = _kernel_args(library, execute, kernel["kernel"], dev_comms, nblocks, args_layout)
    except CommandFailed as error:
        entry["args"] = None
        entry["shared_memory_error"] = str(error)
    channel_id_offset = (entry["args"] or {}).get("channel_id_offset")  # only when found
    entry["blocks"] = [_block(execute, kernel["kernel"], block, channel_id_offset)
                       for block in range(min(nblocks, MAX_BLOCKS))]
    return entry


def _block(execute, kernel, block, channel_id_offset):
    record = {"block": block}
    try:
        _focus(execute, kernel, block)
    except CommandFailed as error:
        record["unavailable"] = "cannot focus block %d: %s" % (block, error)
        return record
    record["function"] = _running_function(execute)
    if channel_id_offset is None:
        return record
    try:
        record["channel_word"] = read_words(execute, "shared", channel_id_offset, 1)[0]
    except CommandFailed:
        pass
    return record


def restore_focus_command(execute):
    """The command that puts cuda-gdb's focus back where it is now (device or host), or None."""
    try:
        return gdbparse.cuda_focus_command(execute("cuda kernel block thread"))
    except CommandFailed:
        return None


class _FocusKeys:
    """Keys commands by the cuda-gdb focus they ran under: `x (@shared ...)` and
    `info symbol $pc` answer differently for each block."""

    def __init__(self):
        self.focus = ""

    def key(self, command):
        if command.startswith("cuda kernel ") and "block (" in command:
            self.focus = command
            return command
        return "%s | %s" % (self.focus, command) if self.focus else command


class Recorder:
    """Wraps execute and the memory readers, keeping every answer for a replay bundle."""

    def __init__(self, execute):
        self._execute = execute
        self._keys = _FocusKeys()
        self.commands = {}
        self.reads = {"host": [], "device": []}

    def execute(self, command):
        key = self._keys.key(command)
        try:
            text = self._execute(command)
        except CommandFailed as error:
            self.commands[key] = {"error": str(error)}
            raise
        self.commands[key] = {"output": text}
        return text

    def reader(self, kind, read):
        def recorded(address, length):
            try:
                data = read(address, length)
            except ReadFailed as error:
                self.reads[kind].append(["0x%x" % address, length, None, str(error)])
                raise
            self.reads[kind].append(["0x%x" % address, length, bytes(data).hex(), None])
            return data
        return recorded


class Replay:
    """Serves a recorded bundle: the same commands and reads give the same answers."""

    def __init__(self, bundle):
        self._keys = _FocusKeys()
        self.commands = bundle.get("commands") or {}
        self.reads = {kind: {(int(address, 16), length): (data, why)
                             for address, length, data, why in (bundle.get("reads") or {}).get(kind, [])}
                      for kind in ("host", "device")}

    def execute(self, command):
        answer = self.commands.get(self._keys.key(command))
        if answer is None:
            raise CommandFailed("not recorded: %s" % command)
        if "error" in answer:
            raise CommandFailed(answer["error"])
        return answer["output"]

    def reader(self, kind):
        def replayed(address, length):
            data, why = self.reads[kind].get((address, length), (None, "not recorded"))
            if data is None:
                raise ReadFailed(why)
            return bytes.fromhex(data)
        return replayed


def build_view(library, execute, state_request, host_reader, read_device, host_focus=None):
    """The ncclscope.kernels/1 document: cuda-gdb's kernels joined with the device counters.

    Used live (execute = cuda-gdb) and in replay tests (execute = Replay.execute).
    host_focus: context manager under which host memory is read (cuda-gdb needs a host thread).
    """
    import contextlib
    rows = gdbparse.parse_cuda_kernels(execute("info cuda kernels"))
    with (host_focus or contextlib.nullcontext)():
        state, _partial = library.run(state_request, host_reader, read_device)
    devices = [comm.get("device") or {} for comm in state.get("communicators") or []]
    dev_comms = [device["dev_comm"] for device in devices if device.get("dev_comm")]
    args_layout = next((device["kernel_args"] for device in devices if device.get("kernel_args")), {})
    names, _partial = library.run({"command": "kernel-names", "names": [row.get("invocation") for row in rows]})
    is_nccl = [bool(decoded) for decoded in names.get("nccl") or []]
    entries = [collect_blocks(library, execute, row, dev_comms, args_layout)
               for row, nccl in zip(rows, is_nccl) if nccl]
    others = [row for row, nccl in zip(rows, is_nccl) if not nccl]
    # The library names each non-NCCL kernel and the NCCL work queued behind it (nccl/kernel_view.cc).
    document, _partial = library.run({"command": "kernel-view", "state": state, "kernels": entries,
                                      "other_kernels": others})
    document["total_kernels"] = len(rows)
    return document
