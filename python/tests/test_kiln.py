"""The kiln package against onnxruntime, on the host backend.

  python3 -m pip install ./python && python3 -m pytest python/tests

Uses the exports of test/models/fresh and the build's kilnc (KILN_BUILD_DIR,
default build/) for an artifact to load.
"""
import os
import shutil
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import kiln

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FRESH = os.path.join(REPO, "test", "models", "fresh")
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(REPO, "build"))


def assert_within(got, want):
    """Fails unless `got` meets the fp32 numerics contract against `want`
    (kiln.compare: the comparator kiln-run uses)."""
    comparison = kiln.compare(got, want)
    assert comparison.within, f"{comparison.text} ({comparison.tolerance})"


def folder_inputs(folder):
    inputs = os.path.join(folder, "inputs")
    return {f[:-4]: np.load(os.path.join(inputs, f)) for f in sorted(os.listdir(inputs))}


def onnxruntime_outputs(path, feeds):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


@pytest.fixture(scope="module")
def bert():
    return kiln.compile(os.path.join(FRESH, "bert-torchscript", "model.onnx"),
                        backend="host", report=True)


def test_compile_a_path_and_match_onnxruntime(bert):
    folder = os.path.join(FRESH, "bert-torchscript")
    feeds = folder_inputs(folder)
    got = bert.run(feeds)
    want = onnxruntime_outputs(os.path.join(folder, "model.onnx"), feeds)
    assert set(got) == set(want)
    for name in want:
        assert_within(got[name], want[name])


def test_contexts_run_from_threads_at_once(bert):
    # Each thread its own context over one model; every run matches the
    # model's own run on the same inputs.
    from concurrent.futures import ThreadPoolExecutor
    feeds = folder_inputs(os.path.join(FRESH, "bert-torchscript"))
    variants = []
    for k in range(4):
        ids = (feeds["input_ids"] + k) % 50
        variants.append({"input_ids": ids, "attention_mask": feeds["attention_mask"]})
    want = [bert.run(v)["output"] for v in variants]

    def work(k):
        context = bert.context()
        return [context.run(variants[k])["output"] for _ in range(3)]

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(work, range(4)))
    for k, runs in enumerate(results):
        for got in runs:
            np.testing.assert_array_equal(got, want[k])
    with pytest.raises(kiln.RunError, match="inputs missing"):
        bert.context().run({"input_ids": feeds["input_ids"]})


def test_run_on_a_stream(bert):
    # On the host backend a run "on a stream" takes host arrays and is over
    # when the call returns; synchronize has nothing to wait for. (On the
    # CUDA backend it queues on the stream: GpuTest and the C ABI's tests.)
    feeds = folder_inputs(os.path.join(FRESH, "bert-torchscript"))
    want = bert.run(feeds)["output"]
    context = bert.context()

    class TorchLikeStream:
        cuda_stream = 0

    for stream in (0, TorchLikeStream()):
        out = {"output": np.full(want.shape, np.nan, want.dtype)}
        got = context.run(feeds, outputs=out, stream=stream)
        context.synchronize()
        assert got["output"] is out["output"]
        np.testing.assert_array_equal(out["output"], want)
    with pytest.raises(kiln.RunError, match="stream must be a CUstream"):
        context.run(feeds, stream="default")
    with pytest.raises(kiln.RunError, match="stream must be a CUstream"):
        context.run(feeds, stream=-1)


def test_describes_inputs_outputs_backend_and_report(bert):
    assert [i.name for i in bert.inputs] == ["input_ids", "attention_mask"]
    assert bert.inputs[0].dtype == np.int64 and bert.inputs[0].shape == (2, 8)
    assert bert.outputs[0].name == "output"
    assert bert.outputs[0].dtype == np.float32
    assert bert.outputs[0].shape == (2, 8, 32)
    assert bert.backend == "host"
    assert "launches: " in bert.report and "attention" in bert.report


def test_compile_a_model_proto_with_dims():
    folder = os.path.join(FRESH, "gpt2-dynamo-dynamic")
    proto = onnx.load(os.path.join(folder, "model.onnx"))  # weights loaded
    model = kiln.compile(proto, dims={"batch": 3, "sequence": 5}, backend="host")
    assert model.inputs[0].shape == (3, 5)
    feeds = folder_inputs(folder)
    got = model.run(feeds)
    want = np.load(os.path.join(folder, "expected", "output.npy"))
    assert_within(got["output"], want)


