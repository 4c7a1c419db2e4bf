#!/usr/bin/env python3
"""Runs ONNX conformance node tests through kiln-run and checks the outputs.

  run_node_tests.py --kiln-run build/bin/kiln-run [--backend reference]
                    [--outside-index] [OP ...]
  run_node_tests.py --kiln-run build/bin/kiln-run --kilnc build/bin/kilnc
                    --backend host [OP ...]
  run_node_tests.py --kiln-run build/bin/kiln-run --kilnc build/bin/kilnc
                    --all [--write-doc docs/conformance.md |
                           --check-doc docs/conformance.md] [OP ...]

Without --index/--all, runs every test folder of the corpus whose name starts
with test_<op> for the given ops (default: the walking skeleton's ops) on one
backend. With --backend reference, kiln-run imports the model and interprets
it; with --backend host (or cuda), kilnc compiles it to a .so first, which
kiln-run runs on that backend, so the generated kernels themselves are
checked. --outside-index leaves out the tests INDEX.md lists, which an
--all run covers on both paths already (ctest runs both, so CI runs each
test once per path).

With --index INDEX.md (--all: the corpus's onnx-node/INDEX.md), runs the
tests INDEX.md lists, per op and exactly as listed (`_expanded` variants
included), on the reference interpreter and on the host backend, and on the
GPU too where `nvidia-smi -L` finds one (--cuda auto). Positional arguments
then name INDEX.md ops (`Softmax`) to run only those. --write-doc writes the
report (docs/conformance.md); --check-doc fails when the report it would write
differs from the file, so a stale page is noticed.

Outputs are compared with the expected ones with the tolerances of ONNX's own
backend runner (rtol 1e-3, atol 1e-7) unless TOLERANCES says otherwise;
shapes and element types must match, integers and booleans exactly. Inputs
that decide a shape, an axis or a count (COMPILE_TIME_OPERANDS, followed back
through the nodes computing them) are frozen as compile-time constants
(--const-input of kiln-run or kilnc); all other inputs stay run-time inputs. Each result is one of:
  pass               the outputs match;
  unsupported-dtype  Kiln rejected an element type it declares unsupported
                     with its clear "unsupported element type" error;
  unsupported-op     the importer's one diagnostic "model has N unsupported
                     ops" (index mode only: the skeleton's ops must import);
  known-gap          a failure listed in KNOWN_GAPS with its reason;
  fail               wrong numbers, shape or type, a crash (signal), a
                     timeout (--timeout) or any other error.
The exit code is 1 on any fail (or a stale --check-doc), 0 otherwise:
unsupported ops and element types are reported, not errors. The corpus folder
is $KILN_CORPUS_DIR or ../shared/corpus; without it the run is skipped with a
message (exit code 77 in index mode, 0 otherwise).
"""
import argparse
import collections
import concurrent.futures
import difflib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types

import numpy as np
import onnx
from onnx import numpy_helper

