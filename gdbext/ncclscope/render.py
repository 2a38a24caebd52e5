"""Text renderers: one function per command, from the data its collect returned.

Data shapes are those of docs/schema-state.md. Every string that came from
target memory goes through escape_for_terminal; every null value is printed
as `<unreadable ...>` with its reason from the enclosing `unavailable` map.
Pure Python (no gdb import).
"""

from .text import escape_for_terminal, hex_text, unreadable_text

COLLECTIVES = ["Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"]
HEALTH_OK_VALUES = {
    "async_result": "ncclSuccess",
    "abort_flag": False,
    "destroy_flag": False,
    "init_state": "ncclSuccess",
    "finalize_called": False,
    "revoked": False,
}
MAX_REJECTED_SHOWN = 5
MAX_LIST_ITEMS = 64  # long lists (user_ranks of a 2,048-rank ring) are truncated


class Field:
    """Reads `object[key]`, knowing where its `unavailable` reason lives.

    The reason of a null value is looked up as `key` in the object's own
    `unavailable` map, then as the dotted path in the enclosing objects' maps.
    """

    def __init__(self, obj, path="", parent=None):
        self._list = obj
        self.obj = obj if isinstance(obj, dict) else {}
        self.path = path
        self.parent = parent

    def child(self, key):
        value = self.obj.get(key)
        return Field(value, self._join(key), self)

    def item(self, index):
        """Field of element `index` of this (list) value: path "channels[3]"."""
        items = self.raw_list()
        value = items[index] if 0 <= index < len(items) else None
        return Field(value, "%s[%d]" % (self.path, index), self)

    def raw_list(self):
        return self._list if isinstance(self._list, list) else []

    def _join(self, key):
        return "%s.%s" % (self.path, key) if self.path else str(key)

    def reason(self, key):
        own = self.obj.get("unavailable") or {}
        if key in own:
            return own[key]
        dotted = self._join(key)
        scope = self.parent
        while scope is not None:
            scope_map = scope.obj.get("unavailable") or {}
            relative = dotted[len(scope.path) + 1:] if scope.path else dotted
            if relative in scope_map:
                return scope_map[relative]
            scope = scope.parent
        # Decoders that lose the path (a nested object's own keys) still give a reason.
        scope = self.parent
        while scope is not None:
            scope_map = scope.obj.get("unavailable") or {}
            if key in scope_map:
                return scope_map[key]
            scope = scope.parent
        return None

    def has(self, key):
        return key in self.obj

    def raw(self, key, default=None):
        return self.obj.get(key, default)

    def text(self, key, formatter=None, missing="n/a"):
        """The value as text; `<unreadable ...>` when null; `missing` when absent."""
        if key not in self.obj:
            return missing
        value = self.obj[key]
        if value is None:
            return unreadable_text(self.reason(key))
        if formatter is not None:
            return formatter(value)
        return plain(value)


