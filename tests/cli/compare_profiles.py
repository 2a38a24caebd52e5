"""Compares two ncclscope.layout/1 profiles struct by struct, member by member, enum by enum.

Usage: compare_profiles.py [--system-types-as-notes] EXPECTED.json ACTUAL.json
Build-ids, library paths, symbols and the header-profile marker are not compared (a header-built
profile has no build-id and no symbols); everything the decoders read is. Prints one line per
difference and a count; exit 1 when they differ, 0 when equal."""
import json
import sys

IGNORED_CONSTANTS = {"NCCLSCOPE_FROM_HEADERS"}


def is_system_type(name):
    """glibc's own types (__pthread_cond_s, __atomic_wide_counter): they follow the C library a
    build used, not NCCL's headers; offsets and sizes of the NCCL members holding them are
    still compared."""
    return name.startswith("__") or name.startswith("(anonymous __")


def referenced(profile, name):
    """Whether any member of any struct of PROFILE has type NAME (then its absence is a difference)."""
    return any(m.get("type") == name for layout in profile["structs"].values() for m in layout.get("members", []))


def members_by_name(layout):
    return {m["name"]: m for m in layout.get("members", [])}


def compare(expected, actual, system_types_as_notes=False):
    differences, notes = [], []
    counts = {"structs": 0, "members": 0, "enums": 0, "values": 0}
    for name in sorted(set(expected["structs"]) | set(actual["structs"])):
        want, got = expected["structs"].get(name), actual["structs"].get(name)
        if system_types_as_notes and is_system_type(name):
            if want != got:
                notes.append(f"struct {name} (C library type) differs")
            continue
        if want is None and system_types_as_notes and not referenced(expected, name):
            # Declared in the headers, used by no code (2.21.5's ncclTaskColl in info.h): no DWARF.
            notes.append(f"struct {name}: only in {sys.argv[-1]} (unused in the library, so not in its DWARF)")
            continue
        if want is None or got is None:
            differences.append(f"struct {name}: only in {'actual' if want is None else 'expected'}")
            continue
        counts["structs"] += 1
        for key in ("size", "union"):
            if want.get(key) != got.get(key):
                differences.append(f"struct {name}: {key} {want.get(key)} != {got.get(key)}")
        want_members, got_members = members_by_name(want), members_by_name(got)
        if [m["name"] for m in want["members"]] != [m["name"] for m in got["members"]]:
            differences.append(f"struct {name}: member order or set differs: "
                               f"only expected {sorted(set(want_members) - set(got_members))}, "
                               f"only actual {sorted(set(got_members) - set(want_members))}")
        for member in sorted(set(want_members) & set(got_members)):
            counts["members"] += 1
            if want_members[member] != got_members[member]:
                if system_types_as_notes and is_system_type(got_members[member].get("type", "")):
                    same_place = all(want_members[member].get(k) == got_members[member].get(k)
                                     for k in ("offset", "size"))
                    if same_place:
                        notes.append(f"{name}.{member}: C library type {want_members[member].get('type')}"
                                     f" vs {got_members[member].get('type')}, same offset and size")
                        continue
                differences.append(f"{name}.{member}: {want_members[member]} != {got_members[member]}")
    for name in sorted(set(expected["enums"]) | set(actual["enums"])):
        want, got = expected["enums"].get(name), actual["enums"].get(name)
        if want is None and system_types_as_notes:
            notes.append(f"enum {name}: only in {sys.argv[-1]} (unused in the library, so not in its DWARF)")
            continue
        if want is None or got is None:
            differences.append(f"enum {name}: only in {'actual' if want is None else 'expected'}")
            continue
        counts["enums"] += 1
        counts["values"] += len(want["values"])
        if want != got:
            differences.append(f"enum {name}: {want} != {got}")
    want_constants = {k: v for k, v in expected.get("constants", {}).items() if k not in IGNORED_CONSTANTS}
    got_constants = {k: v for k, v in actual.get("constants", {}).items() if k not in IGNORED_CONSTANTS}
    if want_constants != got_constants:
        differences.append(f"constants: {want_constants} != {got_constants}")
    if expected.get("nccl_version") != actual.get("nccl_version"):
        differences.append(f"nccl_version {expected.get('nccl_version')} != {actual.get('nccl_version')}")
    return differences, notes, counts


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    with open(args[0]) as a, open(args[1]) as b:
        differences, notes, counts = compare(json.load(a), json.load(b),
                                             "--system-types-as-notes" in sys.argv)
    for line in notes:
        print("NOTE " + line)
    for line in differences:
        print("DIFF " + line)
    print(f"compared {counts['structs']} structs, {counts['members']} members, {counts['enums']} enums "
          f"({counts['values']} values): {len(differences)} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
