#!/usr/bin/env python3
"""Inclusive shares of functions in a `perf script` dump of one process (perf record -g):
for each FUNCTION given, the share of samples whose stack contains it.

    perf script -i perf.data > stacks.txt
    ./stacks.py stacks.txt standard_ExecutorStart ExecInitNode ...
"""
import re
import sys


def read(path):
    stacks, cur = [], None
    for line in open(path):
        if not line.startswith(("\t", " ")):
            if cur:
                stacks.append(set(cur))
            cur = []
            continue
        parts = line.strip().split(None, 1)
        if len(parts) == 2:
            cur.append(re.sub(r"\+0x[0-9a-f]+$", "", parts[1].split(" (")[0]))
    if cur:
        stacks.append(set(cur))
    return stacks


stacks = read(sys.argv[1])
print(f"{len(stacks)} samples")
for fn in sys.argv[2:]:
    n = sum(1 for s in stacks if fn in s)
    print(f"{fn:34} {100 * n / len(stacks):5.1f} %")