def plain(value):
    """A JSON value as text: bools lower case, strings escaped."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return escape_for_terminal(value)
    if isinstance(value, list):
        return "[%s]" % ", ".join(plain(item) for item in value)
    return str(value)


def rank_list(values):
    items = ["?" if value is None else plain(value) for value in values[:MAX_LIST_ITEMS]]
    if len(values) > MAX_LIST_ITEMS:
        items.append("... (%d more)" % (len(values) - MAX_LIST_ITEMS))
    return items


def table(rows, indent=""):
    """Left-aligned columns; rows are lists of strings."""
    if not rows:
        return []
    widths = [0] * max(len(row) for row in rows)
    for row in rows:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[index]) for index, cell in enumerate(row)]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


# --- identity and health -------------------------------------------------

def comm_title(comm):
    field = Field(comm)
    return "comm %s rank %s/%s (%s)" % (
        field.text("comm_hash", hex_text), field.text("rank"), field.text("nranks"),
        field.text("address", hex_text))


def launched_text(comm):
    field = Field(comm)
    if "seq_launched" not in comm:
        return "launched n/a"
    seq = comm.get("seq_launched")
    if seq is None:
        return "launched " + unreadable_text(field.reason("seq_launched"))
    seq_field = field.child("seq_launched")
    parts = []
    for name in COLLECTIVES + sorted(set(seq) - set(COLLECTIVES) - {"unavailable"}):
        if name not in seq:
            continue
        value = seq[name]
        if value is None:
            parts.append("%s=%s" % (name, seq_field.text(name)))
        elif value:
            parts.append("%s=%s" % (name, plain(value)))
    return "launched " + (" ".join(parts) if parts else "none")


def health_problems(comm):
    """List of short texts, one per health flag that is not in its normal state."""
    field = Field(comm)
    if "health" not in comm:
        return []
    if comm.get("health") is None:
        return [unreadable_text(field.reason("health"))]
    health = field.child("health")
    problems = []
    for key, ok_value in HEALTH_OK_VALUES.items():
        if not health.has(key):
            continue
        value = health.raw(key)
        if value is None:
            problems.append("%s %s" % (key, health.text(key)))
        elif value != ok_value:
            if isinstance(ok_value, bool):
                problems.append(key.upper() if key in ("abort_flag",) else key)
            else:
                problems.append("%s=%s" % (key, plain(value)))
    return problems


def health_text(comm):
    problems = health_problems(comm)
    return "ok" if not problems else ", ".join(problems)


def target_line(document):
    target = Field(document).child("target")
    nccl = Field(document).child("nccl")
    kind = target.raw("kind")
    if kind == "core":
        where = "core %s (pid %s)" % (target.text("path"), target.text("pid"))
    elif kind == "live":
        where = "live pid %s" % target.text("pid")
    elif kind == "callback":
        where = "gdb-supplied memory"
        if target.raw("pid"):
            where += " of pid %s" % target.text("pid")
    elif kind == "snapshot":
        where = "snapshot %s" % target.text("path")
    else:
        where = plain(kind) if kind else "unknown target"
    if target.raw("executable"):
        where += " " + target.text("executable")
    version = nccl.text("version", missing="?")
    line = "NCCL %s in %s" % (version, where)
    if nccl.raw("layout_source"):
        line += "; layout %s" % nccl.text("layout_source")
    if nccl.raw("build_id_mismatch"):
        line += " (BUILD-ID MISMATCH)"
    discovery = Field(document).child("discovery")
    if discovery.raw("method"):
        line += "; found by %s" % discovery.text("method")
    return line


def count_unreadable(obj):
    """Number of entries in every `unavailable` map inside obj."""
    total = 0
    if isinstance(obj, dict):
        total += len(obj.get("unavailable") or {})
        for key, value in obj.items():
            if key != "unavailable":
                total += count_unreadable(value)
    elif isinstance(obj, list):
        for item in obj:
            total += count_unreadable(item)
    return total


# --- nccl-state ----------------------------------------------------------

def nccl_libraries(document):
    """nccl.libraries[] (issue 17: a process may map several libnccl); [] when absent."""
    libraries = (document.get("nccl") or {}).get("libraries")
    return libraries if isinstance(libraries, list) else []


def library_lines(libraries):
    """One line per libnccl when several are mapped; none for one (the target line says it)."""
    if len(libraries) < 2:
        return []
    lines = ["%d libnccl mapped:" % len(libraries)]
    for library in libraries:
        field = Field(library)
        version = field.text("version") if library.get("version") else "?"
        line = "  lib %s  NCCL %s  %s" % (field.text("index"), version, field.text("library"))
        if library.get("unavailable"):
            line += ": communicators unavailable (%s)" % field.text("unavailable")
        else:
            line += ": %s communicator(s), layout %s" % (field.text("communicators"), field.text("layout_source"))
        lines.append(line)
    return lines


def comm_library_text(comm):
    """"lib 1" for the communicator's libnccl (an index into nccl.libraries)."""
    library = comm.get("library")
    return "lib %s" % Field(library).text("index") if isinstance(library, dict) else "lib ?"


def process_group_text(comm, document):
    """"pg 'dp0' (3)": the PyTorch process group joined to this communicator, "" if none."""
    groups = (document.get("torch") or {}).get("process_groups") or []
    for group in groups if isinstance(groups, list) else []:
        if isinstance(group, dict) and group.get("communicator") and group.get("communicator") == comm.get("address"):
            return "pg '%s' (%s)" % (escape_for_terminal(str(group.get("desc"))), escape_for_terminal(str(group.get("name"))))
    return ""


