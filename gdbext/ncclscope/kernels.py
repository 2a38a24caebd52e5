"""nccl-kernels under cuda-gdb: each block's channel and what it waits for (docs/kernels.md).

No gdb import: everything cuda-gdb-specific goes through execute(command) -> text
(raising CommandFailed), so a recorded session (command -> output) replays the
same code in tests on machines without a GPU.

Works without -G (NCCL is not built with it): device memory is read with
`x/Ngx (@global void*)ADDR`, shared memory with `x/Ngx (@shared void*)OFF`, and
the kernel's arguments are found by content in shared memory, never by symbol.
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
    """(name, decoded) of the device function at the focused thread's pc."""
    try:
        symbol = gdbparse.parse_info_symbol(execute("info symbol $pc"))
    except CommandFailed:
        return None, None
    if not symbol:
        return None, None
    name = symbol[0].split("(", 1)[0].strip()
    decoded = (gdbparse.decode_nccl_kernel_name(name, "ncclDevFunc_")
               or gdbparse.decode_nccl_kernel_name(name))
    return name, decoded


def _focus(execute, kernel, block):
    execute("cuda kernel %d block (%d,0,0) thread (0,0,0)" % (kernel, block))


def _kernel_args(execute, kernel, dev_comms, nblocks, args_layout):
    """(offset, comm, channel_mask) of ncclShmem.args in block 0's shared memory, or None."""
    _focus(execute, kernel, 0)
    words = read_words(execute, "shared", 0, SHARED_SCAN_BYTES // 8)
    comm_offset = args_layout.get("comm_offset", 0)
    mask_offset = args_layout.get("channel_mask_offset", 8)
    offset = gdbparse.find_kernel_args(words, dev_comms, nblocks, comm_offset, mask_offset)
    if offset is None:
        return None
    return offset, words[(offset + comm_offset) // 8], words[(offset + mask_offset) // 8]


def collect_blocks(execute, kernel, dev_comms, args_layout):
    """The kernel-view request entry of one cuda-gdb kernel row: its blocks and their channels.

    Block b runs the b-th set bit of the kernel's channel mask (NCCL's own rule);
    NCCL also stores that channel right after the arguments (ncclShmem.channelId),
    which is read back as a check.
    """
    entry = {key: kernel.get(key) for key in ("kernel", "device", "grid", "status", "grid_dim",
                                               "block_dim", "invocation", "focus")}
    entry["nccl"] = gdbparse.decode_nccl_kernel_name(kernel.get("invocation"))
    nblocks = gdbparse.grid_blocks(kernel.get("grid_dim")) or 0
    entry["dev_comm"] = entry["channel_mask"] = None
    entry["notes"] = []
    try:
        found = _kernel_args(execute, kernel["kernel"], dev_comms, nblocks, args_layout or {})
    except CommandFailed as error:
        found = None
        entry["notes"].append("shared memory unreadable: %s" % error)
    if found is None:
        entry["notes"].append("kernel arguments not found in shared memory: channels unknown")
    else:
        offset, comm, mask = found
        entry["dev_comm"], entry["channel_mask"] = "0x%x" % comm, "0x%x" % mask
        entry["args_shared_offset"] = "0x%x" % offset
    entry["blocks"] = []
    for block in range(min(nblocks, MAX_BLOCKS)):
        entry["blocks"].append(_block(execute, kernel["kernel"], block, found, args_layout or {}))
    if nblocks > MAX_BLOCKS:
        entry["notes"].append("%d blocks shown of %d" % (MAX_BLOCKS, nblocks))
    return entry


def _block(execute, kernel, block, found, args_layout):
    record = {"block": block, "channel": None, "channel_source": None, "function": None, "running": None}
    try:
        _focus(execute, kernel, block)
    except CommandFailed as error:
        record["unavailable"] = "cannot focus block %d: %s" % (block, error)
        return record
    record["function"], record["running"] = _running_function(execute)
    if found is None:
        return record
    offset, _comm, mask = found
    record["channel"] = gdbparse.nth_set_bit(mask, block)
    record["channel_source"] = "channel mask"
    try:
        # ncclShmem.channelId: the int after the arguments (NCCL 2.19+ ncclShmemData order).
        stored = read_words(execute, "shared", offset + args_layout.get("size", 32), 1)[0] & 0xffffffff
        record["channel_in_shared"] = stored
        if stored == record["channel"]:
            record["channel_source"] = "channel mask, confirmed by the block's shared memory"
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
    dev_comms = {int(device["dev_comm"], 16) for device in devices if device.get("dev_comm")}
    args_layout = next((device["kernel_args"] for device in devices if device.get("kernel_args")), {})
    entries = [collect_blocks(execute, row, dev_comms, args_layout) for row in rows
               if gdbparse.decode_nccl_kernel_name(row.get("invocation"))]
    document, _partial = library.run({"command": "kernel-view", "state": state, "kernels": entries})
    document["other_kernels"] = [row for row in rows if not gdbparse.decode_nccl_kernel_name(row.get("invocation"))]
    document["total_kernels"] = len(rows)
    return document