def test_one_model_for_every_shape_in_range():
    """A dim given a range stays symbolic: one compile runs at each shape,
    the dims learned from the inputs, against the reference interpreter's
    outputs at that shape; a shape out of range or inconsistent is refused
    by name and the model stays usable."""
    import onnxruntime as ort
    path = os.path.join(FRESH, "gpt2-torchscript-dynamic", "model.onnx")
    model = kiln.compile(path, dims={"batch": (1, 4), "sequence": (1, 16)},
                         backend="host")
    assert model.dims == [kiln.DimInfo("batch", 1, 4),
                          kiln.DimInfo("sequence", 1, 16)]
    assert model.inputs[0].shape == (4, 16)  # the top of the ranges
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    for batch, sequence in ((1, 1), (2, 7), (4, 16)):
        feeds = {"input_ids": rng.integers(0, 96, (batch, sequence)),
                 "attention_mask": np.ones((batch, sequence), np.int64)}
        got = model.run(feeds)["output"]
        want = session.run(None, feeds)[0]
        assert got.shape == (batch, sequence, 96)
        assert_within(got, want)
    with pytest.raises(kiln.RunError, match="'batch' is 5 .*outside its "
                                            "range 1..4"):
        model.run({"input_ids": np.zeros((5, 2), np.int64),
                   "attention_mask": np.ones((5, 2), np.int64)})
    with pytest.raises(kiln.RunError, match="input 'attention_mask' dim 1 is "
                                            "3, but its size 'sequence' is 2"):
        model.run({"input_ids": np.zeros((1, 2), np.int64),
                   "attention_mask": np.ones((1, 3), np.int64)})
    assert model.run({"input_ids": np.zeros((1, 2), np.int64),
                      "attention_mask": np.ones((1, 2), np.int64)}
                     )["output"].shape == (1, 2, 96)
    with pytest.raises(TypeError, match="an int, a \\(min, max\\) pair"):
        kiln.compile(path, dims={"batch": (1, 2, 3)}, backend="host")
    with pytest.raises(ValueError, match="dim 'batch': the range \\(4, 1\\) "
                                         "must have 0 <= min <= max"):
        kiln.compile(path, dims={"batch": (4, 1)}, backend="host")


def test_import_errors_name_compile_arguments():
    """The importer's messages name kiln.compile's own arguments (dims=,
    input_shapes=), not kilnc's flags."""
    path = os.path.join(FRESH, "bert-torchscript-dynamic", "model.onnx")
    with pytest.raises(kiln.CompileError) as error:
        kiln.compile(path, backend="host")
    message = str(error.value)
    assert "give it with dims NAME=N" in message
    assert "whole shape with input_shapes NAME=DIMxDIM" in message
    assert "--dim" not in message and "--input-shape" not in message
    with pytest.raises(kiln.CompileError, match="dims nope: the model's "
                                                "inputs have no dim"):
        kiln.compile(path, dims={"nope": 1, "batch": 1, "sequence": 8},
                     backend="host")


def test_a_bad_dim_expression_is_refused():
    """A dim's expression that does not parse names the dim and the text;
    one over a dim nobody gave says which."""
    path = os.path.join(FRESH, "gpt2-torchscript-kv", "model.onnx")
    dims = {"batch": (1, 1), "sequence": (1, 8), "past_sequence": (0, 7)}
    with pytest.raises(ValueError, match="dim 'total_sequence': invalid value "
                                         "'past_sequence\\+'"):
        kiln.compile(path, dims={**dims, "total_sequence": "past_sequence+"},
                     backend="host")
    with pytest.raises(kiln.CompileError, match="needs past\\b"):
        kiln.compile(path, dims={**dims, "total_sequence": "past+sequence"},
                     backend="host")