def render_state(document, args=None):
    lines = [target_line(document)]
    several_libraries = len(nccl_libraries(document)) > 1
    lines.extend(library_lines(nccl_libraries(document)))
    communicators = document.get("communicators") or []
    rows = []
    for index, comm in enumerate(communicators):
        field = Field(comm)
        device = field.text("cuda_dev")
        if comm.get("bus_id"):
            device += " (%s)" % field.text("bus_id")
        row = ["#%d" % index, field.text("address", hex_text),
               "hash " + field.text("comm_hash", hex_text),
               "rank %s/%s" % (field.text("rank"), field.text("nranks")),
               "dev " + device, launched_text(comm), "health " + health_text(comm)]
        if several_libraries:
            row.insert(1, comm_library_text(comm))
        pg = process_group_text(comm, document)
        if pg:
            row.append(pg)
        rows.append(row)
    lines.extend(table(rows))
    summary = "%d communicator%s" % (len(communicators), "" if len(communicators) == 1 else "s")
    unreadable = count_unreadable(communicators)
    if unreadable:
        summary += "; %d unreadable field%s (nccl-comm ADDR for detail)" % (
            unreadable, "" if unreadable == 1 else "s")
    warnings = sum(len(comm.get("warnings") or []) for comm in communicators)
    if warnings:
        summary += "; %d warning%s" % (warnings, "" if warnings == 1 else "s")
    errors = document.get("errors") or []
    if errors:
        kinds = {}
        for error in errors:
            kind = error.get("kind", "other") if isinstance(error, dict) else "other"
            kinds[kind] = kinds.get(kind, 0) + 1
        summary += "; %d error%s (%s)" % (len(errors), "" if len(errors) == 1 else "s", ", ".join(
            "%s %d" % (escape_for_terminal(kind), count) for kind, count in sorted(kinds.items())))
    lines.append(summary)
    rejected_list = (document.get("discovery") or {}).get("rejected") or []
    for rejected in rejected_list[:MAX_REJECTED_SHOWN]:
        lines.append("rejected candidate %s: %s" % (hex_text(rejected.get("address")),
                                                     plain(rejected.get("why"))))
    if len(rejected_list) > MAX_REJECTED_SHOWN:
        lines.append("... %d more rejected candidates (--json lists them)"
                     % (len(rejected_list) - MAX_REJECTED_SHOWN))
    return "\n".join(lines) + "\n"


# --- nccl-ring -----------------------------------------------------------

def ring_picture(channel_field, rank):
    """"0 -> 1 -> 0" from user_ranks, else "prev -> rank -> next"."""
    if not channel_field.has("ring"):
        return "n/a"
    if channel_field.raw("ring") is None:
        return channel_field.text("ring")
    ring = channel_field.child("ring")
    user_ranks = ring.raw("user_ranks")
    if isinstance(user_ranks, list) and user_ranks:
        items = rank_list(user_ranks)
        if len(user_ranks) <= MAX_LIST_ITEMS:
            items.append(items[0])
        return " -> ".join(items) + ring_disagreement(ring, user_ranks)
    return "%s -> %s -> %s" % (ring.text("prev"), plain(rank) if rank is not None else "?",
                               ring.text("next"))


def ring_disagreement(ring, user_ranks):
    """" (ring.next is 17)" when prev/next contradict userRanks (torn or corrupt memory)."""
    expected = {"next": user_ranks[1] if len(user_ranks) > 1 else user_ranks[0],
                "prev": user_ranks[-1]}
    notes = []
    for key in ("prev", "next"):
        value = ring.raw(key)
        if isinstance(value, int) and not isinstance(value, bool) and value != expected[key]:
            notes.append("ring.%s is %d" % (key, value))
    return " (%s)" % ", ".join(notes) if notes else ""


