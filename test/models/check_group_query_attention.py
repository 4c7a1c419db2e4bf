#!/usr/bin/env python3
"""Checks Kiln's import of com.microsoft GroupQueryAttention against onnxruntime.

  check_group_query_attention.py --kilnc build/bin/kilnc
                                 --kiln-run build/bin/kiln-run
                                 [--seed N] [--only NAME]

Builds small GroupQueryAttention graphs in the forms ONNX Runtime's model
builder and transformer optimizer write: a first prompt (with right padding
given by seqlens_k, with an empty past, with a past buffer of the maximum
length), decoding with a past of the earlier tokens or of the maximum length
(ragged seqlens_k across the batch), a multi-token step after a past,
separate and packed QKV, do_rotary with cos/sin caches (halves and
interleaved, full and partial rotary dim, with and without position_ids),
local_window_size (including padded prompt rows whose window holds no valid
key), softcap and scale, attention_bias, head_sink and smooth_softmax,
causal = 0, the qk output, and a model-builder graph that computes seqlens_k
and total_sequence_length from an attention mask. seqlens_k is always a
graph input (its values only arrive at run time); total_sequence_length is
an initializer or computed from shapes, as Kiln requires.

onnxruntime (CPU) is the oracle; where the past is a buffer of the maximum
length it runs with past and present bound to one buffer, the form in which
Kiln writes the new rows in place. Kiln runs each graph on the reference
interpreter and, compiled by kilnc, on the host backend (the generated
kernels emulated on the CPU); every output (output, present_key,
present_value, output_qk) must be within rtol 1e-4 / atol 1e-5 of
onnxruntime's. kiln-run --compare-pipeline checks on the same inputs that
the Kiln pipeline keeps the imported IR's semantics.

Then the run-time length checks (negative_ cases): seqlens_k comes from the
data, so a value outside [0, total_sequence_length) (or, after a past,
below the new tokens less one) must fail the run on the reference
interpreter and on the host backend with the input and the node named, as
onnxruntime fails it ("seqlens_k[0] = 5 is out of range [0, 5)"); never a
silent clamp or a read past the cache. Exit code 1 on any mismatch.
"""
import os
import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from oracle import (check_both_paths, expect_refusal, run, run_checks,
                    run_with_inputs, save_inputs, tools_parser)

MS = "com.microsoft"
# batch, new tokens, query heads, key/value heads, head size (onnxruntime's
# CPU kernel needs a multiple of 8), rows of the rotary caches.
B, S, N, KV, H = 2, 5, 4, 2, 16
MAX_POS = 24
OUTPUTS = ("y", "present_key", "present_value")
NODE = "attention"


class Case:
    """One graph: its nodes, graph inputs with values, initializers."""

    def __init__(self, name, nodes, feeds, weights, outputs):
        self.name, self.nodes = name, nodes
        self.feeds, self.weights, self.outputs = feeds, weights, list(outputs)

    def model(self):
        def info(name, array):
            dtype = helper.np_dtype_to_tensor_dtype(array.dtype)
            return helper.make_tensor_value_info(name, dtype, list(array.shape))

        graph = helper.make_graph(
            self.nodes, self.name,
            [info(n, a) for n, a in self.feeds.items()],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
             for o in self.outputs],
            [numpy_helper.from_array(a, n) for n, a in self.weights.items()])
        return helper.make_model(
            graph, ir_version=10,
            opset_imports=[helper.make_opsetid("", 17),
                           helper.make_opsetid(MS, 1)])


def gqa_case(name, inputs, total, outputs=OUTPUTS, initializers=(), **attrs):
    """A graph of one GroupQueryAttention node. `inputs` maps input names
    (query, key, ..., head_sink) to values, graph inputs except those named
    in `initializers`; total_sequence_length is an initializer."""
    order = ["query", "key", "value", "past_key", "past_value", "seqlens_k",
             "total_sequence_length", "cos_cache", "sin_cache",
             "position_ids", "attention_bias", "head_sink"]
    inputs = dict(inputs, total_sequence_length=np.array(total, np.int32))
    used = [n for n in order if n in inputs]
    names = [n if n in inputs else "" for n in order[:order.index(used[-1]) + 1]]
    attrs = dict({"num_heads": N, "kv_num_heads": KV}, **attrs)
    node = helper.make_node("GroupQueryAttention", names, list(outputs),
                            name=NODE, domain=MS, **attrs)
    weights = {"total_sequence_length": inputs.pop("total_sequence_length")}
    weights.update({n: inputs.pop(n) for n in initializers})
    return Case(name, [node], inputs, weights, [o for o in outputs if o])


