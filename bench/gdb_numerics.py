# gdb by hand for bench/numerics_compare.sh: counts of bf16 buffers read with gdb's Python API.
# NCCLSCOPE_BENCH_BUFFERS="ADDRESS:ELEMENTS ..." (the addresses a user would dig out by hand).
import array
import os

import gdb

for spec in os.environ["NCCLSCOPE_BENCH_BUFFERS"].split():
    address, elements = spec.split(":")
    data = array.array("H", bytes(gdb.selected_inferior().read_memory(int(address, 16), int(elements) * 2)))
    nan = pos_inf = neg_inf = subnormal = zero = 0
    for bits in data:
        exponent, mantissa = bits & 0x7F80, bits & 0x7F
        if exponent == 0x7F80:
            if mantissa:
                nan += 1
            elif bits & 0x8000:
                neg_inf += 1
            else:
                pos_inf += 1
        elif exponent == 0:
            if mantissa:
                subnormal += 1
            else:
                zero += 1
    print("buffer %s nan=%d pos_inf=%d neg_inf=%d subnormal=%d zero=%d" % (address, nan, pos_inf, neg_inf, subnormal, zero))
