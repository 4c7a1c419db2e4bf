#!/usr/bin/env python3
"""Checks Kiln's import of the com.microsoft fused ops against onnxruntime.

  check_fused_ops.py --kilnc build/bin/kilnc --kiln-run build/bin/kiln-run
                     [--only NAME] [--seed N] [--corpus DIR]

Builds one small graph per op and variant that onnxruntime's optimizer and
model builder write (SkipLayerNormalization, SkipSimplifiedLayerNormalization,
SimplifiedLayerNormalization, Gelu, BiasGelu, FastGelu, QuickGelu,
RotaryEmbedding, EmbedLayerNormalization, and ONNX RotaryEmbedding with
position ids given at run time): with and without the optional inputs, with
the optional outputs, in fp32 and, where the op is used with it, fp16.
Weights are initializers; activations, token ids and position ids are graph
inputs drawn from a seeded generator in the range they mean.

The corpus graphs that hold these ops (onnxruntime's microbenchmarks of
LayerNormalization at opset 12, SkipLayerNormalization and FastGelu, a GPT-2
layer with FastGelu) are checked
too where the corpus ($KILN_CORPUS_DIR or ../shared/corpus) is present.

onnxruntime (CPU) is the oracle. Kiln runs each graph on the reference
interpreter and, compiled by kilnc, on the host backend. fp32 outputs must be
within rtol 1e-4 / atol 1e-5 of onnxruntime's; integer outputs must be
equal. An fp16 graph is checked under the fp16 contract: the relative L2
error of each output against onnxruntime's run of the same graph in fp32 is
at most 1e-2. Exit code 1 on any mismatch or failure.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

from oracle import (both_paths_failure, check_both_paths, compare_output,
                    load_output, run_checks, tools_parser)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MS = "com.microsoft"
FP16_REL_L2 = 1e-2


class Graph:
    """A graph under construction: inputs with values, initializers, nodes.

    Values are drawn in fp32 and, for fp16 graphs, rounded to fp16 first, so
    the fp32 twin of an fp16 graph computes on exactly the same numbers."""

    def __init__(self, rng, dtype):
        self.rng, self.dtype = rng, dtype
        self.inputs, self.inits, self.nodes, self.outputs = [], [], [], []
        self.feeds, self.opset = {}, 17

    def floats(self, shape, scale=1.0):
        value = (self.rng.uniform(-1, 1, shape) * scale).astype(np.float32)
        return value.astype(np.float16).astype(np.float32)

    def input(self, name, value):
        self.inputs.append((name, value))
        return name

    def init(self, name, value):
        self.inits.append((name, value))
        return name

    def node(self, op, inputs, outputs, domain=MS, **attrs):
        self.nodes.append(helper.make_node(op, inputs, outputs, domain=domain,
                                           **attrs))

    def output(self, *names):
        self.outputs += names

    def model(self, dtype):
        """The graph with its floats in `dtype`, and its feeds."""
        def cast(value):
            return value.astype(dtype) if value.dtype == np.float32 else value
        def info(name, value):
            elem = helper.np_dtype_to_tensor_dtype(cast(value).dtype)
            return helper.make_tensor_value_info(name, elem, value.shape)
        graph = helper.make_graph(
            self.nodes, "g", [info(n, v) for n, v in self.inputs],
            [helper.make_empty_tensor_value_info(n) for n in self.outputs],
            [numpy_helper.from_array(cast(v), n) for n, v in self.inits])
        model = helper.make_model(
            graph, ir_version=10,
            opset_imports=[helper.make_opsetid("", self.opset),
                           helper.make_opsetid(MS, 1)])
        return model, {n: cast(v) for n, v in self.inputs}


# Each case builds its graph on `g`: (name, builder, fp16 too?).
def skip_ln(g, beta=True, bias=True, skip_shape=None, shape=(2, 4, 32),
            outputs=("y", "mean", "inv_std_var", "sum")):
    hidden = shape[-1]
    ins = [g.input("x", g.floats(shape)),
           g.input("skip", g.floats(skip_shape or shape)),
           g.init("gamma", g.floats(hidden)),
           g.init("beta", g.floats(hidden)) if beta else "",
           g.init("bias", g.floats(hidden)) if bias else ""]
    while ins[-1] == "":
        ins.pop()
    outs = ["y", "mean", "inv_std_var", "sum"]
    g.node("SkipLayerNormalization", ins,
           [o if o in outputs else "" for o in outs], epsilon=1e-5)
    g.output(*[o for o in outs if o in outputs])


def skip_simplified(g, bias=True, outputs=("y", "inv_std_var", "sum")):
    hidden = 32
    ins = [g.input("x", g.floats((2, 4, hidden))),
           g.input("skip", g.floats((2, 4, hidden))),
           g.init("gamma", g.floats(hidden))]
    if bias:
        ins.append(g.init("bias", g.floats(hidden)))
    outs = ["y", "mean", "inv_std_var", "sum"]
    g.node("SkipSimplifiedLayerNormalization", ins,
           [o if o in outputs else "" for o in outs], epsilon=1e-6)
    g.output(*[o for o in outs if o in outputs])


def simplified_ln(g, axis=-1, inv=True):
    shape = (2, 3, 24)
    scale_shape = shape[axis:] if axis != -1 else shape[-1:]
    g.node("SimplifiedLayerNormalization",
           [g.input("x", g.floats(shape)), g.init("scale", g.floats(scale_shape))],
           ["y", "inv_std_var"] if inv else ["y"], domain="", axis=axis,
           epsilon=1e-5)
    g.output(*(["y", "inv_std_var"] if inv else ["y"]))


def gelu(g, op, bias=False, **attrs):
    ins = [g.input("x", g.floats((2, 5, 24), scale=3.0))]
    if bias:
        ins.append(g.init("bias", g.floats(24)))
    g.node(op, ins, ["y"], **attrs)
    g.output("y")


def rotary_ms(g, heads_first=False, interleaved=0, rotary_dim=0, num_heads=0,
              per_token=False, scale=None):
    batch, seq, heads, head = 2, 5, 3, 16
    x_shape = (batch, heads, seq, head) if heads_first else (batch, seq, heads * head)
    half = (rotary_dim or head) // 2
    max_seq = 12
    if per_token:
        pos = g.rng.integers(0, max_seq, (batch, seq)).astype(np.int64)
    else:
        pos = np.array([g.rng.integers(0, max_seq - seq + 1)], np.int64)
    attrs = {"interleaved": interleaved}
    if rotary_dim:
        attrs["rotary_embedding_dim"] = rotary_dim
    if num_heads:
        attrs["num_heads"] = num_heads
    if scale is not None:
        attrs["scale"] = scale
    angles = np.outer(np.arange(max_seq), 1.0 / 10000 ** (np.arange(half) / half))
    g.node("RotaryEmbedding",
           [g.input("x", g.floats(x_shape)), g.input("position_ids", pos),
            g.init("cos_cache", np.cos(angles).astype(np.float32)),
            g.init("sin_cache", np.sin(angles).astype(np.float32))],
           ["y"], **attrs)
    g.output("y")


def rotary_onnx(g, interleaved=0, rotary_dim=0):
    """ONNX RotaryEmbedding-23 with position ids that are a graph input."""
    g.opset = 23
    batch, seq, heads, head, max_seq = 2, 4, 2, 8, 10
    half = (rotary_dim or head) // 2
    attrs = {"interleaved": interleaved, "num_heads": heads}
    if rotary_dim:
        attrs["rotary_embedding_dim"] = rotary_dim
    pos = g.rng.integers(0, max_seq, (batch, seq)).astype(np.int64)
    g.node("RotaryEmbedding",
           [g.input("x", g.floats((batch, seq, heads * head))),
            g.init("cos_cache", g.floats((max_seq, half))),
            g.init("sin_cache", g.floats((max_seq, half))),
            g.input("position_ids", pos)], ["y"], domain="", **attrs)
    g.output("y")


def embed_ln(g, segment=True, mask=True, position_ids=None, outputs=3):
    batch, seq, hidden, vocab = 2, 7, 32, 30
    ids = g.rng.integers(0, vocab, (batch, seq)).astype(np.int32)
    ins = [g.input("input_ids", ids),
           g.input("segment_ids", g.rng.integers(0, 2, (batch, seq)).astype(np.int32))
           if segment else "",
           g.init("word_embedding", g.floats((vocab, hidden))),
           g.init("position_embedding", g.floats((16, hidden))),
           g.init("segment_embedding", g.floats((2, hidden))) if segment else "",
           g.init("gamma", g.floats(hidden)), g.init("beta", g.floats(hidden))]
    if mask:
        values = (g.rng.random((batch, seq)) < 0.7).astype(np.int32)
        values[:, 0] = 1
        ins.append(g.input("mask", values))
    if position_ids is not None:
        ins += [""] * (8 - len(ins))
        ins.append(g.input("position_ids", g.rng.integers(
            0, 16, (position_ids, seq)).astype(np.int32)))
    outs = ["output", "mask_index", "embedding_sum"][:outputs]
    g.node("EmbedLayerNormalization", ins, outs, epsilon=1e-12)
    g.output(*outs)


CASES = [
    ("skip_ln", skip_ln, True),
    ("skip_ln_no_beta_no_bias", lambda g: skip_ln(g, beta=False, bias=False,
                                                   outputs=("y",)), True),
    ("skip_ln_beta_sum", lambda g: skip_ln(g, bias=False,
                                            outputs=("y", "sum")), False),
    ("skip_ln_skip_2d", lambda g: skip_ln(g, skip_shape=(4, 32)), False),
    ("skip_ln_skip_1sh", lambda g: skip_ln(g, skip_shape=(1, 4, 32),
                                            outputs=("y",)), False),
    ("skip_ln_input_2d", lambda g: skip_ln(g, shape=(8, 32)), False),
    ("skip_simplified", skip_simplified, True),
    ("skip_simplified_no_bias", lambda g: skip_simplified(
        g, bias=False, outputs=("y",)), True),
    ("simplified_ln", simplified_ln, True),
    ("simplified_ln_axis1", lambda g: simplified_ln(g, axis=1, inv=False),
     False),
    ("gelu", lambda g: gelu(g, "Gelu"), True),
    ("bias_gelu", lambda g: gelu(g, "BiasGelu", bias=True), True),
    ("fast_gelu", lambda g: gelu(g, "FastGelu"), True),
    ("fast_gelu_bias", lambda g: gelu(g, "FastGelu", bias=True), True),
    ("quick_gelu", lambda g: gelu(g, "QuickGelu"), True),
    ("quick_gelu_alpha1", lambda g: gelu(g, "QuickGelu", alpha=1.0), False),
    ("rotary_ms_offset", rotary_ms, True),
    ("rotary_ms_per_token_4d_interleaved", lambda g: rotary_ms(
        g, heads_first=True, interleaved=1, per_token=True), True),
    ("rotary_ms_partial", lambda g: rotary_ms(
        g, rotary_dim=8, num_heads=3, per_token=True), False),
    ("rotary_ms_partial_interleaved_4d", lambda g: rotary_ms(
        g, heads_first=True, interleaved=1, rotary_dim=8, num_heads=3), False),
    ("rotary_ms_scale", lambda g: rotary_ms(g, num_heads=3, scale=0.5), False),
    ("rotary_onnx_runtime_positions", rotary_onnx, False),
    ("rotary_onnx_interleaved_partial", lambda g: rotary_onnx(
        g, interleaved=1, rotary_dim=4), False),
    ("embed_ln", embed_ln, True),
    ("embed_ln_no_segment", lambda g: embed_ln(g, segment=False), False),
    ("embed_ln_no_mask", lambda g: embed_ln(g, mask=False), False),
    ("embed_ln_position_ids", lambda g: embed_ln(g, position_ids=1,
                                                  mask=False, outputs=2),
     False),
    ("embed_ln_position_ids_batch", lambda g: embed_ln(g, position_ids=2),
     False),
]


# Corpus graphs (under $KILN_CORPUS_DIR or ../shared/corpus) that hold these
# ops, with values for their symbolic dims.
MICROBENCH = {"batch": 2, "seq_len": 5, "hidden_size": 64, "inter_dim": 96,
              "feature": 64, "seqlen": 5}
CORPUS = [
    # onnxruntime's LayerNormalization fusion writes the default domain's
    # LayerNormalization at opsets before 17 (its own schema), not a
    # com.microsoft one.
    ("ort-fusion/microbench_layer_norm_fp32.onnx", MICROBENCH),
    ("ort-fusion/microbench_layer_norm_fp16.onnx", MICROBENCH),
    ("ort-fusion/microbench_skip_layer_norm_fp32.onnx", MICROBENCH),
    ("ort-fusion/microbench_skip_layer_norm_fp16.onnx", MICROBENCH),
    ("ort-fusion/microbench_fast_gelu_fp32.onnx", MICROBENCH),
    ("ort-fusion/microbench_fast_gelu_fp16.onnx", MICROBENCH),
    ("ort-fusion/gpt2_one_layer.onnx", {"batch_size": 2, "seq_len": 4}),
]


def oracle(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def compare_fp16(out_dir, name, want):
    """None when out_dir/name.npy is within the fp16 contract of `want`."""
    got, why = load_output(out_dir, name, want)
    if why:
        return why
    if not np.issubdtype(want.dtype, np.floating):
        return None if np.array_equal(got, want) else f"{name}: differs"
    if (np.isfinite(want) & ~np.isfinite(got)).any():
        return f"{name}: non-finite where onnxruntime is finite"
    want64 = want.astype(np.float64)
    error = np.linalg.norm(got.astype(np.float64) - want64)
    norm = max(np.linalg.norm(want64), 1e-30)
    if error / norm > FP16_REL_L2:
        return f"{name}: relative L2 error {error / norm:.3e} > {FP16_REL_L2:g}"
    return None


def compare_exact_or_fp32(out_dir, name, want):
    if np.issubdtype(want.dtype, np.floating):
        return compare_output(out_dir, name, want)
    got, why = load_output(out_dir, name, want)
    if why:
        return why
    if got.dtype != want.dtype or not np.array_equal(got, want):
        return f"{name}: {got.tolist()} (dtype {got.dtype}), expected " \
               f"{want.tolist()} (dtype {want.dtype})"
    return None


def check_case(tools, build, dtype, seed, work):
    """Checks one built graph; an fp16 one against its fp32 twin. Returns
    None or why a path failed."""
    g = Graph(np.random.default_rng(seed), dtype)
    build(g)
    model, feeds = g.model(dtype)
    path = os.path.join(work, "model.onnx")
    onnx.save(model, path)
    if dtype == np.float16:
        expected, compare = oracle(*g.model(np.float32)), compare_fp16
    else:
        expected, compare = oracle(model, feeds), compare_exact_or_fp32
    return both_paths_failure(*check_both_paths(tools, path, feeds, expected,
                                                work, compare))


def check_corpus_graph(tools, path, dims, seed, work):
    """Checks a corpus graph on seeded inputs: floats in [-1, 1), integers
    (token ids) in [0, 4). Its fp16 outputs are held to the fp16 contract
    against onnxruntime's fp16 run, whose own error is far below it. Returns
    None or why a path failed."""
    model = onnx.load(path)
    rng = np.random.default_rng(seed)
    feeds, shape_args = {}, []
    for info in model.graph.input:
        shape = [d.dim_value or dims[d.dim_param]
                 for d in info.type.tensor_type.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(info.type.tensor_type.elem_type)
        if np.issubdtype(dtype, np.floating):
            feeds[info.name] = rng.uniform(-1, 1, shape).astype(dtype)
        else:
            feeds[info.name] = rng.integers(0, 4, shape).astype(dtype)
        shape_args += ["--input-shape", f"{info.name}={'x'.join(map(str, shape))}"]
    expected = oracle(model, feeds)
    fp16 = any(v.dtype == np.float16 for v in expected.values())
    compare = compare_fp16 if fp16 else compare_exact_or_fp32
    return both_paths_failure(*check_both_paths(tools, path, feeds, expected,
                                                work, compare, shape_args))


def main():
    parser = tools_parser(__doc__)
    parser.add_argument("--only", default="")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--corpus", default=os.environ.get(
        "KILN_CORPUS_DIR", os.path.join(REPO, "..", "shared", "corpus")))
    tools = parser.parse_args()
    print(f"seed {tools.seed}")
    checks = []
    for index, (name, build, fp16) in enumerate(CASES):
        for dtype in [np.float32] + ([np.float16] if fp16 else []):
            label = f"{name}_{'fp16' if dtype == np.float16 else 'fp32'}"
            checks.append((label, lambda work, b=build, d=dtype, i=index:
                           check_case(tools, b, d, tools.seed + i, work)))
    if os.path.isdir(tools.corpus):
        for index, (file, dims) in enumerate(CORPUS):
            checks.append((file, lambda work, f=file, d=dims, i=index:
                           check_corpus_graph(tools,
                                              os.path.join(tools.corpus, f),
                                              d, tools.seed + i, work)))
    else:
        print(f"no corpus at {tools.corpus}: its graphs are not checked")
    return run_checks([(label, check) for label, check in checks
                       if not tools.only or tools.only in label],
                      "kiln-fused-", "graphs")


if __name__ == "__main__":
    sys.exit(main())
