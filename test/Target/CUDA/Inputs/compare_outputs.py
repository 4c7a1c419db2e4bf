"""Compares two kiln-run --output-dir folders output by output.

  compare_outputs.py DIR_A DIR_B --rel-l2 BOUND

Prints, for each NAME.npy of DIR_A, its relative L2 distance from DIR_B's
and whether the two are equal bit for bit; exits 1 when one is missing or
beyond BOUND. Two builds of one model (two kernel forms) run on the host
backend may agree bit for bit where a GPU's roundings make them only close:
the bound is what both must meet, the bits what a test on the host reads.
"""
import os
import sys

import numpy as np


def main():
    first, second = sys.argv[1], sys.argv[2]
    bound = float(sys.argv[sys.argv.index("--rel-l2") + 1])
    ok = True
    for name in sorted(os.listdir(first)):
        if not name.endswith(".npy"):
            continue
        a = np.load(os.path.join(first, name))
        path = os.path.join(second, name)
        if not os.path.exists(path):
            print(f"{name[:-4]}: missing from {second}")
            ok = False
            continue
        b = np.load(path)
        if a.shape != b.shape:
            print(f"{name[:-4]}: shapes {a.shape} and {b.shape}")
            ok = False
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        norm = float(np.linalg.norm(b64))
        rel = float(np.linalg.norm(a64 - b64)) / (norm if norm > 0 else 1.0)
        same = a.tobytes() == b.tobytes()
        print(f"{name[:-4]}: rel_l2 {rel:.3e} bit for bit {same}")
        ok &= rel <= bound
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