def model_builder_case(f32):
    """seqlens_k and total_sequence_length as ONNX Runtime's model builder
    computes them from the attention mask ([batch, total], 1 for the valid,
    left-aligned tokens): ReduceSum - 1 and Shape[1], both cast to int32."""
    total = S
    mask = np.ones((B, total), np.int64)
    mask[1, 3:] = 0
    i64 = TensorProto.INT64
    nodes = [
        helper.make_node("Constant", [], ["one"], value=helper.make_tensor(
            "one", i64, [1], [1])),
        helper.make_node("Constant", [], ["axis1"], value=helper.make_tensor(
            "axis1", i64, [1], [1])),
        helper.make_node("Constant", [], ["dim1"], value=helper.make_tensor(
            "dim1", i64, [], [1])),
        helper.make_node("ReduceSum", ["attention_mask", "axis1"], ["sum"],
                         keepdims=0),
        helper.make_node("Sub", ["sum", "one"], ["last"]),
        helper.make_node("Cast", ["last"], ["seqlens_k"], to=TensorProto.INT32),
        helper.make_node("Shape", ["attention_mask"], ["mask_shape"]),
        helper.make_node("Gather", ["mask_shape", "dim1"], ["total64"], axis=0),
        helper.make_node("Cast", ["total64"], ["total"], to=TensorProto.INT32),
        helper.make_node("GroupQueryAttention",
                         ["query", "key", "value", "", "", "seqlens_k",
                          "total", "cos_cache", "sin_cache"],
                         list(OUTPUTS), domain=MS, num_heads=N,
                         kv_num_heads=KV, do_rotary=1, local_window_size=3),
    ]
    feeds = {"query": f32(B, S, N * H), "key": f32(B, S, KV * H),
             "value": f32(B, S, KV * H), "attention_mask": mask}
    weights = {"cos_cache": f32(MAX_POS, H // 2),
               "sin_cache": f32(MAX_POS, H // 2)}
    return Case("gqa_model_builder_mask_subgraph", nodes, feeds, weights,
                OUTPUTS)


class Inputs:
    """Random inputs of the cases: floats in [-1, 1), seqlens_k as given."""

    def __init__(self, rng):
        self.rng = rng

    def f32(self, *shape):
        return self.rng.uniform(-1, 1, shape).astype(np.float32)

    @staticmethod
    def lengths(*values):
        return np.array(values, np.int32)

    def qkv(self, seq=S, batch=B):
        return {"query": self.f32(batch, seq, N * H),
                "key": self.f32(batch, seq, KV * H),
                "value": self.f32(batch, seq, KV * H)}

    def past(self, rows, batch=B):
        return {"past_key": self.f32(batch, KV, rows, H),
                "past_value": self.f32(batch, KV, rows, H)}


def cases(rng):
    inputs = Inputs(rng)
    f32, lengths, qkv, past = (inputs.f32, inputs.lengths, inputs.qkv,
                               inputs.past)

    def caches(half=H // 2):
        return {"cos_cache": f32(MAX_POS, half), "sin_cache": f32(MAX_POS, half)}

    full, padded = lengths(S - 1, S - 1), lengths(S - 1, 2)
    P, MAX = 6, 10  # past tokens; rows of a maximum-length past buffer
    ragged = lengths(P, 3)  # one decode step: seqlens_k = past_b
    yield gqa_case("gqa_prompt", dict(qkv(), seqlens_k=full), S)
    yield gqa_case("gqa_prompt_padded", dict(qkv(), seqlens_k=padded), S)
    yield gqa_case("gqa_prompt_empty_past",
                   dict(qkv(), **past(0), seqlens_k=padded), S)
    yield gqa_case("gqa_prompt_max_length_past",
                   dict(qkv(), **past(MAX), seqlens_k=padded), S)
    yield gqa_case("gqa_decode", dict(qkv(1), **past(P), seqlens_k=lengths(P, P)),
                   P + 1)
    yield gqa_case("gqa_decode_ragged", dict(qkv(1), **past(P), seqlens_k=ragged),
                   P + 1)
    yield gqa_case("gqa_decode_max_length_past",
                   dict(qkv(1), **past(MAX), seqlens_k=ragged), P + 1)
    # onnxruntime takes several new tokens after a past for batch 1 only.
    yield gqa_case("gqa_subsequent_prompt",
                   dict(qkv(3, 1), **past(P, 1), seqlens_k=lengths(P + 2)),
                   P + 3)
    yield gqa_case("gqa_subsequent_prompt_shorter",
                   dict(qkv(3, 1), **past(P, 1), seqlens_k=lengths(P)), P + 3)
    packed = (N + 2 * KV) * H
    yield gqa_case("gqa_packed_prompt",
                   dict(query=f32(B, S, packed), seqlens_k=padded), S)
    yield gqa_case("gqa_packed_decode",
                   dict(query=f32(B, 1, packed), **past(P), seqlens_k=ragged),
                   P + 1)
    yield gqa_case("gqa_rotary_prompt_padded",
                   dict(qkv(), **caches(), seqlens_k=padded), S, do_rotary=1)
    yield gqa_case("gqa_rotary_interleaved_decode",
                   dict(qkv(1), **past(P), seqlens_k=ragged, **caches()),
                   P + 1, do_rotary=1, rotary_interleaved=1)
    yield gqa_case("gqa_rotary_packed_max_length_past",
                   dict(query=f32(B, 1, packed), **past(MAX),
                        seqlens_k=ragged, **caches()),
                   P + 1, do_rotary=1)
    yield gqa_case("gqa_rotary_subsequent_prompt",
                   dict(qkv(3, 1), **past(P, 1), seqlens_k=lengths(P + 2),
                        **caches()), P + 3, do_rotary=1, rotary_interleaved=1)
    # Rotary dim 16 of head size 32 (the caches' width is a multiple of 8
    # for onnxruntime).
    wide = {"query": f32(B, S, N * 32), "key": f32(B, S, KV * 32),
            "value": f32(B, S, KV * 32)}
    for interleaved in (0, 1):
        yield gqa_case(f"gqa_partial_rotary_interleaved{interleaved}",
                       dict(wide, **caches(8), seqlens_k=padded), S,
                       do_rotary=1, rotary_interleaved=interleaved)
    # position_ids: the first prompt reads the first id only; later steps
    # each token's.
    first_ids = np.array([[4, 9, 1, 2, 3], [7, 8, 9, 10, 11]], np.int64)
    yield gqa_case("gqa_rotary_position_ids_prompt",
                   dict(qkv(), **caches(), seqlens_k=padded,
                        position_ids=first_ids), S, do_rotary=1)
    yield gqa_case("gqa_rotary_position_ids_decode",
                   dict(qkv(1), **past(P), seqlens_k=ragged, **caches(),
                        position_ids=np.array([[11], [2]], np.int64)),
                   P + 1, do_rotary=1)
    # A window of 2: padded rows 4 and 5 of batch 1 (2 valid tokens) see
    # no key and are zeros.
    yield gqa_case("gqa_local_window_prompt_padded",
                   dict(qkv(), seqlens_k=padded), S, local_window_size=2)
    yield gqa_case("gqa_local_window_decode",
                   dict(qkv(1), **past(P), seqlens_k=ragged), P + 1,
                   local_window_size=3)
    yield gqa_case("gqa_local_window_subsequent_prompt",
                   dict(qkv(3, 1), **past(P, 1), seqlens_k=lengths(P + 2)),
                   P + 3, local_window_size=2)
    yield gqa_case("gqa_softcap_scale", dict(qkv(), seqlens_k=padded), S,
                   softcap=0.6, scale=0.9)
    yield gqa_case("gqa_attention_bias",
                   dict(qkv(), seqlens_k=padded,
                        attention_bias=f32(B, N, S, S)), S, softcap=2.0)
    yield gqa_case("gqa_attention_bias_max_length_past",
                   dict(qkv(1), **past(MAX), seqlens_k=ragged,
                        attention_bias=f32(1, 1, 1, P + 1)), P + 1)
    yield gqa_case("gqa_head_sink", dict(qkv(), seqlens_k=padded,
                                         head_sink=f32(N)), S)
    # Learned sinks are weights (gpt-oss): the attention kernel takes them.
    yield gqa_case("gqa_head_sink_weights", dict(qkv(), seqlens_k=padded,
                                                 head_sink=f32(N)), S,
                   initializers=["head_sink"])
    yield gqa_case("gqa_smooth_softmax_decode",
                   dict(qkv(1), **past(P), seqlens_k=ragged), P + 1,
                   smooth_softmax=1)
    yield gqa_case("gqa_non_causal_prompt", dict(qkv(), seqlens_k=padded), S,
                   causal=0)
    yield gqa_case("gqa_non_causal_decode",
                   dict(qkv(1), **past(P), seqlens_k=ragged), P + 1, causal=0)
    # onnxruntime leaves the qk output's columns after a batch's valid
    # length unwritten (Kiln writes 0): these batches are all of full length.
    qk_outputs = OUTPUTS + ("qk",)
    yield gqa_case("gqa_qk_output_scores",
                   dict(qkv(), **past(MAX), seqlens_k=full,
                        attention_bias=f32(B, 1, S, S)),
                   S, outputs=qk_outputs, qk_output=1, softcap=1.5)
    yield gqa_case("gqa_qk_output_probabilities",
                   dict(qkv(1), **past(P), seqlens_k=lengths(P, P)), P + 1,
                   outputs=qk_outputs, qk_output=2)
    # One key/value head for all query heads, and as many as query heads.
    yield gqa_case("gqa_one_kv_head",
                   dict(query=f32(B, S, N * H), key=f32(B, S, H),
                        value=f32(B, S, H), seqlens_k=padded), S, kv_num_heads=1)
    yield gqa_case("gqa_equal_heads",
                   dict(query=f32(B, 1, N * H), key=f32(B, 1, N * H),
                        value=f32(B, 1, N * H), past_key=f32(B, N, P, H),
                        past_value=f32(B, N, P, H), seqlens_k=ragged),
                   P + 1, kv_num_heads=N)
    yield model_builder_case(f32)


def shares_cache_buffer(case):
    """Whether the case's past has the present's rows (a buffer of the
    maximum length, total_sequence_length <= its rows): Kiln then writes the
    new rows into it in place, as onnxruntime does when past and present are
    one buffer, and keeps the rows after each batch's valid ones."""
    past = case.feeds.get("past_key")
    total = case.weights.get("total_sequence_length")
    return (past is not None and total is not None and past.shape[2] > 0
            and int(total) <= past.shape[2])


def run_sharing_buffers(session, case):
    """onnxruntime's outputs with past_key/present_key and
    past_value/present_value bound to one buffer each (its
    past_present_share_buffer form)."""
    binding = session.io_binding()
    caches = {}
    for name, value in case.feeds.items():
        if name in ("past_key", "past_value"):
            caches[name] = ort.OrtValue.ortvalue_from_numpy(value.copy())
            binding.bind_ortvalue_input(name, caches[name])
        else:
            binding.bind_cpu_input(name, value)
    for name in case.outputs:
        if name.startswith("present_"):
            binding.bind_ortvalue_output(
                name, caches[name.replace("present_", "past_")])
        else:
            binding.bind_output(name)
    session.run_with_iobinding(binding)
    outputs = binding.get_outputs()
    return {name: value.numpy().copy()
            for name, value in zip(case.outputs, outputs)}


def saved_with_session(case, work):
    """The case's model written to work/model.onnx, and an onnxruntime
    session over it."""
    path = os.path.join(work, "model.onnx")
    model = case.model().SerializeToString()
    with open(path, "wb") as file:
        file.write(model)
    return path, ort.InferenceSession(model,
                                      providers=["CPUExecutionProvider"])


def check(tools, case, work):
    """Returns why the case failed, or None."""
    path, session = saved_with_session(case, work)
    if shares_cache_buffer(case):
        expected = run_sharing_buffers(session, case)
    else:
        expected = dict(zip(case.outputs, session.run(None, case.feeds)))
    reference, host = check_both_paths(tools, path, case.feeds, expected, work)
    pipeline = run([tools.kiln_run, path, "--compare-pipeline"]
                   + save_inputs(case.feeds, work))
    if reference or host or pipeline:
        return (f"reference: {reference or 'pass'}; host: {host or 'pass'}; "
                f"pipeline: {pipeline or 'pass'}")
    return None


# What Kiln's refusal of a seqlens_k outside the cache says, on both paths.
SEQLENS_REFUSAL = "seqlens_k (input 5) must be in ["


def refusals(rng):
    """GroupQueryAttention runs whose seqlens_k lies outside the cache, and
    whether onnxruntime refuses them too."""
    inputs = Inputs(rng)
    lengths, qkv, past = inputs.lengths, inputs.qkv, inputs.past

    P = 6
    yield gqa_case("negative_seqlens_at_total_prompt",
                   dict(qkv(), seqlens_k=lengths(S, S - 1)), S), True
    yield gqa_case("negative_seqlens_negative",
                   dict(qkv(), seqlens_k=lengths(-1, 2)), S), True
    yield gqa_case("negative_seqlens_past_total_decode",
                   dict(qkv(1), **past(P), seqlens_k=lengths(P + 1, P)),
                   P + 1), True
    yield gqa_case("negative_seqlens_below_new_tokens",
                   dict(qkv(3, 1), **past(P, 1), seqlens_k=lengths(1)),
                   P + 3), True
    # onnxruntime bounds a shared buffer's seqlens_k by the buffer and then
    # reads seqlens_k + 1 keys, past total_sequence_length; Kiln reads the
    # total's keys, so it refuses rather than answer otherwise.
    yield gqa_case("negative_seqlens_past_total_in_buffer",
                   dict(qkv(1), **past(10), seqlens_k=lengths(P + 1, P)),
                   P + 1), False


def check_refusal(tools, case, ort_refuses, work):
    """Returns why Kiln (or onnxruntime) did not refuse the case, or None."""
    path, session = saved_with_session(case, work)
    try:
        session.run(None, case.feeds)
        refused = False
    except Exception:  # onnxruntime's own error type is not exported
        refused = True
    if refused != ort_refuses:
        return f"onnxruntime {'refuses' if refused else 'accepts'} it"
    so = os.path.join(work, "model.so")
    why = run([tools.kilnc, path, "-o", so])
    if why:
        return f"compile: {why}"
    for label, cmd in (("reference", [tools.kiln_run, path, "--backend",
                                      "reference"]),
                       ("host", [tools.kiln_run, so, "--backend", "host"])):
        result = run_with_inputs(cmd, case.feeds, os.path.join(work, label))
        if not expect_refusal(result, SEQLENS_REFUSAL, f"{label}: "):
            return f"{label} did not refuse it naming seqlens_k"
        if f"'{NODE}'" not in result.stderr:
            return f"{label} did not name the node '{NODE}'"
    return None


def main():
    parser = tools_parser(__doc__)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--only", help="run the case of this name only")
    tools = parser.parse_args()
    print(f"seed {tools.seed}")
    rng = np.random.default_rng(tools.seed)
    checks = [(case.name, lambda work, c=case: check(tools, c, work))
              for case in cases(rng)]
    checks += [(case.name, lambda work, c=case, o=ort_refuses:
                check_refusal(tools, c, o, work))
               for case, ort_refuses in refusals(rng)]
    return run_checks([(name, check) for name, check in checks
                       if not tools.only or name == tools.only],
                      "kiln-gqa-", "GroupQueryAttention graphs",
                      "reference, host backend, pipeline")


if __name__ == "__main__":
    sys.exit(main())