SKELETON_OPS = [
    "matmul", "gemm", "add", "sub", "mul", "div", "pow", "sqrt", "erf", "tanh",
    "exp", "relu", "sigmoid", "softmax", "layer_normalization",
    "transpose", "reshape", "cast_FLOAT_to_FLOAT16", "cast_FLOAT16_to_FLOAT",
    # Casts to and from double (the other Cast tests are float8, 4- and 2-bit
    # types, which Kiln rejects); Einsum's tests are all double.
    "cast_FLOAT_to_DOUBLE", "cast_DOUBLE_to_FLOAT", "cast_FLOAT16_to_DOUBLE",
    "cast_DOUBLE_to_FLOAT16", "einsum",
    # Shapes, views and indexing.
    "shape", "size", "unsqueeze", "squeeze", "flatten", "concat", "slice",
    "split", "gather", "expand", "constantofshape", "range",
    "rms_normalization", "tril", "triu", "tile",
    # Elementwise math, logic and comparisons, Where, Clip, Dropout. And, Or
    # and Xor tests are also named test_and2d etc., without an underscore.
    "neg", "reciprocal", "log", "abs", "floor", "ceil", "round", "sin", "cos",
    "sign", "gelu", "isnan", "isinf", "max", "min", "mod", "sum", "not",
    "and", "and2d", "and3d", "and4d", "or", "or2d", "or3d", "or4d",
    "xor", "xor2d", "xor3d", "xor4d", "equal", "less", "greater", "where",
    "clip", "dropout", "castlike",
    # Reductions (every Reduce* op), ArgMax/ArgMin, LogSoftmax, CumSum, TopK.
    "reduce", "argmax", "argmin", "logsoftmax", "cumsum", "top_k",
    # GatherND and Pad (each Pad mode's tests are named after the mode).
    "gathernd", "constant_pad", "edge_pad", "reflect_pad", "wrap_pad",
    # ScatterND (its points frozen), QuantizeLinear and DequantizeLinear
    # (float8 E4M3FN and E5M2 and the 4-bit integers run; float4 and the
    # 2-bit types are reported as unsupported).
    "scatternd", "quantizelinear", "dequantizelinear",
    # onnxruntime's quantize_dynamic form; QLinearMatMul.
    "dynamicquantizelinear", "matmulinteger", "qlinearmatmul",
]
# Known gaps, each failing for the reason given; they are reported, and a
# test that starts passing is reported too so the entry can go.
KNOWN_GAPS = {}
# ONNX's own backend runner's tolerances, and the tests that need looser ones:
# test name -> (rtol, atol, why). The report lists each with its reason.
DEFAULT_RTOL, DEFAULT_ATOL = 1e-3, 1e-7
TOLERANCES = {}

PATHS = ("reference", "host", "cuda")
# Worst first: a test counts once in the summary, by its worst result.
STATUSES = ("fail", "known-gap", "unsupported-op", "unsupported-dtype", "pass")
SKIP_EXIT_CODE = 77
# The command that regenerates the report, as the report states it: relative
# paths only, so the page does not depend on the machine that wrote it.
DOC_COMMAND = ("python3 test/conformance/run_node_tests.py --all "
               "--kiln-run build/bin/kiln-run --kilnc build/bin/kilnc "
               "--write-doc docs/conformance.md")
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def wanted(name, ops):
    if name.endswith("_expanded") or "_expanded_" in name:
        return False
    for op in ops:
        prefix = "test_" + op
        if name == prefix or name.startswith(prefix + "_"):
            # test_exp_example is Exp; test_expand is not.
            if op in ("exp", "sub") and name != prefix and not name.startswith(
                    (prefix + "_example", prefix + "_bcast", prefix + "_int",
                     prefix + "_uint")):
                continue
            return not name.startswith("test_softmax_cross_entropy")
    return False


# Per op, the input positions Kiln needs at compile time: shapes, axes,
# counts and bounds.
COMPILE_TIME_OPERANDS = {
    "Reshape": {1}, "Expand": {1}, "Tile": {1}, "ConstantOfShape": {0},
    "Slice": {1, 2, 3, 4}, "Squeeze": {1}, "Unsqueeze": {1}, "Split": {1},
    "TopK": {1}, "CumSum": {1}, "Range": {0, 1, 2}, "Pad": {1, 2, 3},
    "Trilu": {1}, "OneHot": {1}, "ReduceSum": {1}, "ReduceMean": {1},
    "ReduceMax": {1}, "ReduceMin": {1}, "ReduceProd": {1}, "ReduceL1": {1},
    "ReduceL2": {1}, "ReduceLogSum": {1}, "ReduceLogSumExp": {1},
    "ReduceSumSquare": {1}, "Loop": {0, 1},
    # Kiln scatters to points known at compile time only (no scatter kernel).
    "ScatterND": {1},
}


def compile_time_values(graph):
    """The names of the values that must be known at compile time: the
    operands above and, transitively, every input of the nodes computing
    them (an `_expanded` test computes its shapes from its inputs)."""
    needed = set()
    for n in graph.node:
        for k in COMPILE_TIME_OPERANDS.get(n.op_type, ()):
            if k < len(n.input) and n.input[k]:
                needed.add(n.input[k])
    changed = True
    while changed:
        changed = False
        for n in graph.node:
            if any(o in needed for o in n.output):
                for i in n.input:
                    if i and i not in needed:
                        needed.add(i)
                        changed = True
    return needed