def test_kv_cache_in_place():
    """kv_cache_in_place: each past input is the cache at its full length
    and its present the same storage; with one array passed as both, a step
    writes the new rows after the valid ones and nothing else (the rows
    after them stay NaN), and the logits and the valid rows match
    onnxruntime's loop over the same export, which copies the cache."""
    path = os.path.join(FRESH, "gpt2-torchscript-kv", "model.onnx")
    model = kiln.compile(path, dims={"batch": (1, 1), "sequence": (1, 8),
                                     "past_sequence": (0, 7),
                                     "total_sequence":
                                         "past_sequence+sequence"},
                         backend="host", kv_cache_in_place=True)
    pasts = [i.name for i in model.inputs if i.name.startswith("past")]
    assert model.aliases == {"present" + n[len("past_key_values"):]: (n, 2)
                             for n in pasts}
    capacity = dict((i.name, i.shape) for i in model.inputs)[pasts[0]][2]
    assert capacity == 15
    caches = {n: np.full((1, 4, capacity, 8), np.nan, np.float32)
              for n in pasts}
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ort_pasts = {n: np.zeros((1, 4, 0, 8), np.float32) for n in pasts}
    tokens, total = [[5, 17, 42, 8], [23], [61]], 0
    for step in tokens:
        total += len(step)
        ids = np.array([step], np.int64)
        mask = np.ones((1, total), np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        outputs = {"present" + n[len("past_key_values"):]: caches[n]
                   for n in pasts}
        outputs["logits"] = np.empty((1, len(step), 96), np.float32)
        got = model.run({**feeds, **caches}, outputs=outputs)
        want = dict(zip([o.name for o in session.get_outputs()],
                        session.run(None, {**feeds, **ort_pasts})))
        assert_within(got["logits"], want["logits"])
        for n in pasts:
            present = "present" + n[len("past_key_values"):]
            assert got[present] is caches[n]
            assert_within(caches[n][:, :, :total], want[present])
            assert np.isnan(caches[n][:, :, total:]).all()
            ort_pasts[n] = want[present]


def test_allow_tf32_rounds_matmul_inputs():
    """allow_tf32: the fp32 matmuls take TF32 inputs (the report marks
    them); on the host backend the outputs move away from onnxruntime's by
    TF32 rounding and stay within the 16-bit contract."""
    path = os.path.join(FRESH, "bert-torchscript", "model.onnx")
    model = kiln.compile(path, backend="host", report=True, allow_tf32=True)
    assert " tf32" in model.report
    feeds = folder_inputs(os.path.join(FRESH, "bert-torchscript"))
    got = model.run(feeds)
    want = onnxruntime_outputs(path, feeds)
    for name, value in want.items():
        error = np.linalg.norm(got[name] - value) / np.linalg.norm(value)
        assert 0 < error < 1e-2, (name, error)


def test_weights_int4_quantizes_linear_layers():
    """weights="int4": BERT's linear layers quantized at compile time (the
    report lists them); the outputs move away from onnxruntime's by the
    quantization, not beyond it."""
    path = os.path.join(FRESH, "bert-torchscript", "model.onnx")
    model = kiln.compile(path, backend="host", report=True, weights="int4")
    assert "weights quantized at compile time" in model.report
    assert "int4 blocks of 32" in model.report
    feeds = folder_inputs(os.path.join(FRESH, "bert-torchscript"))
    got = model.run(feeds)
    want = onnxruntime_outputs(path, feeds)
    for name, value in want.items():
        error = np.linalg.norm(got[name] - value) / np.linalg.norm(value)
        assert 0 < error < 0.1, (name, error)


def test_float8_and_int4_tensors_are_ml_dtypes_arrays():
    """float8 and 4-bit inputs and outputs are ml_dtypes' arrays (what onnx's
    numpy_helper gives): a DequantizeLinear of an int4 input and a
    QuantizeLinear to float8 E4M3FN (-6 / 0.01 saturating at -448), against
    ONNX's reference evaluator bit for bit (onnxruntime takes no int4
    arrays from Python)."""
    import ml_dtypes
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["q", "s"], ["x"]),
         helper.make_node("QuantizeLinear", ["x", "s8", "z8"], ["y"])],
        "float8_int4",
        [helper.make_tensor_value_info("q", TensorProto.INT4, [6])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, [6])],
        [helper.make_tensor("s", TensorProto.FLOAT, [], [0.75]),
         helper.make_tensor("s8", TensorProto.FLOAT, [], [0.01]),
         helper.make_tensor("z8", TensorProto.FLOAT8E4M3FN, [1], [0.0])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    proto.ir_version = 10
    model = kiln.compile(proto, backend="host")
    assert model.inputs[0].dtype == np.dtype(ml_dtypes.int4)
    assert model.outputs[1].dtype == np.dtype(ml_dtypes.float8_e4m3fn)
    q = np.array([-8, -3, 0, 1, 5, 7], dtype=ml_dtypes.int4)
    got = model.run({"q": q})
    from onnx.reference import ReferenceEvaluator
    want_x, want_y = ReferenceEvaluator(proto).run(None, {"q": q})
    np.testing.assert_array_equal(got["x"], want_x)
    np.testing.assert_array_equal(got["y"].view(np.uint8),
                                  want_y.view(np.uint8))
    assert float(got["y"][0]) == -448.0
    with pytest.raises(kiln.RunError, match="int4"):
        model.run({"q": q.astype(np.int8)})


def test_model_proto_reads_external_data_from_base_dir():
    folder = os.path.join(FRESH, "bert-dynamo")
    proto = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
    with pytest.raises(kiln.CompileError, match="external data at 'model.onnx.data'"):
        kiln.compile(proto, backend="host")
    model = kiln.compile(proto, backend="host", base_dir=folder)
    got = model.run(folder_inputs(folder))
    want = np.load(os.path.join(folder, "expected", "output.npy"))
    assert_within(got["output"], want)


def test_load_an_artifact_written_by_kilnc(tmp_path):
    folder = os.path.join(FRESH, "llama-torchscript")
    so = str(tmp_path / "llama.so")
    subprocess.run([os.path.join(BUILD, "bin", "kilnc"),
                    os.path.join(folder, "model.onnx"), "-o", so, "-q"], check=True)
    model = kiln.load(so, backend="host")
    got = model.run(folder_inputs(folder))
    want = np.load(os.path.join(folder, "expected", "output.npy"))
    assert_within(got["output"], want)


def test_compile_error_is_what_kilnc_prints():
    path = os.path.join(FRESH, "bert-torchscript-dynamic", "model.onnx")
    with pytest.raises(kiln.CompileError) as error:
        kiln.compile(path, backend="host")
    cli = subprocess.run([os.path.join(BUILD, "bin", "kilnc"), path, "-o",
                          os.devnull], capture_output=True, text=True)
    assert cli.returncode != 0
    # The same message, each naming its own options: kilnc its flags,
    # kiln.compile its arguments.
    assert str(error.value) == (cli.stderr.strip()
                                .replace("--dim", "dims")
                                .replace("--input-shape", "input_shapes"))
    assert "needs batch, sequence" in str(error.value)


def test_run_errors_leave_the_model_usable(bert):
    feeds = folder_inputs(os.path.join(FRESH, "bert-torchscript"))
    with pytest.raises(kiln.RunError, match="input 'input_ids' is int32"):
        bert.run({**feeds, "input_ids": feeds["input_ids"].astype(np.int32)})
    with pytest.raises(kiln.RunError, match="inputs missing: \\['attention_mask'\\]"):
        bert.run({"input_ids": feeds["input_ids"]})
    bad = feeds["input_ids"].copy()
    bad[0, 0] = 10_000  # outside the vocabulary: the index check
    with pytest.raises(kiln.RunError, match="index out of range"):
        bert.run({**feeds, "input_ids": bad})
    assert bert.run(feeds)["output"].shape == (2, 8, 32)


def test_run_on_another_backend(tmp_path):
    folder = os.path.join(FRESH, "bert-torchscript")
    feeds = folder_inputs(folder)
    model = kiln.compile(os.path.join(folder, "model.onnx"), backend="host")
    plain = model.run(feeds)["output"]
    np.testing.assert_array_equal(model.run(feeds, backend="host")["output"], plain)
    if has_gpu():
        assert_within(model.run(feeds, backend="cuda")["output"], plain)
    else:
        with pytest.raises(kiln.RunError, match="CUDA|driver|device"):
            model.run(feeds, backend="cuda")
    # Still usable on its own backend after the failed one.
    np.testing.assert_array_equal(model.run(feeds)["output"], plain)
    with pytest.raises(ValueError, match="backend must be"):
        model.run(feeds, backend="tpu")


def has_gpu():
    return shutil.which("nvidia-smi") is not None and subprocess.run(
        ["nvidia-smi", "-L"], capture_output=True).returncode == 0


def test_bad_arguments():
    path = os.path.join(FRESH, "bert-torchscript", "model.onnx")
    with pytest.raises(ValueError, match="backend must be"):
        kiln.compile(path, backend="tpu")
    with pytest.raises(ValueError, match="precision must be"):
        kiln.compile(path, precision="fp8")
    with pytest.raises(ValueError, match="weights: 'int3' is not float"):
        kiln.compile(path, weights="int3")
    with pytest.raises(ValueError, match="power of two of at least 16, got 24"):
        kiln.compile(path, weights="int4", weights_block_size=24)
    with pytest.raises(TypeError):
        kiln.compile(42)
    with pytest.raises(kiln.RunError, match="cannot"):
        kiln.load("/nonexistent/model.so")


class DLPackOnly:
    """A tensor that only speaks DLPack, as a PyTorch CPU tensor does."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_dlpack_in_and_out(bert):
    feeds = folder_inputs(os.path.join(FRESH, "bert-torchscript"))
    plain = bert.run(feeds)["output"]
    got = bert.run({k: DLPackOnly(v) for k, v in feeds.items()})["output"]
    np.testing.assert_array_equal(got, plain)
    # Out: the outputs are DLPack producers, read without a copy.
    view = np.from_dlpack(got)
    assert view.ctypes.data == got.ctypes.data
    # Into caller-provided outputs.
    out = np.zeros((2, 8, 32), np.float32)
    result = bert.run(feeds, outputs={"output": out})
    assert result["output"] is out
    np.testing.assert_array_equal(out, plain)
    with pytest.raises(kiln.RunError, match="writable contiguous"):
        bert.run(feeds, outputs={"output": np.zeros((2, 8, 31), np.float32)})


class OnDevice(DLPackOnly):
    """A tensor that says it lives on a DLPack device Kiln does not take."""

    def __dlpack_device__(self):
        return (7, 0)  # kDLVulkan


def test_dlpack_and_outputs_refused(bert):
    feeds = folder_inputs(os.path.join(FRESH, "bert-torchscript"))
    with pytest.raises(kiln.RunError, match="is on DLPack device 7"):
        bert.run({**feeds, "input_ids": OnDevice(feeds["input_ids"])})
    with pytest.raises(kiln.RunError, match="outputs must name exactly"):
        bert.run(feeds, outputs={"logits": np.zeros((2, 8, 32), np.float32)})
    with pytest.raises(kiln.RunError, match="unknown: \\['extra'\\]"):
        bert.run({**feeds, "extra": feeds["input_ids"]})


def test_dlpack_capsule_is_read_in_place():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    ptr, device, _, code, bits, lanes, shape, _ = kiln._kiln.dlpack_info(
        array.__dlpack__())
    assert (ptr, device, code, bits, lanes, shape) == (
        array.ctypes.data, 1, 2, 32, 1, (2, 3))


def test_version():
    assert kiln.__version__ == "0.1.0"
    assert kiln.version().startswith("Kiln 0.1.0\n  LLVM/MLIR 22.")


def test_compare_is_the_numerics_contract():
    want = np.array([1.0, -2.0, 0.0, np.nan], np.float32)
    assert kiln.compare(want, want).within
    close = want + np.array([1e-5, -1e-5, 5e-6, 0], np.float32)
    assert kiln.compare(close, want).within
    far = want.copy()
    far[2] = 1e-3
    result = kiln.compare(far, want)
    assert not result and result.first_bad == 2
    assert "FAIL at element 2" in result.text
    # A NaN only where the reference has one.
    nan = want.copy()
    nan[0] = np.nan
    assert kiln.compare(nan, want).first_bad == 0
    # The 16-bit contract: relative L2.
    noisy = (want[:3] * np.float32(1.001)).astype(np.float16)
    assert kiln.compare(noisy, want[:3].astype(np.float16), rel_l2=1e-2)
    assert not kiln.compare(noisy, want[:3].astype(np.float16), rel_l2=1e-4)


def test_compare_integers_exactly():
    big = np.array([2**62 + 1, 7], np.int64)
    assert kiln.compare(big, big).within
    assert kiln.compare(big - np.array([1, 0]), big).first_bad == 0
    assert not kiln.compare(np.array([True]), np.array([False]))


def test_compare_refuses_what_it_cannot_compare():
    with pytest.raises(ValueError, match="shapes"):
        kiln.compare(np.zeros(3, np.float32), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="complex64"):
        kiln.compare(np.zeros(2, np.complex64), np.zeros(2, np.complex64))
