"""Writes a layout profile for the stand-in libnccl (tests/fixtures/lib): the real 2.28.9
layout under the stand-in's build-id, without symbols, into OUT_DIR/<build-id>.json.
Prints the build-id.  Usage: fake_profile.py REAL_PROFILE FAKE_LIB OUT_DIR"""
import json
import os
import subprocess
import sys

real_profile, fake_lib, out_dir = sys.argv[1:4]
build_id = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "build_id.py"), fake_lib],
                          check=True, capture_output=True, text=True).stdout.strip()
profile = json.load(open(real_profile))
profile["build_id"] = build_id
profile["symbols"] = {}
os.makedirs(out_dir, exist_ok=True)
json.dump(profile, open(os.path.join(out_dir, build_id + ".json"), "w"))
print(build_id)