def parse_index(path):
    """Returns (corpus commit, {op: [test, ...]}) in INDEX.md's order.

    Op sections are `## Op (N)` headings followed by a line of
    `test_name (opset)` entries; other sections are notes and are skipped.
    """
    with open(path, encoding="utf-8") as f:
        text = f.read()
    commit = re.search(r"\bcommit ([0-9a-f]{7,40})\b", text)
    ops = {}
    for match in re.finditer(r"^## (\w+) \((\d+)\)\n((?:.+\n?)*)", text, re.M):
        op, count, body = match.group(1), int(match.group(2)), match.group(3)
        tests = re.findall(r"\b(test_\w+) \(\d+\)", body)
        if len(tests) != count:
            raise ValueError(f"{path}: section {op} says {count} tests, lists {len(tests)}")
        ops[op] = tests
    if not ops:
        raise ValueError(f"{path}: no '## Op (N)' sections")
    return commit.group(1) if commit else "unknown", ops


def run(args, timeout):
    """Runs a tool in its own process group, all of which a timeout kills."""
    try:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, errors="replace", start_new_session=True)
    except OSError as e:
        return types.SimpleNamespace(returncode=127, stderr=f"cannot run: {e}",
                                     timed_out=False)
    try:
        _, stderr = proc.communicate(timeout=timeout)
        return types.SimpleNamespace(returncode=proc.returncode, stderr=stderr,
                                     timed_out=False)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, stderr = proc.communicate()
        return types.SimpleNamespace(returncode=-signal.SIGKILL, stderr=stderr,
                                     timed_out=True)


class Sanitizer:
    """Makes tool messages machine-independent: no absolute paths, no addresses."""

    def __init__(self, *dirs):
        self.dirs = sorted({os.path.abspath(d) for d in dirs if d} |
                           {os.path.realpath(d) for d in dirs if d}, key=len, reverse=True)

    def __call__(self, line):
        for d in self.dirs:
            line = line.replace(d + os.sep, "").replace(d, ".")
        line = re.sub(r"(?<![\w.])/(?:[\w.+-]+/)+", "", line)  # other absolute paths
        line = re.sub(r"0x[0-9a-fA-F]{6,}", "0x...", line)
        # 'DIR/model.onnx: at 'NODE': error: X' -> 'X';
        # 'DIR/input_0.pb:0:0: error: X' -> 'input_0.pb: X'.
        line = re.sub(r"^(\S+?):\d+:\d+: ", r"\1: ", line)
        line = re.sub(r"^(\S+): at '.*?': (error|warning): ", r"\1: \2: ", line)
        line = re.sub(r"^model\.onnx: error: ", "", line)
        line = re.sub(r"^(\S+): error: ", r"\1: ", line)
        return line.strip()


def classify(proc, tool, clean, timeout):
    """Returns (status, reason) for a tool run that did not succeed."""
    # The tool's name once, whether or not its messages start with it.
    lines = [re.sub(rf"^{tool}: ", "", clean(l)) for l in proc.stderr.splitlines()
             if l.strip()]
    if proc.timed_out:
        return "fail", f"{tool}: timed out after {timeout:g} s"
    if proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = f"signal {-proc.returncode}"
        errors = [l for l in lines if "error" in l.lower() or "assert" in l.lower()]
        return "fail", f"{tool}: crashed ({name})" + (f": {errors[0]}" if errors else "")
    crashed = any(l.startswith(("Stack dump", "PLEASE submit")) for l in lines)
    if not crashed:
        for line in lines:
            if "unsupported element type" in line:
                return "unsupported-dtype", f"{tool}: {line}"
        if re.search(r"model has \d+ unsupported ops?:", proc.stderr):
            ops = set()
            for domain_op in re.finditer(r"^\s+(\S+) \(domain '([^']*)'", proc.stderr, re.M):
                op, domain = domain_op.group(1), domain_op.group(2)
                ops.add(op if domain in ("", "ai.onnx") else f"{domain}.{op}")
            return "unsupported-op", "not imported: " + ", ".join(sorted(ops))
    return "fail", f"{tool}: " + (lines[0] if lines else f"exit code {proc.returncode}")


