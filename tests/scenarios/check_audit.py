#!/usr/bin/env python3
"""PASS/FAIL of one real audit case (scripts/device-audit-run.sh, tests/scenarios/nccl_audit_scenarios.cu).

  check_audit.py CASE AUDIT.json [--label L] [--truth RANK.log]... [--state RANK.state.json]...

Compares the findings of an `ncclscope audit --json` document ("rule@ranks", the ranks of each
finding's `where`) with what the scenario program leaves behind (EXPECTED below, each entry's
reason from NCCL 2.28.9's source or a named real run). Every finding in `required` must fire, no
finding outside `required` and `allowed` may fire, and every expected rule id must be one the
audit document's own rule table lists (a typo here fails instead of passing quietly). For the
registration cases the rank's state snapshot must list the range the program printed
(GROUND_TRUTH expected_begin/expected_end), and the registration rules must have checked every
communicator. Prints one line per case; exit 0 PASS, 1 FAIL, 2 unreadable input.
"""
import argparse
import json
import sys

# rule@ranks -> why. Ranks as the audit prints them: the where[] ranks joined by ",".
EXPECTED = {
    "revoke-no-destroy": {
        "required": {
            "revoked-comm-not-destroyed@1": "rank 1 called ncclCommRevoke and never ncclCommDestroy",
            "seq-spread@1": "rank 1 launched 3 AllReduce, rank 0 4",
        },
        "allowed": {
            "comm-async-error@0": "rank 1's revoke stops its proxy (ncclProxyStop), closing the socket rank 0 "
                                  "receives on (seen on the 2026-12-05 H100 run)",
        },
    },
    "destroy-stuck": {
        "required": {
            "destroyed-comm-holds-cuda-work@1": "rank 1's ncclCommDestroy waits for its AllReduce kernel "
                                                "(fired on the 2026-12-05 H100 run: 1 user stream)",
            "seq-spread@0": "rank 0 launched 3 AllReduce, rank 1 4",
        },
        "allowed": {},
    },
    "destroy-stuck-p2p": {
        "required": {
            "destroyed-comm-holds-cuda-work@1": "as destroy-stuck",
            "seq-spread@0": "as destroy-stuck",
            "ipc-import-from-dead-peer@0,1": "rank 0's P2P connectors import rank 1's buffers (p2pMap) "
                                             "while rank 1's comm has destroyFlag set",
        },
        "allowed": {},
    },
    "peer-exit": {
        "required": {
            "comm-async-error@0": "rank 1 _exit()ed; rank 0's proxy sees the closed socket (proxyState->asyncResult)",
        },
        "allowed": {},
    },
    "register-unaligned": {
        "required": {"seq-spread@1": "rank 1 skipped the AllReduce"},
        "allowed": {},
        "registration_rank": 1,
    },
    "abort-stuck": {
        "required": {
            "abort-not-reclaimed@1": "ncclCommAbort set abortFlag and destroyFlag, then commReclaim -> "
                                     "commDestroySync waits for a stream behind a kernel that never ends "
                                     "(init.cc), so the comm is never freed",
        },
        "allowed": {
            "destroyed-comm-holds-cuda-work@1": "destroyFlag is set and the AllReduce launched behind the "
                                                "spinning kernel is still queued: fires as in destroy-stuck",
        },
    },
    "register-leak": {
        "required": {
            "destroyed-comm-holds-cuda-work@1": "as destroy-stuck: same launches, ncclCommDestroy stuck",
            "seq-spread@0": "rank 0 launched 3 AllReduce, rank 1 4",
        },
        "allowed": {},
        "registration_rank": 1,
    },
}


def fired(audit):
    return {"%s@%s" % (f["rule"], ",".join(str(w.get("rank")) for w in f["where"])) for f in audit["findings"]}


def ground_truth(paths, rank):
    for path in paths:
        for line in open(path, errors="replace"):
            if line.startswith("GROUND_TRUTH "):
                truth = json.loads(line[len("GROUND_TRUTH "):])
                if truth.get("rank") == rank:
                    return truth
    return None


def registration_problems(case, audit, truths, states):
    """Why the registration the program made is not shown as it should be ([] when it is)."""
    rank = EXPECTED[case]["registration_rank"]
    problems = []
    for rule in audit["rules"]:
        if rule["id"].startswith("registration-") and rule["not_checked"] > 0:
            problems.append("%s not checked on %d comm(s)" % (rule["id"], rule["not_checked"]))
    if not states:
        return problems
    truth = ground_truth(truths, rank)
    if truth is None or "expected_begin" not in truth:
        return problems + ["no GROUND_TRUTH with expected_begin for rank %d" % rank]
    want = (int(truth["expected_begin"], 16), int(truth["expected_end"], 16))
    for path in states:
        for comm in json.load(open(path)).get("communicators", []):
            if comm.get("rank") != rank:
                continue
            buffers = ((comm.get("cuda") or {}).get("registrations") or {}).get("buffers") or []
            ranges = {(int(b["begin"], 16), int(b["end"], 16)) for b in buffers if "begin" in b and "end" in b}
            if want in ranges:
                return problems
            return problems + ["rank %d's registrations %s lack [0x%x, 0x%x)" %
                               (rank, sorted("0x%x-0x%x" % r for r in ranges), want[0], want[1])]
    return problems + ["no state snapshot holds rank %d" % rank]


def check(case, audit, truths, states):
    expect = EXPECTED[case]
    known = {rule["id"] for rule in audit["rules"]}
    unknown = sorted(k.split("@")[0] for k in list(expect["required"]) + list(expect["allowed"])
                     if k.split("@")[0] not in known)
    got = fired(audit)
    missing = sorted(set(expect["required"]) - got)
    unexpected = sorted(got - set(expect["required"]) - set(expect["allowed"]))
    problems = ["expected rule id not in the audit's rule table: %s" % ", ".join(unknown)] if unknown else []
    problems += ["missing %s (%s)" % (k, expect["required"][k]) for k in missing]
    problems += ["unexpected %s" % k for k in unexpected]
    if "registration_rank" in expect:
        problems += registration_problems(case, audit, truths, states)
    return problems, got


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("case", choices=sorted(EXPECTED))
    parser.add_argument("audit")
    parser.add_argument("--label", default="")
    parser.add_argument("--truth", action="append", default=[])
    parser.add_argument("--state", action="append", default=[])
    args = parser.parse_args()
    name = args.case + (" (%s)" % args.label if args.label else "")
    try:
        audit = json.load(open(args.audit))
        problems, got = check(args.case, audit, args.truth, args.state)
    except (OSError, ValueError, KeyError, TypeError) as error:
        print("FAIL %s: unreadable input: %s" % (name, error))
        return 2
    fired_text = " ".join(sorted(got)) or "-"
    if problems:
        print("FAIL %s: %s; fired: %s" % (name, "; ".join(problems), fired_text))
        return 1
    print("PASS %s: fired %s" % (name, fired_text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
