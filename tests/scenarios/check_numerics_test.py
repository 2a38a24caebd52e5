#!/usr/bin/env python3
"""check_numerics.py on rank 1 of the real nan-bf16-3ranks-device run (H100, 2026-12-05: its
GROUND_TRUTH line and the send/recv entries of cuda-gdb's nccl-numerics document, copied here):
the whole read is equal, one count off fails; a sample (the time-boxed device read) passes when
consistent and fails when it claims more than the buffer holds, a class the buffer lacks, or is
no sample at all."""
import copy
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TRUTH = ('GROUND_TRUTH {"rank":1,"nranks":3,"pid":15426,"comm":"0x55b8e27aeba0","dtype":"bf16","mode":"nan",'
         '"host_buffers":false,"count":1048576,"good_iters":3,"culprit":2,"role":"waiter",'
         '"send":{"address":"0x7f29ebe00000","elements":1048576,"nan":4096,"pos_inf":0,"neg_inf":0,"subnormal":0,'
         '"zero":0,"max_abs":1},"recv":{"address":"0x7f29fe000000","elements":1048576,"nan":4096,"pos_inf":0,'
         '"neg_inf":0,"subnormal":0,"zero":0,"max_abs":3}}\n')


def buffer(address, role, max_abs):
    return {"address": address, "role": role, "stage": "launched", "element_type": "bf16", "seq": 4,
            "elements": 1048576, "sampled": False,
            "stats": {"elements_read": 1048576, "max_abs": max_abs, "nan": 4096, "neg_inf": 0, "pos_inf": 0,
                      "subnormal": 0, "zero": 0}}


WHOLE = {"schema": "ncclscope.numerics/1",
         "buffers": [buffer("0x7f29ebe00000", "send", 1.0), buffer("0x7f29fe000000", "recv", 3.0)]}


def sampled(document, nan=16, read=8192):
    document = copy.deepcopy(document)
    for entry in document["buffers"]:
        entry.update(sampled=True, sample={"chunks": 8, "chunk_bytes": 2048})
        entry["stats"].update(elements_read=read, nan=nan)
    return document


def run(tmp, document):
    log, path = os.path.join(tmp, "rank1.log"), os.path.join(tmp, "numerics.json")
    open(log, "w").write(TRUTH)
    json.dump(document, open(path, "w"))
    proc = subprocess.run([sys.executable, os.path.join(HERE, "check_numerics.py"), log, path],
                          capture_output=True, text=True)
    return proc.returncode, proc.stdout


def main():
    off_by_one = copy.deepcopy(WHOLE)
    off_by_one["buffers"][1]["stats"]["nan"] = 4095
    too_many = sampled(WHOLE, nan=5000)
    inf_claimed = sampled(WHOLE)
    inf_claimed["buffers"][0]["stats"]["pos_inf"] = 1
    whole_called_sample = sampled(WHOLE, nan=4096, read=1048576)
    cases = [("whole read", WHOLE, 0, "equal"), ("one NaN short", off_by_one, 1, "nan 4095 != 4096"),
             ("consistent sample", sampled(WHOLE), 0, "consistent (sampled: 8192 of 1048576 elements in 8 chunks"),
             ("sample above the buffer", too_many, 1, "nan 5000 in the sample > 4096"),
             ("+Inf the buffer lacks", inf_claimed, 1, "pos_inf 1 in the sample > 0"),
             ("a sample of everything", whole_called_sample, 1, "sampled but elements_read is 1048576")]
    with tempfile.TemporaryDirectory() as tmp:
        for name, document, code, text in cases:
            got, out = run(tmp, document)
            if got != code or text not in out:
                sys.exit("FAIL %s: exit %d (wanted %d), output lacks %r:\n%s" % (name, got, code, text, out))
    print("check_numerics: %d cases as expected" % len(cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