def num(x):
    """A tolerance as people write it: 1e-7, not 1e-07."""
    return re.sub(r"e([+-])0*(\d)", r"e\1\2", f"{x:g}")


def compare(got, want, name, tolerance):
    """Returns why `got` does not match `want`, or None."""
    want_dtype = want.dtype
    # .npy has no bfloat16, float8 or 4-bit types (onnx reads them as
    # ml_dtypes' arrays): kiln-run writes the floats as float32 and the
    # 4-bit integers as bytes, exactly.
    written = {"bfloat16": np.float32, "float8_e4m3fn": np.float32,
               "float8_e5m2": np.float32, "int4": np.int8, "uint4": np.uint8}
    if want_dtype.name in written:
        want_dtype = np.dtype(written[want_dtype.name])
        want = want.astype(want_dtype)
    if got.dtype != want_dtype:
        return f"output {name}: element type {got.dtype.name}, expected {want.dtype.name}"
    if got.shape != want.shape:
        return f"output {name}: shape {got.shape} vs {want.shape}"
    if got.dtype.kind in "biu":
        if not np.array_equal(got, want):
            wrong = int(np.count_nonzero(got != want))
            return f"output {name}: {wrong} of {got.size} elements differ"
        return None
    rtol, atol = tolerance
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
        both = np.isfinite(g) & np.isfinite(w)
        if not np.array_equal(np.isnan(g), np.isnan(w)) or not np.all(
                (g == w) | both | np.isnan(w)):
            return f"output {name}: NaN or infinity where the expected value differs"
        diff = np.abs(g - w)[both].max()
        return f"output {name}: max abs error {diff:.1e} (rtol {num(rtol)}, atol {num(atol)})"
    return None


def run_test(tools, backend, folder, timeout=300):
    """Runs one test folder on one backend; returns (status, reason)."""
    folder = os.path.abspath(folder)
    try:
        model = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
    except Exception as e:  # noqa: BLE001 - a corpus file the runner cannot read
        return "fail", f"runner: cannot load model.onnx: {e}"
    data = os.path.join(folder, "test_data_set_0")
    initializers = {t.name for t in model.graph.initializer}
    # Inputs that decide a shape, an axis or a count are frozen as
    # compile-time constants (Kiln compiles for static shapes); every other
    # input, integer data included, stays a run-time input.
    needed = compile_time_values(model.graph)
    inputs, frozen = [], []
    for i, info in enumerate(i for i in model.graph.input if i.name not in initializers):
        spec = f"{info.name}={os.path.join(data, f'input_{i}.pb')}"
        (frozen if info.name in needed else inputs).append(spec)
    with tempfile.TemporaryDirectory(prefix="kiln-conformance-") as out:
        clean = Sanitizer(folder, os.path.dirname(folder), REPO, out)
        if backend == "reference":
            args = [tools.kiln_run, os.path.join(folder, "model.onnx"), "--backend", backend]
            for spec in frozen:
                args += ["--const-input", spec]
        else:
            library = os.path.join(out, "model.so")
            compile_args = [tools.kilnc, os.path.join(folder, "model.onnx"), "-o", library]
            for spec in frozen:
                compile_args += ["--const-input", spec]
            proc = run(compile_args, timeout)
            if proc.returncode != 0:
                return classify(proc, "kilnc", clean, timeout)
            args = [tools.kiln_run, library, "--backend", backend]
        for spec in inputs:
            args += ["--input", spec]
        outputs = os.path.join(out, "outputs")
        args += ["--output-dir", outputs]
        proc = run(args, timeout)
        if proc.returncode != 0:
            return classify(proc, "kiln-run", clean, timeout)
        tolerance = TOLERANCES.get(os.path.basename(folder), (DEFAULT_RTOL, DEFAULT_ATOL))[:2]
        for i, info in enumerate(model.graph.output):
            try:
                expected = onnx.TensorProto()
                with open(os.path.join(data, f"output_{i}.pb"), "rb") as f:
                    expected.ParseFromString(f.read())
                want = numpy_helper.to_array(expected)
            except Exception as e:  # noqa: BLE001 - not a TensorProto
                return "fail", f"runner: cannot read expected output_{i}.pb: {e}"
            path = os.path.join(outputs, info.name.replace("/", "_") + ".npy")
            if not os.path.exists(path):
                written = sorted(f for f in os.listdir(outputs) if f.endswith(".npy")) \
                    if os.path.isdir(outputs) else []
                return "fail", f"output {info.name}: not written (kiln-run wrote {written})"
            try:
                got = np.load(path)
            except (OSError, ValueError) as e:
                return "fail", f"output {info.name}: cannot read kiln-run's .npy: {e}"
            why = compare(got, want, info.name, tolerance)
            if why:
                return "fail", why
    return "pass", ""