def tree_picture(channel_field):
    if not channel_field.has("tree"):
        return "n/a"
    if channel_field.raw("tree") is None:
        return channel_field.text("tree")
    tree = channel_field.child("tree")
    down = tree.raw("down")
    if isinstance(down, list):
        down_text = "[%s]" % " ".join("?" if value is None else plain(value)
                                      for value in down if value != -1)
    else:
        down_text = tree.text("down")
    return "up %s down %s" % (tree.text("up"), down_text)


def channel_pictures(comm):
    """[(channel ids, "ring: ...   tree: ...")] with identical neighbours grouped."""
    field = Field(comm)
    channels = comm.get("channels")
    if channels is None:
        return None
    channels_field = field.child("channels")
    pictures = []
    for index, channel in enumerate(channels):
        channel_field = channels_field.item(index)
        picture = "ring: %s   tree: %s" % (ring_picture(channel_field, comm.get("rank")),
                                           tree_picture(channel_field))
        channel_id = channel.get("id", index) if isinstance(channel, dict) else index
        pictures.append((channel_id, picture))
    return pictures


def group_channels(pictures):
    groups = []
    for channel_id, picture in pictures:
        if groups and groups[-1][1] == picture and groups[-1][0][-1] + 1 == channel_id:
            groups[-1][0].append(channel_id)
        else:
            groups.append(([channel_id], picture))
    return groups


def channel_label(ids):
    if len(ids) == 1:
        return "ch%d" % ids[0]
    return "ch%d-%d" % (ids[0], ids[-1])


def ring_lines(comm, expand=False, indent="  "):
    pictures = channel_pictures(comm)
    if pictures is None:
        return [indent + "channels " + Field(comm).text("channels")]
    if not pictures:
        return [indent + "no channels"]
    if expand:
        groups = [([channel_id], picture) for channel_id, picture in pictures]
    else:
        groups = group_channels(pictures)
    rows = [[channel_label(ids), picture] for ids, picture in groups]
    return table(rows, indent)


def render_ring(data, args=None):
    expand = bool(getattr(args, "expand", False))
    lines = []
    for comm in data.get("communicators") or []:
        lines.append(comm_title(comm))
        lines.extend(ring_lines(comm, expand))
    if not lines:
        lines.append("no communicators")
    return "\n".join(lines) + "\n"


# --- nccl-proxy ----------------------------------------------------------

SUB_COLUMNS = ["channel", "peer", "nsteps", "posted", "received", "transmitted", "done"]


def proxy_op_lines(op_field, indent="  "):
    head = "op %s opCount %s %s %s %s nsubs %s done %s" % (
        op_field.text("address", hex_text), op_field.text("op_count"),
        op_field.text("collective", missing="?"), op_field.text("pattern", missing="?"),
        op_field.text("protocol", missing="?"), op_field.text("nsubs"), op_field.text("done"))
    lines = [indent + head]
    subs = op_field.raw("subs")
    if subs is None:
        if op_field.has("subs"):
            lines.append(indent + "  subs " + op_field.text("subs"))
        return lines
    rows = [SUB_COLUMNS]
    subs_field = op_field.child("subs")
    for index, sub in enumerate(subs):
        sub_field = subs_field.item(index)
        rows.append([sub_field.text(column) for column in SUB_COLUMNS])
    lines.extend(table(rows, indent + "  "))
    return lines


def proxy_lines(comm, indent="  "):
    field = Field(comm)
    if "proxy_ops" not in comm:
        return [indent + "proxy ops n/a"]
    ops = comm.get("proxy_ops")
    if ops is None:
        return [indent + "proxy ops " + field.text("proxy_ops")]
    if not ops:
        return [indent + "no proxy ops in flight"]
    ops_field = field.child("proxy_ops")
    lines = []
    for index, op in enumerate(ops):
        lines.extend(proxy_op_lines(ops_field.item(index), indent))
    return lines


def render_proxy(data, args=None):
    lines = []
    for comm in data.get("communicators") or []:
        ops = comm.get("proxy_ops")
        count = len(ops) if isinstance(ops, list) else 0
        lines.append("%s: %d proxy op%s" % (comm_title(comm), count, "" if count == 1 else "s"))
        lines.extend(proxy_lines(comm))
    if not lines:
        lines.append("no communicators")
    return "\n".join(lines) + "\n"


