#!/usr/bin/env python3
"""Adds the watchdog's layout and symbols (torch/watchdog.h) to a torch profile made before them.

Usage: torch-profile-add-watchdog.py PROFILE.json DWARF_ELF SYMBOLS.txt [--cli build/bin/ncclscope]
  DWARF_ELF: a linked ELF built -g against the same wheel's headers that names ProcessGroupNCCL,
             its Watchdog, HeartbeatMonitor and Options (scripts/heartbeat-offsets.cpp as
             scripts/device-heartbeat-probe.sh builds it: offsets-dwarf.xz);
  SYMBOLS.txt: `readelf -sW libtorch_cuda.so` lines of that wheel (the probe's libtorch_cuda.symbols.txt).
The structs come from DWARF by name (`ncclscope layout extract --root/--enum`), the two
std::thread state vtables and shouldDump_ from the symbol text; PROFILE is rewritten in place.
A struct the profile already has is replaced only when the DWARF describes it the same size.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOTS = ["c10d::ProcessGroupNCCL", "c10d::ProcessGroupNCCL::Watchdog", "c10d::ProcessGroupNCCL::HeartbeatMonitor",
         "c10d::ProcessGroupNCCL::Options"]
ENUMS = ["c10d::ErrorType"]
SYMBOLS = ["_ZTVNSt6thread11_State_implINS_8_InvokerISt5tupleIJMN4c10d16ProcessGroupNCCL8WatchdogEFvvEPS5_EEEEEE",
           "_ZTVNSt6thread11_State_implINS_8_InvokerISt5tupleIJMN4c10d16ProcessGroupNCCL16HeartbeatMonitorEFvvEPS5_EEEEEE",
           "_ZN4c10d16ProcessGroupNCCL11shouldDump_E"]


def symbol_values(path):
    values = {}
    for line in open(path):
        fields = line.split()
        if len(fields) >= 8 and fields[0].endswith(":") and fields[7] in SYMBOLS:
            values[fields[7]] = int(fields[1], 16)
    return values


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    profile_path, dwarf, symbols_path = argv[:3]
    cli = argv[argv.index("--cli") + 1] if "--cli" in argv else "build/bin/ncclscope"
    with tempfile.TemporaryDirectory() as work:
        extracted = os.path.join(work, "watchdog.json")
        command = [cli, "layout", "extract", dwarf, "-o", extracted]
        for root in ROOTS:
            command += ["--root", root]
        for enum in ENUMS:
            command += ["--enum", enum]
        subprocess.run(command, check=True)
        new = json.load(open(extracted))
    missing = [root for root in ROOTS if root not in new["structs"]]
    if missing:
        sys.exit("%s: DWARF has no %s" % (dwarf, ", ".join(missing)))
    values = symbol_values(symbols_path)
    if set(values) != set(SYMBOLS):
        sys.exit("%s: missing symbols %s" % (symbols_path, ", ".join(sorted(set(SYMBOLS) - set(values)))))
    profile = json.load(open(profile_path))
    for name, layout in new["structs"].items():
        old = profile["structs"].get(name)
        if old is not None and old["size"] != layout["size"]:
            sys.exit("%s: %s is %d bytes there, %d in %s" % (profile_path, name, old["size"], layout["size"], dwarf))
        profile["structs"][name] = layout
    profile.setdefault("enums", {}).update(new.get("enums", {}))
    profile.setdefault("symbols", {}).update(values)
    with open(profile_path, "w") as out:
        json.dump(profile, out)
    # The house format (one struct a line), as `layout torch` writes it.
    shown = subprocess.run([cli, "layout", "show", profile_path, "--json"], check=True, capture_output=True, text=True).stdout
    json.loads(shown)
    with open(profile_path, "w") as out:
        out.write(shown)
    print("%s: +%d structs, +%d enums, symbols %s" % (profile_path, len(new["structs"]), len(new.get("enums", {})),
                                                      ", ".join("%s=0x%x" % (k[:40], v) for k, v in values.items())))


if __name__ == "__main__":
    main(sys.argv[1:])
