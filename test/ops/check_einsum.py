#!/usr/bin/env python3
"""Checks Einsum against numpy.einsum on the reference interpreter and the host backend.

  check_einsum.py --kilnc build/bin/kilnc --kiln-run build/bin/kiln-run

The ONNX node tests of Einsum are all float64 (the conformance runner checks
them); this runs the same equations in float32, and the forms Transformer
exports write (attention scores and context, projections, outer products),
ellipsis broadcasting, implicit outputs, diagonals and a three-operand
contraction.
numpy.einsum in float64 is the oracle; outputs must match within the fp32
numerics contract. Exit code 1 on any mismatch.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from oracle import (both_paths_failure, check_both_paths, run_checks,  # noqa: E402
                    tools_parser)

# (equation, operand shapes)
CASES = [
    # The ONNX node tests' equations.
    ("...ii ->...i", [(3, 5, 5)]),
    ("bij, bjk -> bik", [(5, 2, 3), (5, 3, 4)]),
    ("i,i", [(5,), (5,)]),
    ("->", [()]),
    ("ij->i", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    # Transformer forms.
    ("bhqd,bhkd->bhqk", [(2, 3, 7, 8), (2, 3, 9, 8)]),
    ("bhqk,bhkd->bhqd", [(2, 3, 7, 9), (2, 3, 9, 8)]),
    ("bsh,hd->bsd", [(2, 7, 33), (33, 5)]),
    ("bqhd,bkhd->bhqk", [(2, 7, 3, 8), (2, 9, 3, 8)]),
    ("i,j->ij", [(7,), (5,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 6)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ii", [(6, 6)]),
    ("iij->j", [(3, 3, 4)]),
    ("ab,bc,cd->ad", [(3, 4), (4, 5), (5, 2)]),
    ("abc->", [(2, 3, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
]


def build(equation, shapes):
    names = [f"x{i}" for i in range(len(shapes))]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s))
              for n, s in zip(names, shapes)]
    want = np.einsum(equation.replace(" ", ""),
                     *[np.zeros(s, np.float64) for s in shapes])
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(want.shape))
    graph = helper.make_graph([helper.make_node("Einsum", names, ["y"], equation=equation)],
                              "einsum", inputs, [output])
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 12)])


def check(tools, equation, shapes, work, rng):
    """Returns None or why a path failed."""
    path = os.path.join(work, "model.onnx")
    onnx.save(build(equation, shapes), path)
    values = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]
    want = np.einsum(equation.replace(" ", ""), *[v.astype(np.float64) for v in values])
    feeds = {f"x{i}": v for i, v in enumerate(values)}
    return both_paths_failure(*check_both_paths(tools, path, feeds,
                                                {"y": want.astype(np.float32)}, work))


def main():
    tools = tools_parser(__doc__).parse_args()
    rng = np.random.default_rng(7)
    return run_checks([(f"{equation!r} {shapes}",
                        lambda work, e=equation, s=shapes: check(tools, e, s, work, rng))
                       for equation, shapes in CASES],
                      "kiln-einsum-", "equations", passed="")


if __name__ == "__main__":
    sys.exit(main())