# --- nccl-comm -----------------------------------------------------------

def planned_lines(comm, indent="  "):
    field = Field(comm)
    if "planned" not in comm:
        return []
    if comm.get("planned") is None:
        return [indent + "planned " + field.text("planned")]
    planned = field.child("planned")
    lines = [indent + "planned: %s coll task(s), %s p2p task(s), %s unlaunched plan(s), in group %s" % (
        planned.text("n_tasks_coll"), planned.text("n_tasks_p2p"),
        planned.text("unlaunched_plans"), planned.text("in_group"))]
    for coll in planned.raw("colls") or []:
        coll_field = Field(coll)
        lines.append(indent + "  %s count %s %s %s root %s" % (
            coll_field.text("collective"), coll_field.text("count"), coll_field.text("datatype"),
            coll_field.text("op"), coll_field.text("root")))
    for p2p in planned.raw("p2p") or []:
        p2p_field = Field(p2p)
        lines.append(indent + "  %s peer %s count %s %s" % (
            p2p_field.text("kind"), p2p_field.text("peer"), p2p_field.text("count"),
            p2p_field.text("datatype")))
    return lines


def unavailable_lines(obj, path="", indent="    "):
    """Every `unavailable` entry inside obj as `path: <unreadable ...>`."""
    lines = []
    if isinstance(obj, dict):
        for key, reason in sorted((obj.get("unavailable") or {}).items()):
            name = "%s.%s" % (path, key) if path else key
            lines.append("%s%s: %s" % (indent, escape_for_terminal(name), unreadable_text(reason)))
        for key, value in obj.items():
            if key != "unavailable":
                lines.extend(unavailable_lines(value, "%s.%s" % (path, key) if path else key, indent))
    elif isinstance(obj, list):
        for index, item in enumerate(obj):
            lines.extend(unavailable_lines(item, "%s[%d]" % (path, index), indent))
    return lines


def comm_detail_lines(comm, expand=False):
    field = Field(comm)
    lines = ["communicator %s  hash %s" % (field.text("address", hex_text),
                                          field.text("comm_hash", hex_text))]
    lines.append("  rank %s of %s  node %s/%s  local rank %s/%s" % (
        field.text("rank"), field.text("nranks"), field.text("node"), field.text("nnodes"),
        field.text("local_rank"), field.text("local_ranks")))
    lines.append("  cuda dev %s  nvml dev %s  bus %s  channels %s" % (
        field.text("cuda_dev"), field.text("nvml_dev"), field.text("bus_id"),
        field.text("nchannels")))
    seq = comm.get("seq_launched")
    if isinstance(seq, dict):
        seq_field = field.child("seq_launched")
        lines.append("  launched  " + "  ".join(
            "%s %s" % (name, seq_field.text(name)) for name in COLLECTIVES if name in seq))
    else:
        lines.append("  " + launched_text(comm))
    p2p = comm.get("p2p_op_count")
    if isinstance(p2p, dict):
        p2p_field = field.child("p2p_op_count")
        per_channel = p2p.get("per_channel")
        p2p_text = p2p_field.text("total")
        if isinstance(per_channel, list) and len(per_channel) > 4 and len(set(map(str, per_channel))) == 1:
            p2p_text += " (per channel: %d x %s)" % (len(per_channel), plain(per_channel[0]))
        elif isinstance(per_channel, list):
            p2p_text += " (per channel: %s)" % " ".join(rank_list(per_channel))
    else:
        p2p_text = field.text("p2p_op_count")
    lines.append("  coll_op_count %s  op_count %s  p2p_op_count %s" % (
        field.text("coll_op_count"), field.text("op_count"), p2p_text))
    health = comm.get("health")
    if isinstance(health, dict):
        health_field = field.child("health")
        lines.append("  health " + health_text(comm))
        lines.append("    " + "  ".join("%s %s" % (key, health_field.text(key))
                                        for key in health if key != "unavailable"))
    else:
        lines.append("  health " + health_text(comm))
    lines.append("  channels:")
    lines.extend(ring_lines(comm, expand, "    "))
    lines.append("  proxy ops:")
    lines.extend(proxy_lines(comm, "    "))
    lines.extend(planned_lines(comm))
    unreadable = unavailable_lines(comm)
    if unreadable:
        lines.append("  unreadable:")
        lines.extend(unreadable)
    warnings = comm.get("warnings") or []
    if warnings:
        lines.append("  warnings:")
        lines.extend("    " + plain(warning) for warning in warnings)
    return lines


