"""Runs bench/quantized.py's judge of a Q/DQ row on made-up outputs and
prints each verdict: within onnxruntime's tolerance, the float64 rule
passed and failed, and a row too large for the reference interpreter."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "bench"))
import peers  # noqa: E402
import quantized  # noqa: E402

exact = [np.array([1.0, -2.0, 4.0])]
onnxruntime = [np.array([1.0, -2.0, 4.4])]  # 0.1 of the largest output off
cases = {
    "close": [np.array([1.0, -2.0, 4.41])],
    "nearer the interpreter": [np.array([1.0, -2.0, 4.2])],
    "twice as far plus": [np.array([1.0, -2.0, 3.1])],
}
for name, ours in cases.items():
    passed, note = quantized.judge("qdq-int8", ours, onnxruntime, exact,
                                   peers.agreement, 3e-2)
    print(f"{name}: {'pass' if passed else 'fail'}" + (f" {note}" if note
                                                         else ""))
passed, note = quantized.judge("qdq-int8", cases["nearer the interpreter"],
                               onnxruntime, None, peers.agreement, 3e-2)
print(f"no interpreter: {'pass' if passed else 'fail'} {note}")
