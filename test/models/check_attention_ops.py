#!/usr/bin/env python3
"""Checks Kiln's import of attention ops against an oracle.

  check_attention_ops.py --kilnc build/bin/kilnc --kiln-run build/bin/kiln-run
                         [--seed N] [--only NAME]

Builds small com.microsoft Attention and MultiHeadAttention graphs in the forms
ONNX Runtime's transformer optimizer writes (packed QKV weights and bias,
separate Q/K/V with a packed bias, every mask_index / key_padding_mask form,
mask_filter_value, unidirectional, scale, attention_bias, past and present)
and runs each with onnxruntime (CPU) as the oracle and with Kiln: the
reference interpreter on the .onnx, and kilnc's .so on the host backend (the
generated kernels emulated on the CPU). Every output must match onnxruntime
within the fp32 numerics contract (rtol 1e-4, atol 1e-5, finite where
onnxruntime is finite). The Megatron mask [batch, 1, max, max], which
onnxruntime's CPU kernel does not run, is checked against onnxruntime on the
equivalent [batch, seq, total] mask. ONNX Attention (opset 24) is checked
against onnx's reference implementation where the conformance tests cannot
reach: a nonpad_kv_seqlen given at run time (the conformance runner freezes
int64 inputs as constants) and masks that hide whole rows at run time.
The attention nodes of the corpus models
that use these ops (../shared/corpus/models, or $KILN_CORPUS_DIR) are checked
too, each on the inputs onnxruntime computes for it in its model; they are
skipped with a message where the corpus is absent. Exit code 1 on any
mismatch.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from oracle import both_paths_failure, check_both_paths, run_checks, tools_parser

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# Corpus models with com.microsoft attention nodes (and SkipLayerNormalization
# or Einsum around them, which Kiln may not import: only the node is checked).
CORPUS_MODELS = ["attention_mha", "bert_3d_attention_opt",
                 "gemma3-vision-attention_fp32",
                 "phi-3.5-v-instruct-vision-attention"]

B, S, N, HEAD = 2, 5, 2, 4  # batch, sequence, heads, head size
HIDDEN = N * HEAD
IN = 6  # width of the Attention op's input


def value_info(name, array):
    dtype = helper.np_dtype_to_tensor_dtype(array.dtype)
    return helper.make_tensor_value_info(name, dtype, list(array.shape))


class Case:
    """One graph of one attention node: its inputs, initializers, outputs."""

    def __init__(self, name, op, inputs, attrs, outputs=("y",), weights=None,
                 oracle_inputs=None, domain="com.microsoft"):
        self.name, self.op, self.attrs, self.domain = name, op, attrs, domain
        self.inputs = inputs  # [(name or "", array or None)], node order
        self.weights = weights or {}  # initializers: name -> array
        self.outputs = list(outputs)
        # Inputs onnxruntime gets instead (an equivalent form it runs).
        self.oracle_inputs = oracle_inputs

    def model(self, inputs):
        graph_inputs = [value_info(n, a) for n, a in inputs
                        if n and n not in self.weights]
        node = helper.make_node(self.op, [n for n, _ in inputs], self.outputs,
                                domain=self.domain, **self.attrs)
        graph = helper.make_graph(
            [node], self.name, graph_inputs,
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
             for o in self.outputs],
            [numpy_helper.from_array(a, n) for n, a in self.weights.items()])
        if self.domain == "com.microsoft":
            opsets = [helper.make_opsetid("", 17),
                      helper.make_opsetid("com.microsoft", 1)]
        else:
            opsets = [helper.make_opsetid("", 24)]
        return helper.make_model(graph, ir_version=10, opset_imports=opsets)

    def expected(self):
        """The oracle's outputs: onnx's reference implementation for ONNX
        ops, onnxruntime (CPU) for its contrib ops."""
        inputs = self.oracle_inputs or self.inputs
        model = self.model(inputs)
        if self.domain != "com.microsoft":
            return ReferenceEvaluator(model).run(None, self.feeds(inputs))
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        return session.run(None, self.feeds(inputs))

    def feeds(self, inputs):
        return {n: a for n, a in inputs if n and n not in self.weights}


def cases(rng):
    def f32(*shape):
        return rng.uniform(-1, 1, shape).astype(np.float32)

    def lengths(low, high, count):
        return rng.integers(low, high + 1, count).astype(np.int32)

    def zero_one(*shape):
        mask = (rng.random(shape) < 0.7).astype(np.int32)
        mask[..., 0] = 1  # never a row without keys
        return mask

    x, w, bias = f32(B, S, IN), f32(IN, 3 * HIDDEN), f32(3 * HIDDEN)
    weights = {"w": w, "b": bias}
    packed = [("x", x), ("w", w), ("b", bias)]
    past_len = 3
    total = past_len + S
    past = f32(2, B, N, past_len, HEAD)
    heads = {"num_heads": N}
    yield Case("attention", "Attention", packed, heads, weights=weights)
    yield Case("attention_mask1d_lengths", "Attention",
               packed + [("mask", lengths(1, S, B))], heads, weights=weights)
    ends = lengths(3, S, B)
    starts = np.minimum(lengths(0, 2, B), ends - 1)
    yield Case("attention_mask1d_end_start", "Attention",
               packed + [("mask", np.concatenate([ends, starts]))], heads,
               weights=weights)
    yield Case("attention_mask2d_filter_value", "Attention",
               packed + [("mask", zero_one(B, S))],
               dict(heads, mask_filter_value=-500.0), weights=weights)
    mask3d = zero_one(B, S, S)
    yield Case("attention_mask3d", "Attention",
               packed + [("mask", mask3d)], heads, weights=weights)
    # Megatron's [batch, 1, max, max] mask with max > S, against the same
    # keys as a 3-D mask (onnxruntime's CPU kernel has no 4-D mask).
    megatron = zero_one(B, 1, S + 2, S + 2)
    yield Case("attention_mask4d_megatron", "Attention",
               packed + [("mask", megatron)], heads, weights=weights,
               oracle_inputs=packed + [("mask", megatron[:, 0, :S, :S].copy())])
    yield Case("attention_unidirectional_scale", "Attention",
               packed + [("mask", zero_one(B, S))],
               dict(heads, unidirectional=1, scale=0.3), weights=weights)
    yield Case("attention_past_present_unidirectional", "Attention",
               packed + [("mask", zero_one(B, total)), ("past", past)],
               dict(heads, unidirectional=1), outputs=("y", "present"),
               weights=weights)
    # Different V width (qkv_hidden_sizes) and a relative position bias.
    wv, bv = f32(IN, 2 * HIDDEN + 2 * N), f32(2 * HIDDEN + 2 * N)
    yield Case("attention_qkv_sizes_attention_bias", "Attention",
               [("x", x), ("wv", wv), ("bv", bv), ("", None), ("", None),
                ("attention_bias", f32(1, N, S, S))],
               dict(heads, qkv_hidden_sizes=[HIDDEN, HIDDEN, 2 * N]),
               weights={"wv": wv, "bv": bv})
    # No projection bias; onnxruntime's CPU kernel crashes without one, so
    # its oracle gets a zero bias.
    no_bias = [("x", x), ("w", w), ("", None), ("mask", zero_one(B, S)),
               ("", None), ("attention_bias", f32(B, N, S, S))]
    zero = np.zeros(3 * HIDDEN, np.float32)
    yield Case("attention_no_bias_2d_mask_bias", "Attention", no_bias, heads,
               weights={"w": w, "zero": zero},
               oracle_inputs=no_bias[:2] + [("zero", zero)] + no_bias[3:])

    kv_len = 7
    q, k, v = f32(B, S, HIDDEN), f32(B, kv_len, HIDDEN), f32(B, kv_len, HIDDEN)
    mha_bias = f32(3 * HIDDEN)
    yield Case("mha_bias_key_padding_mask", "MultiHeadAttention",
               [("q", q), ("k", k), ("v", v), ("bias", mha_bias),
                ("mask", zero_one(B, kv_len))], heads)
    yield Case("mha_key_lengths_scale", "MultiHeadAttention",
               [("q", q), ("k", k), ("v", v), ("", None),
                ("mask", lengths(1, kv_len, B))], dict(heads, scale=0.5))
    yield Case("mha_mask3d_attention_bias", "MultiHeadAttention",
               [("q", q), ("k", k), ("v", v), ("bias", mha_bias),
                ("mask", zero_one(B, S, kv_len)),
                ("attention_bias", f32(B, 1, S, kv_len))], heads)
    ks, vs = f32(B, S, HIDDEN), f32(B, S, HIDDEN)
    yield Case("mha_unidirectional", "MultiHeadAttention",
               [("q", q), ("k", ks), ("v", vs), ("bias", mha_bias)],
               dict(heads, unidirectional=1))
    yield Case("mha_past_present_unidirectional", "MultiHeadAttention",
               [("q", q), ("k", ks), ("v", vs), ("bias", mha_bias),
                ("mask", zero_one(B, total)), ("", None),
                ("past_key", f32(B, N, past_len, HEAD)),
                ("past_value", f32(B, N, past_len, HEAD))],
               dict(heads, unidirectional=1),
               outputs=("y", "present_key", "present_value"))
    # Head-major K and V (a cross-attention cache): the bias is Q's only.
    yield Case("mha_head_major_kv", "MultiHeadAttention",
               [("q", q), ("k", f32(B, N, kv_len, HEAD)),
                ("v", f32(B, N, kv_len, HEAD)), ("bias", mha_bias),
                ("mask", lengths(2, kv_len, B))], heads)


def onnx_cases(rng):
    """ONNX Attention with masks known at run time only."""
    def f32(*shape):
        return rng.uniform(-1, 1, shape).astype(np.float32)

    def attention(name, inputs, **attrs):
        return Case(name, "Attention", inputs, attrs, outputs=("Y",),
                    domain="")

    # Batch 1 has 2 valid keys for 3 queries: causality leaves its first
    # query without keys (a zero row), and GQA pairs 4 query heads with 2.
    yield attention("onnx_attention_run_time_nonpad_causal",
                    [("Q", f32(2, 4, 3, 8)), ("K", f32(2, 2, 6, 8)),
                     ("V", f32(2, 2, 6, 8)), ("", None), ("", None),
                     ("", None), ("nonpad", np.array([6, 2], np.int64))],
                    is_causal=1)
    mask = rng.random((3, 5)) < 0.6
    mask[1] = False  # a row without keys
    yield attention("onnx_attention_run_time_nonpad_bool_mask_3d",
                    [("Q", f32(2, 3, 16)), ("K", f32(2, 7, 8)),
                     ("V", f32(2, 7, 8)), ("mask", mask), ("", None),
                     ("", None), ("nonpad", np.array([4, 7], np.int64))],
                    q_num_heads=4, kv_num_heads=2, softcap=1.5)
    float_mask = f32(2, 1, 4, 6)
    float_mask[0, 0, 3] = -np.inf  # a row without keys
    float_mask[1, 0, :, 2] = -np.inf
    yield attention("onnx_attention_float_mask_causal_past",
                    [("Q", f32(2, 2, 4, 8)), ("K", f32(2, 2, 4, 8)),
                     ("V", f32(2, 2, 4, 8)), ("mask", float_mask),
                     ("past_key", f32(2, 2, 2, 8)),
                     ("past_value", f32(2, 2, 2, 8))],
                    is_causal=1, scale=0.25)


def corpus_cases(folder, rng):
    """The attention node of each corpus model, on the values onnxruntime
    computes for its inputs from seeded model inputs (0/1 masks with the
    first key set, floats uniform in [-1, 1))."""
    for name in CORPUS_MODELS:
        model = onnx.load(os.path.join(folder, name + ".onnx"))
        node = next(n for n in model.graph.node if n.domain == "com.microsoft"
                    and n.op_type in ("Attention", "MultiHeadAttention"))
        weights = {t.name: numpy_helper.to_array(t)
                   for t in model.graph.initializer if t.name in node.input}
        feeds = {}
        for info in model.graph.input:
            shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
            if info.type.tensor_type.elem_type == TensorProto.FLOAT:
                feeds[info.name] = rng.uniform(-1, 1, shape).astype(np.float32)
            else:
                mask = (rng.random(shape) < 0.7).astype(np.int64)
                mask[..., 0] = 1
                feeds[info.name] = mask
        # The node's inputs as onnxruntime computes them in the model.
        wanted = [x for x in node.input if x and x not in weights]
        for x in wanted:
            model.graph.output.append(onnx.ValueInfoProto(name=x))
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        values = dict(zip([o.name for o in session.get_outputs()],
                          session.run(None, feeds)))
        inputs = [(x, weights[x] if x in weights else values.get(x))
                  for x in node.input]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        yield Case("corpus_" + name, node.op_type, inputs, attrs,
                   weights=weights)


def check(tools, case, work):
    """Returns None or why a path failed."""
    path = os.path.join(work, "model.onnx")
    onnx.save(case.model(case.inputs), path)
    expected = dict(zip(case.outputs, case.expected()))
    return both_paths_failure(*check_both_paths(
        tools, path, case.feeds(case.inputs), expected, work))


def main():
    parser = tools_parser(__doc__)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", help="run the case of this name only")
    parser.add_argument("--corpus", default=os.environ.get(
        "KILN_CORPUS_DIR", os.path.join(REPO, "..", "shared", "corpus")))
    tools = parser.parse_args()
    print(f"seed {tools.seed}")
    rng = np.random.default_rng(tools.seed)
    all_cases = list(cases(rng)) + list(onnx_cases(rng))
    folder = os.path.join(tools.corpus, "models")
    if os.path.isdir(folder):
        all_cases += corpus_cases(folder, rng)
    else:
        print(f"corpus cases skipped: no corpus at {folder} "
              "(set KILN_CORPUS_DIR)")
    return run_checks([(case.name, lambda work, c=case: check(tools, c, work))
                       for case in all_cases
                       if not tools.only or case.name == tools.only],
                      "kiln-attention-", "attention graphs")


if __name__ == "__main__":
    sys.exit(main())