def tool_stamps(tools):
    """What tells a rebuilt tool: modification time and size."""
    stamps = []
    for tool in (tools.kiln_run, tools.kilnc):
        try:
            info = os.stat(tool)
            stamps.append((info.st_mtime_ns, info.st_size))
        except OSError:
            stamps.append(None)
    return stamps


def find_gpu():
    try:
        proc = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and "GPU" in proc.stdout


def apply_known_gap(test, status, reason):
    if test not in KNOWN_GAPS:
        return status, reason
    if status == "fail":
        return "known-gap", KNOWN_GAPS[test]
    if status == "pass":
        return "fail", "passes now: remove it from KNOWN_GAPS"
    return status, reason


def without_tool(reason):
    """The reason without the tool that gave it, so that paths can agree."""
    return re.sub(r"^(kilnc|kiln-run): ", "", reason)


def doc_result(status, reason):
    """(status, reason, detail) of one path's result as the report groups it.

    An unsupported element type is told per test (its type), so that the
    tests of one op that reject types group into one line.
    """
    if status == "unsupported-dtype":
        named = re.search(r"unsupported element type (\w+)", reason)
        return status, "", named.group(1) if named else ""
    return status, reason, ""


def md(text):
    """Text as Markdown shows it, not as markup."""
    return re.sub(r"([\\`*<>\[\]|])", r"\\\1", text)


def worst(statuses):
    return min(statuses, key=STATUSES.index)


