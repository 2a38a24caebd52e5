#!/usr/bin/env python3
"""Seeds for fuzz_recorder_decoder from a REAL recorder region.

Runs tests/fixtures/recorder_driver (which loads libncclscope-recorder.so and
records its hang scenario: AllGather, Send, stream waits, IPC and cuMem
handles, a thread blocked in cudaStreamSynchronize) with small rings, reads the
region out of /proc/PID/mem (its address and size come from the driver's JSON
line and the header), and writes it with `self_address` rewritten to the
address where the fuzz target maps its input (RecorderFuzzTarget::kRegion in
fuzz_entry_points.h). Nothing else is changed.

    tests/fuzz/make_recorder_seed.py BUILD_DIR OUT_DIR

Byte 0 of an input is the mode (RecorderFuzzMode in fuzz_entry_points.h);
writes the region (4 rings of 64 records) three times: recorder-driver-region
(mode 0: at the start of its mapping, as a core), recorder-driver-region-sweep
(mode 1: one page into its mapping, found by the page sweep) and
recorder-driver-region-live-records (mode 6: read as a live process, with the
whole timeline).
"""
import json
import os
import signal
import struct
import subprocess
import sys

FUZZ_REGION_ADDRESS = 0x7E0000000000  # RecorderFuzzTarget::kRegion
HEADER_FORMAT = "<16sIIIIIIQQ"        # magic .. records_per_ring, region_size, self_address
SELF_ADDRESS_OFFSET = struct.calcsize("<16sIIIIIIQ")


def capture_region(build):
    env = dict(os.environ, NCCLSCOPE_RECORDER_THREADS="4", NCCLSCOPE_RECORDER_RECORDS="64",
               NCCLSCOPE_RECORDER_NO_TSC="1")
    driver = subprocess.Popen([os.path.join(build, "fixtures", "recorder_driver"),
                               os.path.join(build, "lib", "libncclscope-recorder.so")],
                              stdout=subprocess.PIPE, env=env, text=True)
    try:
        info = json.loads(driver.stdout.readline())
        address = int(info["region"], 16)
        with open("/proc/%d/mem" % driver.pid, "rb") as memory:
            memory.seek(address)
            header = memory.read(struct.calcsize(HEADER_FORMAT))
            fields = struct.unpack(HEADER_FORMAT, header)
            magic, region_size, self_address = fields[0], fields[7], fields[8]
            assert magic == b"NCCLSCOPE-REC/1\0", magic
            assert self_address == address, (hex(self_address), hex(address))
            memory.seek(address)
            region = bytearray(memory.read(region_size))
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    struct.pack_into("<Q", region, SELF_ADDRESS_OFFSET, FUZZ_REGION_ADDRESS)
    return bytes(region)


def main():
    build, out = sys.argv[1], sys.argv[2]
    region = capture_region(build)
    os.makedirs(out, exist_ok=True)
    for name, mode in (("recorder-driver-region", 0), ("recorder-driver-region-sweep", 1),
                       ("recorder-driver-region-live-records", 6)):
        with open(os.path.join(out, name), "wb") as seed:
            seed.write(bytes([mode]) + region)
    print("region: %d bytes" % len(region))


if __name__ == "__main__":
    main()
