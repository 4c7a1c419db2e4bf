"""Runs bench/quantized.py's judge of a Q/DQ row on made-up outputs and
prints each verdict: within onnxruntime's tolerance, the float64 rule
passed and failed, a second output where onnxruntime agrees with the
interpreter (no rule), a 16-bit build's slack, and a row without the
interpreter."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "bench"))
import quantized  # noqa: E402

exact = [np.array([1.0, -2.0, 4.0])]
onnxruntime = [np.array([1.0, -2.0, 4.4])]  # 0.4 off the interpreter


def show(name, ours, *, interpreter=exact, want=onnxruntime,
         precision="fp32"):
    passed, note = quantized.judge(ours, want, interpreter, 3e-2, precision)
    print(f"{name}: {'pass' if passed else 'fail'}" + (f" {note}" if note
                                                         else ""))


show("close", [np.array([1.0, -2.0, 4.41])])
show("nearer the interpreter", [np.array([1.0, -2.0, 4.2])])
show("twice as far plus", [np.array([1.0, -2.0, 3.1])])
# Two outputs: the first ill-conditioned and within the rule, the second
# wrong where onnxruntime agrees with the interpreter: the row fails.
show("one output each", [np.array([1.0, -2.0, 4.2]), np.array([2.0, 5.0])],
     interpreter=exact + [np.array([1.0, 5.0])],
     want=onnxruntime + [np.array([1.0, 5.0])])
# 0.9 off the interpreter: past 2 x 0.4 at fp32, within 2 x 0.4 plus 3e-2
# of 4.4 (0.932) at fp16.
show("fp16 slack", [np.array([1.0, -2.0, 4.9])], precision="fp16")
show("fp32 no slack", [np.array([1.0, -2.0, 4.9])])
show("no interpreter", [np.array([1.0, -2.0, 4.2])], interpreter=None)
