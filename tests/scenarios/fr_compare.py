#!/usr/bin/env python3
"""Compare PyTorch's own flight recorder dump with ncclscope's reading of the same process.

usage: fr_compare.py FR_RANK.pkl STATE.json [--allow-later-state] [--quiet]

FR_RANK.pkl: pickle.loads-able bytes of torch._C._distributed_c10d._dump_nccl_trace()
(or the file a watchdog timeout writes). STATE.json: `ncclscope state --json` of that
process (its "torch" section). Prints one line per differing field, then a summary.
Exit 0: every entry and field equal; 1: a mismatch; 2: bad input.
--allow-later-state: the dump ran update_state() on the CUDA events after (or before)
our read, so a state the dump shows as more advanced (scheduled < started < completed,
with its discovery times) is reported as a note, not a mismatch.
"""
import json
import pickle
import sys

ENTRY_FIELDS = ["pg_id", "process_group", "collective_seq_id", "p2p_seq_id", "op_id", "profiling_name",
                "time_created_ns", "input_sizes", "input_dtypes", "output_sizes", "output_dtypes", "state",
                "time_discovered_started_ns", "time_discovered_completed_ns", "retired", "timeout_ms",
                "is_p2p", "thread_id", "thread_name", "duration_ms"]
STATE_FIELDS = {"state", "time_discovered_started_ns", "time_discovered_completed_ns", "retired", "duration_ms"}
STATE_ORDER = {"scheduled": 0, "started": 1, "completed": 2}


def normal(value):
    """Tuples and lists compare alike (the pickle has tuples, JSON lists)."""
    if isinstance(value, (list, tuple)):
        return [normal(item) for item in value]
    if isinstance(value, dict):
        return {key: normal(item) for key, item in value.items()}
    return value


def frames_of(entry):
    return [(frame.get("name"), frame.get("filename"), frame.get("line")) for frame in entry.get("frames", [])]


def compare(dump, torch, allow_later_state):
    mismatches, notes = [], []
    ours = {entry["record_id"]: entry for entry in torch.get("entries", [])}
    theirs = {entry["record_id"]: entry for entry in dump.get("entries", [])}
    for record_id in sorted(set(ours) | set(theirs)):
        if record_id not in ours:
            mismatches.append(f"record {record_id}: in the dump, not read from memory")
            continue
        if record_id not in theirs:
            mismatches.append(f"record {record_id}: read from memory, not in the dump")
            continue
        mine, dumped = ours[record_id], theirs[record_id]
        later = allow_later_state and STATE_ORDER.get(dumped.get("state"), -1) > STATE_ORDER.get(mine.get("state"), -1)
        for field in ENTRY_FIELDS:
            if field not in dumped and field not in mine:
                continue
            a, b = normal(dumped.get(field)), normal(mine.get(field))
            if field == "duration_ms" and a is not None and b is not None and abs(a - b) < 1e-3:
                continue
            if a != b:
                line = f"record {record_id} {field}: dump {a!r}, memory {b!r}"
                (notes if later and field in STATE_FIELDS else mismatches).append(line)
        if frames_of(dumped) != frames_of(mine):
            mismatches.append(f"record {record_id} frames: dump {frames_of(dumped)!r}, memory {frames_of(mine)!r}")
    # Process groups: pg_config name -> {name, desc, ranks "[0, 1]"}.
    groups = {group["name"]: group for group in torch.get("process_groups", []) or []}
    for name, config in (dump.get("pg_config") or {}).items():
        group = groups.pop(name, None)
        if group is None:
            mismatches.append(f"pg_config {name!r}: in the dump, not read from memory")
            continue
        ranks = "[" + ", ".join(str(rank) for rank in group.get("ranks", [])) + "]"
        for field, value in (("desc", group.get("desc")), ("ranks", ranks)):
            if config.get(field) != value:
                mismatches.append(f"pg_config {name!r} {field}: dump {config.get(field)!r}, memory {value!r}")
    for name in groups:
        mismatches.append(f"pg_config {name!r}: read from memory, not in the dump")
    if torch.get("pg_status_unavailable"):
        notes.append(f"pg_status not compared: {torch['pg_status_unavailable']}")
    else:
        status = {str(pg["pg_id"]): pg for pg in torch.get("pg_status", [])}
        for pg_id, dumped in (dump.get("pg_status") or {}).items():
            mine = status.pop(pg_id, None)
            if mine is None:
                mismatches.append(f"pg_status {pg_id}: in the dump, not read from memory")
                continue
            for field, value in dumped.items():
                if mine.get(field) != value:
                    line = f"pg_status {pg_id} {field}: dump {value!r}, memory {mine.get(field)!r}"
                    (notes if allow_later_state and field != "last_enqueued_collective" else mismatches).append(line)
        for pg_id in status:
            mismatches.append(f"pg_status {pg_id}: read from memory, not in the dump")
    if dump.get("comm_lib_version") != torch.get("comm_lib_version"):
        mismatches.append(f"comm_lib_version: dump {dump.get('comm_lib_version')!r}, memory {torch.get('comm_lib_version')!r}")
    return mismatches, notes, len(theirs), len(ours)


def main(argv):
    args = [arg for arg in argv[1:] if not arg.startswith("--")]
    flags = {arg for arg in argv[1:] if arg.startswith("--")}
    if len(args) != 2 or flags - {"--allow-later-state", "--quiet"}:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 64
    try:
        with open(args[0], "rb") as handle:
            dump = pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError) as error:
        print(f"fr_compare: {args[0]}: not a flight recorder pickle: {error}", file=sys.stderr)
        return 2
    try:
        with open(args[1]) as handle:
            document = json.load(handle)
    except (OSError, ValueError) as error:
        print(f"fr_compare: {args[1]}: not a JSON document: {error}", file=sys.stderr)
        return 2
    torch = document.get("torch") if isinstance(document, dict) else None
    if not isinstance(torch, dict) or torch.get("unavailable"):
        reason = torch.get("unavailable") if isinstance(torch, dict) else "no torch section"
        print(f"fr_compare: {args[1]}: no flight recorder read: {reason}", file=sys.stderr)
        return 1
    mismatches, notes, dumped, read = compare(dump, torch, "--allow-later-state" in flags)
    if "--quiet" not in flags:
        for line in mismatches:
            print("MISMATCH " + line)
        for line in notes:
            print("note " + line)
    print(f"fr_compare: {dumped} entries in the dump, {read} read from memory, {len(mismatches)} mismatches, "
          f"{len(notes)} notes")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
