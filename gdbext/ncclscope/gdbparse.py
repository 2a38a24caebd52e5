"""Parsers for the text of gdb commands (`info proc mappings`, `info target`, ...).

Kept apart from the gdb-facing modules so they are unit-tested on captured text
without a debugger. Pure Python.
"""

import re

_MAPPING_LINE = re.compile(
    r"^\s*(0x[0-9a-fA-F]+)\s+(0x[0-9a-fA-F]+)\s+(0x[0-9a-fA-F]+)\s+(0x[0-9a-fA-F]+)"
    r"(?:\s+([r-][w-][x-][ps-]))?(?:\s+(.*?))?\s*$")
_CORE_SECTION_LINE = re.compile(
    r"^\s*\[\s*\d+\]\s+(0x[0-9a-fA-F]+)->(0x[0-9a-fA-F]+)\s+at\s+0x[0-9a-fA-F]+:\s+(load\d+\w*)\s+(.*)$")
_CORE_FILE_LINE = re.compile(r"^\s*`(.*)', file type", re.M)
_SYMBOL_LINE = re.compile(r"^(\S+?)(?: \+ (\d+))? in section (\S+)(?: of (.*))?$")


def parse_proc_mappings(text):
    """Regions from `info proc mappings`: dicts with start, end (hex strings), writable, path.

    gdb 12+ prints a Perms column for live processes; without it (cores, old
    gdb) the permission keys are left out (unknown).
    """
    regions = []
    for line in (text or "").splitlines():
        match = _MAPPING_LINE.match(line)
        if not match:
            continue
        start, end, _size, offset, perms, path = match.groups()
        region = {"start": "0x%x" % int(start, 16), "end": "0x%x" % int(end, 16),
                  "file_offset": "0x%x" % int(offset, 16)}
        if perms:
            region["readable"] = perms[0] == "r"
            region["writable"] = perms[1] == "w"
            region["executable"] = perms[2] == "x"
            region["shared"] = perms[3] == "s"
        region["path"] = path or ""
        regions.append(region)
    return regions


def parse_core_sections(text):
    """Regions of a core's PT_LOAD segments from `maint info sections -all-objects`."""
    regions = []
    for line in (text or "").splitlines():
        match = _CORE_SECTION_LINE.match(line)
        if not match:
            continue
        start, end, _name, flags = match.groups()
        flag_set = set(flags.split())
        regions.append({"start": "0x%x" % int(start, 16), "end": "0x%x" % int(end, 16),
                        "writable": "READONLY" not in flag_set,
                        "executable": "CODE" in flag_set,
                        "saved": "HAS_CONTENTS" in flag_set})
    return regions


def parse_core_path(info_target_text):
    """The core file name from `info target` ("Local core dump file: `PATH', file type ...")."""
    text = info_target_text or ""
    marker = text.find("core dump file")
    if marker < 0:
        return None
    match = _CORE_FILE_LINE.search(text, marker)
    return match.group(1) if match else None


def parse_info_symbol(text):
    """(function, offset, module) from `info symbol ADDR`, or None when no symbol."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    match = _SYMBOL_LINE.match(line)
    if not match:
        return None
    function, offset, _section, module = match.groups()
    return function, int(offset) if offset else 0, module


def parse_quoted_setting(text):
    """The value inside the quotes of `show sysroot`-style text, else the text itself."""
    match = re.search(r'"(.*)"', text or "")
    return match.group(1) if match else (text or "").strip()


def normalise_sysroot(sysroot):
    """gdb's "target:" prefix means the target's own filesystem: local paths for a native target."""
    if sysroot is None:
        return ""
    if sysroot.startswith("target:"):
        return sysroot[len("target:"):]
    return sysroot


def merge_core_regions(load_sections, file_mappings):
    """A core's regions: its saved load segments, named by the file mappings that cover them.

    load_sections from parse_core_sections (writable known, no paths); file_mappings
    from `info proc mappings` on the core (NT_FILE: paths, no permissions). File
    mappings no segment covers (not saved in the core) are added as read-only.
    """
    regions = []
    for section in load_sections:
        start = int(section["start"], 16)
        region = dict(section)
        for mapping in file_mappings:
            map_start, map_end = int(mapping["start"], 16), int(mapping["end"], 16)
            if map_start <= start < map_end and mapping.get("path"):
                region["path"] = mapping["path"]
                offset = int(mapping.get("file_offset", "0x0"), 16) + (start - map_start)
                region["file_offset"] = "0x%x" % offset
                break
        regions.append(region)
    covered = [(int(region["start"], 16), int(region["end"], 16)) for region in load_sections]
    for mapping in file_mappings:
        map_start = int(mapping["start"], 16)
        if any(start <= map_start < end for start, end in covered):
            continue
        extra = dict(mapping)
        extra["writable"] = False
        extra["saved"] = False
        regions.append(extra)
    regions.sort(key=lambda region: int(region["start"], 16))
    return regions


_FOCUS_PARTS = {name: re.compile(r"\b%s\s+(\d+|\([\d,\s]+\))" % name)
                for name in ("kernel", "block", "thread")}


def cuda_focus_command(text):
    """`cuda kernel K block (x,y,z) thread (x,y,z)` from `cuda kernel block thread` output."""
    parts = []
    for name, pattern in _FOCUS_PARTS.items():
        match = pattern.search(text or "")
        if not match:
            return None
        parts.append("%s %s" % (name, match.group(1).replace(" ", "")))
    return "cuda " + " ".join(parts)


_CUDA_KERNEL_LINE = re.compile(
    r"^\s*(\*?)\s*(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\w+)\s+(0x[0-9a-fA-F]+)\s+"
    r"(\([\d,\s]+\))\s+(\([\d,\s]+\))\s+(.*?)\s*$")


def parse_cuda_kernels(text):
    """Rows of cuda-gdb's `info cuda kernels` as dicts (focus, kernel, device, grid dims...)."""
    kernels = []
    for line in (text or "").splitlines():
        match = _CUDA_KERNEL_LINE.match(line)
        if not match:
            continue
        focus, kernel, parent, device, grid, status, sms_mask, grid_dim, block_dim, invocation = match.groups()
        kernels.append({"kernel": int(kernel), "parent": None if parent == "-" else parent,
                        "device": int(device), "grid": int(grid), "status": status,
                        "sms_mask": sms_mask.lower(), "sms": bin(int(sms_mask, 16)).count("1"),
                        "grid_dim": grid_dim.replace(" ", ""), "block_dim": block_dim.replace(" ", ""),
                        "invocation": invocation, "focus": focus == "*"})
    return kernels


_X_LINE = re.compile(r"^\s*(0x[0-9a-fA-F]+)(?:\s*<[^>]*>)?:\s*(.*)$")


def parse_x_words(text):
    """Values of an `x/Ngx` or `x/Nwx` dump, in address order (labels like <sym+8> allowed)."""
    values = []
    for line in (text or "").splitlines():
        match = _X_LINE.match(line)
        if match:
            values.extend(int(word, 16) for word in match.group(2).split() if word.startswith("0x"))
    return values


def grid_blocks(grid_dim):
    """Number of blocks of a grid "(x,y,z)", or None."""
    numbers = re.findall(r"\d+", grid_dim or "")
    if len(numbers) != 3:
        return None
    x, y, z = (int(number) for number in numbers)
    return x * y * z