def render_comm(communicators, args=None):
    expand = bool(getattr(args, "expand", False))
    blocks = ["\n".join(comm_detail_lines(comm, expand)) for comm in communicators]
    return "\n\n".join(blocks) + "\n"


# --- nccl-threads --------------------------------------------------------

def frame_text(frame):
    field = Field(frame)
    text = field.text("pc", hex_text, missing="?")
    function = frame.get("function") if isinstance(frame, dict) else None
    if function:
        text += " " + escape_for_terminal(function)
        if frame.get("offset") is not None:
            text += "+%s" % plain(frame.get("offset"))
    else:
        text += " ??"
    if isinstance(frame, dict) and frame.get("module"):
        text += " in " + escape_for_terminal(frame.get("module"))
    return text


def python_frame_text(frame):
    """ "Worker.run (/app/train.py:62)", or the frame's "unreadable frame at 0x..." text."""
    if not isinstance(frame, dict):
        return "?"
    if frame.get("error"):
        return escape_for_terminal(frame["error"])
    line = frame.get("line")
    return "%s (%s:%s)" % (escape_for_terminal(frame.get("qualname") or frame.get("function") or "?"),
                           escape_for_terminal(frame.get("file") or "?"), "?" if line is None else plain(line))


def render_threads(data, args=None):
    max_frames = getattr(args, "frames", None)
    lines = []
    threads = data.get("threads") or []
    for thread in threads:
        field = Field(thread)
        head = "thread %s" % field.text("tid")
        if thread.get("gdb_num") is not None:
            head = "[%s] " % plain(thread["gdb_num"]) + head
        if thread.get("name"):
            head += ' "%s"' % escape_for_terminal(thread["name"])
        if thread.get("state"):
            head += " [%s]" % escape_for_terminal(thread["state"])
        head += " blocked in %s" % field.text("blocked_in", missing="unknown")
        lines.append(head)
        frames = thread.get("frames")
        if frames is None:
            if "frames" in thread:
                lines.append("    frames " + field.text("frames"))
            continue
        shown = frames if max_frames is None else frames[:max_frames]
        for index, frame in enumerate(shown):
            lines.append("    #%d %s" % (index, frame_text(frame)))
        if len(shown) < len(frames):
            lines.append("    ... %d more frame(s)" % (len(frames) - len(shown)))
        python_frames = (thread.get("python") or {}).get("frames") if isinstance(thread.get("python"), dict) else None
        if python_frames:
            py_shown = python_frames if max_frames is None else python_frames[:max_frames]
            for index, frame in enumerate(py_shown):
                lines.append("    py#%d %s" % (index, python_frame_text(frame)))
            if len(py_shown) < len(python_frames):
                lines.append("    ... %d more Python frame(s)" % (len(python_frames) - len(py_shown)))
    for warning in data.get("warnings") or []:
        lines.append("note: %s" % plain(warning.get("reason") if isinstance(warning, dict) else warning))
    source = data.get("source")
    summary = "%d thread%s" % (len(threads), "" if len(threads) == 1 else "s")
    if source:
        summary += " (from %s)" % source
    lines.append(summary)
    return "\n".join(lines) + "\n"


# --- nccl-kernels --------------------------------------------------------

def _kernel_what(decoded, fallback):
    if not decoded:
        return escape_for_terminal(fallback)
    return " ".join(escape_for_terminal(decoded.get(key)) for key in
                    ("collective", "op", "datatype", "algorithm", "protocol", "detail") if decoded.get(key))