def render_doc(commit, ops, results, paths):
    """The report, deterministic: INDEX.md's op order, no times or machine paths."""
    total = sum(len(tests) for tests in ops.values())
    path_list = ", ".join(paths)
    lines = [
        "# ONNX conformance",
        "",
        "<!-- Generated by test/conformance/run_node_tests.py; do not edit. -->",
        "",
        "Generated from the repository root by",
        "",
        f"    {DOC_COMMAND}" + (" --cuda on" if "cuda" in paths else ""),
        "",
        "which runs every node test listed in `../shared/corpus/onnx-node/INDEX.md` "
        f"(ONNX backend node tests, onnx/onnx commit `{commit}`): {total} tests of "
        f"{len(ops)} ops, `_expanded` variants (the op written as a graph of "
        "primitive ops) included. `ctest -R conformance-index` (label `conformance`) "
        "runs them again and fails when this page is stale or any test fails.",
        "",
        f"Paths: {path_list}.",
        "- reference: `kiln-run model.onnx --backend reference` imports the model and "
        "runs it on the reference interpreter.",
        "- host: `kilnc model.onnx -o model.so`, then `kiln-run model.so --backend "
        "host` runs the generated CUDA kernels emulated on the CPU.",
    ]
    if "cuda" in paths:
        lines.append("- cuda: the same `.so` run with `kiln-run --backend cuda` on the GPU.")
    else:
        lines.append("- cuda: where `nvidia-smi -L` finds a GPU, the runner also runs the "
                     "`.so` with `kiln-run --backend cuda` and fails on its failures; "
                     "this page shows it only when written there (`--cuda on`).")
    lines += [
        "",
        "Inputs that decide a shape, an axis or a count are frozen as compile-time "
        "constants (`--const-input`); the others, integer data included, stay "
        "run-time inputs. Outputs "
        f"are compared with ONNX's own backend runner's tolerances (rtol {num(DEFAULT_RTOL)}, "
        f"atol {num(DEFAULT_ATOL)}); shapes and element types must match (bfloat16 outputs "
        "are written as float32 by kiln-run) and integers and booleans must be exact.",
        "",
        "Statuses:",
        "- **pass**: the outputs match.",
        "- **unsupported-dtype**: Kiln rejects an element type it declares unsupported "
        "with its \"unsupported element type\" error (not a crash).",
        "- **unsupported-op**: the importer's diagnostic \"model has N unsupported ops\" "
        "names an op Kiln does not import yet.",
        "- **known-gap**: a failure listed in the runner's `KNOWN_GAPS`, with its reason.",
        "- **fail**: wrong numbers, shape or element type, a crash, a timeout or any "
        "other error.",
        "",
    ]
    if TOLERANCES:
        lines += ["Tests compared with looser tolerances:", "",
                  "| test | rtol | atol | why |", "|---|---|---|---|"]
        for test, (rtol, atol, why) in sorted(TOLERANCES.items()):
            lines.append(f"| {test} | {num(rtol)} | {num(atol)} | {md(why)} |")
        lines.append("")

    # Summary: passes per path; the other columns count each test once, by
    # its worst result on any path.
    header = ["op", "tests"] + [f"{p} pass" for p in paths] + list(STATUSES[3::-1])
    lines += [
        "## Summary",
        "",
        "The pass columns count per path; the other columns count each test once, "
        "by its worst result on any path (fail, then known-gap, unsupported-op, "
        "unsupported-dtype).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" + "---:|" * (len(header) - 1),
    ]
    totals = collections.Counter()

    def row(name, counts):
        cells = [name, str(counts["tests"])] + [str(counts[f"{p} pass"]) for p in paths]
        cells += [str(counts[s]) for s in STATUSES[3::-1]]
        return "| " + " | ".join(cells) + " |"

    for op, tests in ops.items():
        counts = collections.Counter(tests=len(tests))
        for test in tests:
            for p in paths:
                counts[f"{p} pass"] += results[test][p][0] == "pass"
            status = worst(results[test][p][0] for p in paths)
            if status != "pass":
                counts[status] += 1
        totals.update(counts)
        lines.append(row(f"[{op}](#{op.lower()})", counts))
    lines.append(row("**all**", totals))
    lines.append("")

    for op, tests in ops.items():
        lines += [f"## {op}", ""]
        passing = [t for t in tests if all(results[t][p][0] == "pass" for p in paths)]
        if passing:
            lines += [f"Pass on every path ({len(passing)}): " +
                      ", ".join(passing) + ".", ""]
        # Group the other tests by their results on the paths.
        groups = collections.OrderedDict()
        for test in tests:
            if test in passing:
                continue
            per_path = [doc_result(*results[test][p]) for p in paths]
            # Paths with the same result (the tool aside) are told together.
            same = collections.OrderedDict()
            for p, (status, reason, _) in zip(paths, per_path):
                same.setdefault((status, without_tool(reason)), []).append((p, reason))
            key = tuple((", ".join(p for p, _ in where),
                         status, where[0][1] if len({r for _, r in where}) == 1 else plain)
                        for (status, plain), where in same.items())
            details = sorted({d for _, _, d in per_path if d})
            name = test + (f" ({'/'.join(details)})" if details else "")
            groups.setdefault(key, []).append(name)
        for key, group in groups.items():
            what = "; ".join(f"{where}: **{status}**" + (f" ({md(reason)})" if reason else "")
                             for where, status, reason in key)
            lines.append(f"- {what} — {len(group)} test{'s' if len(group) > 1 else ''}: " +
                         ", ".join(group))
        if groups:
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def index_main(args, parser, node_dir):
    index = args.index or os.path.join(node_dir, "INDEX.md")
    commit, ops = parse_index(index)
    test_dir = os.path.dirname(os.path.abspath(index))
    if args.ops:
        unknown = [op for op in args.ops if op not in ops]
        if unknown:
            parser.error(f"not ops of {index}: {', '.join(unknown)}")
        if args.write_doc or args.check_doc:
            parser.error("--write-doc and --check-doc need every op of INDEX.md")
        ops = {op: tests for op, tests in ops.items() if op in args.ops}
    if not args.kilnc:
        parser.error("--index/--all need --kilnc (the host path)")
    paths = ["reference", "host"]
    if args.cuda == "on" or (args.cuda == "auto" and find_gpu()):
        paths.append("cuda")
    tools = types.SimpleNamespace(kiln_run=os.path.abspath(args.kiln_run),
                                  kilnc=os.path.abspath(args.kilnc))
    tests = [t for op_tests in ops.values() for t in op_tests]
    missing = sorted(t for t in set(tests) if not os.path.isdir(os.path.join(test_dir, t)))
    start = time.monotonic()
    built = tool_stamps(tools)
    results = collections.defaultdict(dict)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {}
        for test in dict.fromkeys(tests):
            for p in paths:
                if test in missing:
                    continue
                futures[(test, p)] = pool.submit(run_test, tools, p,
                                                 os.path.join(test_dir, test), args.timeout)
        for test in dict.fromkeys(tests):
            for p in paths:
                if test in missing:
                    status, reason = "fail", "runner: no test folder in the corpus"
                else:
                    try:
                        status, reason = futures[(test, p)].result()
                    except Exception as e:  # noqa: BLE001 - one test, not the run
                        status, reason = "fail", f"runner: {type(e).__name__}: {e}"
                    status, reason = apply_known_gap(test, status, reason)
                results[test][p] = (status, reason)
            per_path = " ".join(f"{p}={results[test][p][0]}" for p in paths)
            reasons = "; ".join(sorted({r for _, r in results[test].values() if r}))
            print(f"{per_path:60} {test} {reasons}", flush=True)
    elapsed = time.monotonic() - start

    counts = {p: collections.Counter(results[t][p][0] for t in dict.fromkeys(tests))
              for p in paths}
    print(f"\n{len(set(tests))} tests of {len(ops)} ops in {elapsed:.0f} s:")
    for p in paths:
        print(f"  {p:9}: " + ", ".join(f"{counts[p][s]} {s}" for s in reversed(STATUSES)))
    fails = [(t, p, results[t][p][1]) for t in dict.fromkeys(tests) for p in paths
             if results[t][p][0] == "fail"]
    for test, p, reason in fails:
        print(f"FAIL {p} {test}: {reason}")

    code = 1 if fails else 0
    if tool_stamps(tools) != built:
        print("ERROR: kiln-run or kilnc changed during the run (rebuilt?): the results "
              "may mix two builds; run again")
        return 1
    doc_file = args.write_doc or args.check_doc
    if doc_file:
        doc_paths = paths
        if args.check_doc and os.path.exists(args.check_doc):
            # Check the paths the page has: a page written without a GPU is
            # still checked on a machine with one.
            with open(args.check_doc, encoding="utf-8") as f:
                stated = re.search(r"^Paths: (.*)\.$", f.read(), re.M)
            if stated:
                doc_paths = [p.strip() for p in stated.group(1).split(",")]
                lacking = [p for p in doc_paths if p not in paths]
                if lacking:
                    print(f"cannot check {args.check_doc}: it has {', '.join(lacking)} "
                          "results and that path did not run here")
                    return 1
        doc = render_doc(commit, ops, results, doc_paths)
        if args.write_doc:
            with open(args.write_doc, "w", encoding="utf-8") as f:
                f.write(doc)
            print(f"wrote {args.write_doc}")
        else:
            old = ""
            if os.path.exists(args.check_doc):
                with open(args.check_doc, encoding="utf-8") as f:
                    old = f.read()
            if old != doc:
                diff = list(difflib.unified_diff(old.splitlines(), doc.splitlines(),
                                                 args.check_doc, "generated", lineterm=""))
                print("\n".join(diff[:80] + (["..."] if len(diff) > 80 else [])))
                print(f"STALE: {args.check_doc} differs from this run's results; "
                      f"regenerate it with\n    {DOC_COMMAND}")
                code = 1
            else:
                print(f"{args.check_doc} is up to date")
    return code


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--kiln-run", required=True)
    parser.add_argument("--kilnc", help="compiles each test for --backend host or cuda")
    parser.add_argument("--backend", default="reference",
                        choices=["reference", "host", "cuda"])
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="tests run at once")
    parser.add_argument("--timeout", type=float,
                        help="seconds per tool run (default: 60 with --index, else 300)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--index", metavar="INDEX.md",
                      help="run the tests INDEX.md lists on every path")
    mode.add_argument("--all", action="store_true",
                      help="--index with the corpus's onnx-node/INDEX.md")
    docs = parser.add_mutually_exclusive_group()
    docs.add_argument("--write-doc", metavar="FILE", help="index mode: write the report")
    docs.add_argument("--check-doc", metavar="FILE",
                      help="index mode: fail when the report differs from FILE")
    parser.add_argument("--cuda", choices=["auto", "on", "off"], default="auto",
                        help="index mode: also run on the GPU (auto: if nvidia-smi -L "
                             "finds one)")
    parser.add_argument("--outside-index", action="store_true",
                        help="without --index/--all: only the tests the corpus's INDEX.md "
                             "does not list (the index run covers the others)")
    parser.add_argument("ops", nargs="*",
                        help="test name prefixes (default: the skeleton's ops); with "
                             "--index, INDEX.md ops (default: all)")
    args = parser.parse_args()
    index_mode = bool(args.index or args.all)
    if args.timeout is None:
        args.timeout = 60 if index_mode else 300
    if not index_mode:
        if args.write_doc or args.check_doc:
            parser.error("--write-doc and --check-doc need --index or --all")
        if args.backend != "reference" and not args.kilnc:
            parser.error(f"--backend {args.backend} needs --kilnc")
        args.ops = args.ops or SKELETON_OPS
    elif args.outside_index:
        parser.error("--outside-index is for runs without --index/--all")

    corpus = os.environ.get("KILN_CORPUS_DIR",
                            os.path.join(HERE, "..", "..", "..", "shared", "corpus"))
    node_dir = os.path.join(corpus, "onnx-node")
    if not os.path.isdir(node_dir) or (args.index and not os.path.isfile(args.index)):
        where = args.index if args.index else node_dir
        print(f"SKIP: no conformance corpus at {where} (set KILN_CORPUS_DIR)")
        return SKIP_EXIT_CODE if index_mode else 0

    # Compiled host modules are cached; keep this run's cache to itself
    # unless the caller chose one.
    cache = None
    if (index_mode or args.backend != "reference") and "KILN_CACHE_DIR" not in os.environ:
        cache = tempfile.mkdtemp(prefix="kiln-conformance-cache-")
        os.environ["KILN_CACHE_DIR"] = cache
    try:
        if index_mode:
            return index_main(args, parser, node_dir)
        return legacy_main(args, node_dir)
    finally:
        if cache:
            shutil.rmtree(cache, ignore_errors=True)


