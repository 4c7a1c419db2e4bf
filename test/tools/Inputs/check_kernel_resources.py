"""Checks kilnc --report=json files: every kernel launch has ptxas's
resources, none spills or keeps any other array in local memory (a stack
frame: a loop over registers left rolled), each occupancy is a fraction
in (0, 1], and each kernel's code size in SASS instructions (read from the
cubin) is known."""
import json
import sys

launches = 0
for path in sys.argv[1:]:
    report = json.load(open(path))
    for launch in report["launches"]:
        if "grid" not in launch:
            continue  # a cuBLASLt call or a copy
        launches += 1
        r = launch.get("resources")
        if r is None:
            sys.exit(f"{path}: {launch['name']} has no resources")
        spilled = r["spill_store_bytes"] + r["spill_load_bytes"]
        if spilled:
            sys.exit(f"{path}: {launch['name']} spills {spilled} bytes")
        if r["stack_bytes"]:
            sys.exit(f"{path}: {launch['name']} keeps {r['stack_bytes']} "
                     "bytes in local memory")
        if (not 0 < r["occupancy"] <= 1 or r["registers"] <= 0
                or r["instructions"] <= 0):
            sys.exit(f"{path}: {launch['name']}: implausible {r}")
print(f"{len(sys.argv) - 1} reports, {launches} launches of kernels, "
      "all with resources and code sizes, none spilling or in local memory")