def _block_text(block):
    """What one block does, e.g. "RING SIMPLE: waiting for data from rank 1 at step 24"."""
    what = " ".join(escape_for_terminal(block.get(key)) for key in ("algorithm", "protocol")
                    if block.get(key)) or "function unknown"
    waits = [wait for wait in block.get("waits") or [] if str(wait.get("kind", "")).startswith("waiting")]
    if waits:
        return "%s: %s" % (what, "; ".join(escape_for_terminal(wait.get("text")) for wait in waits))
    if block.get("state") == "unknown":
        reasons = [block["reason"]] if block.get("reason") else sorted(
            {"%s %s: %s" % (wait.get("direction"), wait.get("peer"), wait.get("text"))
             for wait in block.get("waits") or [] if wait.get("kind") == "unknown"})
        return "%s: wait unknown (%s)" % (what, escape_for_terminal("; ".join(reasons) or "counters unavailable"))
    return "%s: not waiting on a peer (data and slots available)" % what


def _peers_text(blocks):
    """"; ring 1 -> me -> 1, tree up 1" when every block of the group has the same neighbours."""
    peers = [block.get("peers") for block in blocks]
    if not peers[0] or any(peer != peers[0] for peer in peers):
        return ""
    first = peers[0]
    text = "; ring %s -> me -> %s" % (first.get("ring_prev"), first.get("ring_next"))
    if first.get("tree_up") not in (None, -1):
        text += ", tree up %s" % first.get("tree_up")
    if first.get("tree_down"):
        text += ", tree down %s" % ",".join(str(rank) for rank in first["tree_down"])
    return escape_for_terminal(text)


def _block_groups(blocks):
    """Consecutive blocks with the same text, as ("blocks 0-23 (channels 0-23)", text)."""
    groups = []
    for block in blocks:
        text = _block_text(block)
        if groups and groups[-1][2] == text and groups[-1][1][-1]["block"] + 1 == block["block"] \
                and groups[-1][1][-1].get("peers") == block.get("peers"):
            groups[-1][1].append(block)
        else:
            groups.append((None, [block], text))
    lines = []
    for _unused, members, text in groups:
        first, last = members[0], members[-1]
        span = "block %d" % first["block"] if first is last else "blocks %d-%d" % (first["block"], last["block"])
        channels = [member.get("channel") for member in members]
        if None in channels:
            where = "channel unknown"
        elif len(channels) == 1:
            where = "channel %d" % channels[0]
        else:
            where = "channels %s" % ",".join(str(channel) for channel in channels) \
                if channels != list(range(channels[0], channels[0] + len(channels))) \
                else "channels %d-%d" % (channels[0], channels[-1])
        lines.append("    %s (%s%s) %s" % (span, where, _peers_text(members), text))
    return lines


def render_kernels(data, args=None):
    lines = []
    for kernel in data.get("kernels") or []:
        field = Field(kernel)
        lines.append("kernel %s on device %s (grid %s, %s%s): %s" % (
            field.text("kernel"), field.text("device"), field.text("grid"), field.text("status"),
            ", focus" if kernel.get("focus") else "", _kernel_what(kernel.get("nccl"), kernel.get("invocation"))))
        lines.append("    %s blocks x %s threads; channel mask %s" % (
            field.text("grid_dim"), field.text("block_dim"), field.text("channel_mask")))
        comm = kernel.get("communicator")
        if comm:
            lines.append("    %s [%s]" % (comm_title(comm), escape_for_terminal(kernel.get("communicator_match"))))
        else:
            lines.append("    communicator unknown: %s" % escape_for_terminal(kernel.get("communicator_match")))
        for note in kernel.get("notes") or []:
            lines.append("    note: %s" % escape_for_terminal(note))
        for wait in kernel.get("waits") or []:
            lines.append("    => %s" % escape_for_terminal(wait.get("text")))
        lines.extend(_block_groups(kernel.get("blocks") or []))
    for kernel in data.get("other_kernels") or []:
        lines.append("kernel %s on device %s: %s (not NCCL)" % (
            kernel.get("kernel"), kernel.get("device"), escape_for_terminal(kernel.get("invocation"))))
    total = data.get("total_kernels", 0)
    shown = len(data.get("kernels") or [])
    lines.append("%d NCCL kernel%s (%d kernel%s resident)" % (
        shown, "" if shown == 1 else "s", total, "" if total == 1 else "s"))
    return "\n".join(lines) + "\n"