def legacy_main(args, node_dir):
    """One backend over the test folders that the ops' prefixes match."""
    tools = types.SimpleNamespace(
        kiln_run=os.path.abspath(args.kiln_run),
        kilnc=os.path.abspath(args.kilnc) if args.kilnc else None)
    tests = sorted(t for t in os.listdir(node_dir) if wanted(t, args.ops))
    if args.outside_index:
        _, index_ops = parse_index(os.path.join(node_dir, "INDEX.md"))
        indexed = {t for op_tests in index_ops.values() for t in op_tests}
        tests = [t for t in tests if t not in indexed]
    counts = collections.Counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_test, tools, args.backend,
                               os.path.join(node_dir, test), args.timeout)
                   for test in tests]
        for test, future in zip(tests, futures):
            status, message = future.result()
            if status == "unsupported-dtype":
                status = "unsupported"
            elif status == "unsupported-op":
                # The skeleton's ops must import.
                status = "fail"
            if test in KNOWN_GAPS:
                if status == "fail":
                    status, message = "known-gap", KNOWN_GAPS[test]
                else:
                    status, message = "fail", "passes now: remove it from KNOWN_GAPS"
            counts[status] += 1
            print(f"{status:12} {test} {message}", flush=True)
    print(f"\n{len(tests)} tests on --backend {args.backend}: {counts['pass']} passed, "
          f"{counts['unsupported']} unsupported element types, "
          f"{counts['known-gap']} known gaps, "
          f"{counts['fail']} failed")
    return 1 if counts["fail"] or not tests else 0


if __name__ == "__main__":
    sys.exit(main())
