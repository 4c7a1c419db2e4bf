"""The systems Kiln is compared with, timed on the same inputs (the arrays
each case makes once, fed to every system): PyTorch eager, eager captured in
a CUDA graph, and torch.compile in its default, reduce-overhead (CUDA
graphs) and max-autotune modes; for a decoding step, the gpt-fast recipe
(transformers' static KV cache, the step under torch.compile with CUDA
graphs and the whole graph in one piece); and onnxruntime, but only where its CUDA
provider runs the model (on the GPU machine there is no onnxruntime-gpu:
the table says the peer is absent rather than timing the CPU). On a GPU
every time comes from CUDA events around one call with the inputs already
on the device; on the CPU (a dry run) from the wall clock, and the table
says so. Each peer is prepared once (compiled, captured) and timed in
rounds interleaved with Kiln's (run.py), and the outputs it returns are
those of its last timed call. Also what the bench scripts share: writing
their table.
"""
import os
import statistics
import time

import numpy as np

TORCH_PEERS = ("eager", "eager-graph", "compile", "reduce-overhead",
               "max-autotune", "gpt-fast")


def summarize(ms):
    """min, median and p99 (nearest rank) of a list of milliseconds."""
    ms = sorted(ms)
    rank = max(int(np.ceil(0.99 * len(ms))), 1)
    return {"min": ms[0], "median": statistics.median(ms), "p99": ms[rank - 1]}


def time_calls(fn, warmup, iters, cuda):
    """Calls `fn` `warmup` times (at least once), then times `iters` calls:
    between CUDA events on a GPU, on the wall clock otherwise. Returns the
    milliseconds and the last call's result."""
    if cuda:
        import torch
    for _ in range(max(warmup, 1)):
        out = fn()
    ms = []
    for _ in range(iters):
        if cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            out = fn()
            end.record()
            end.synchronize()
            ms.append(start.elapsed_time(end))
        else:
            begin = time.perf_counter()
            out = fn()
            ms.append((time.perf_counter() - begin) * 1e3)
    return ms, out


def _dtype(torch, precision):
    return {"fp32": torch.float32, "tf32": torch.float32,
            "fp16": torch.float16, "bf16": torch.bfloat16}[precision]


class Peer:
    """A system prepared to run one case at one precision: `call()` runs it
    once on the case's inputs (already on the device) and returns its
    outputs; `absent` says why it cannot run here, when it cannot."""

    def __init__(self, name, call=None, absent="", cuda=False):
        self.name, self.call, self.absent, self.cuda = name, call, absent, cuda

    def time(self, warmup, iters):
        """(summary of the times, the last timed call's outputs as numpy)."""
        ms, out = time_calls(self.call, warmup, iters, self.cuda)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return summarize(ms), [np.asarray(o.float().cpu().numpy())
                               if hasattr(o, "float") else np.asarray(o)
                               for o in outs]


def torch_peer(case, peer, precision, device):
    """Prepares `peer` on case's module at `precision`. TF32 rows let
    PyTorch's matmuls and convolutions use TF32 too, as Kiln's do."""
    import copy
    import torch
    dtype = _dtype(torch, precision)
    cuda = device == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        torch.backends.cudnn.allow_tf32 = precision == "tf32"
    if peer == "eager-graph" and not cuda:
        return Peer(peer, absent="CUDA graphs need a GPU")
    if peer == "gpt-fast":
        return gpt_fast_peer(case, precision, device)
    module = copy.deepcopy(case.module).to(device=device, dtype=dtype)
    args = []
    for value in case.inputs.values():
        tensor = torch.from_numpy(value).to(device)
        args.append(tensor.to(dtype) if tensor.is_floating_point() else tensor)
    modes = {"compile": None, "reduce-overhead": "reduce-overhead",
             "max-autotune": "max-autotune"}
    if peer in modes:
        module = torch.compile(module, mode=modes[peer])

    def call():
        with torch.no_grad():
            return module(*args)

    if peer == "eager-graph":
        # Warm up on a side stream, then capture one call; a replay writes
        # the captured outputs' storage.
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                call()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = call()

        def replay():
            graph.replay()
            return captured

        # The graph reads the module's weights and the inputs at the
        # addresses they had at capture, and holds no reference to them:
        # once this function returned nothing did, and their memory went
        # to the next peer's tensors (its outputs were 1.4 off on
        # 2026-12-04). The replay keeps them.
        replay.keep_alive = (module, args)
        return Peer(peer, replay, cuda=True)
    return Peer(peer, call, cuda=cuda)


def gpt_fast_peer(case, precision, device):
    """The decoding step as gpt-fast runs it: the model's own forward over
    transformers' StaticCache (preallocated for the case's whole length,
    filled with the case's past keys and values), compiled with
    mode="reduce-overhead" (CUDA graphs) and fullgraph=True. Each call
    writes the new token's keys and values at the same position, so every
    call does the same work; its output is the logits (the presents stay in
    the cache)."""
    import copy
    import torch
    import transformers
    if case.family != "llama-decode":
        return Peer("gpt-fast", absent="a decoding step of a LLaMA only")
    dtype = _dtype(torch, precision)
    model = copy.deepcopy(case.module.model).to(device=device, dtype=dtype)
    config = model.config
    total = case.past + case.seq
    cache = transformers.StaticCache(config=config, max_cache_len=total)
    past = torch.arange(case.past, device=device)
    with torch.no_grad():
        for layer in range(config.num_hidden_layers):
            k, v = (torch.from_numpy(case.inputs[f"past.{layer}.{kv}"]).to(
                device, dtype) for kv in ("key", "value"))
            cache.update(k, v, layer, {"cache_position": past})
    ids = torch.from_numpy(case.inputs["input_ids"]).to(device)
    mask = torch.from_numpy(case.inputs["attention_mask"]).to(device)
    position = torch.arange(case.past, total, device=device)

    # Newer transformers count the cached tokens in each layer (and write
    # there, whatever cache_position says): set back to the past's length,
    # inside the compiled step, so that every call writes the same position.
    counters = [layer.cumulative_length for layer in getattr(cache, "layers", [])
                if hasattr(layer, "cumulative_length")]

    def step():
        with torch.no_grad():
            for counter in counters:
                counter.fill_(case.past)
            return model(input_ids=ids, attention_mask=mask,
                         past_key_values=cache, cache_position=position,
                         use_cache=True).logits

    compiled = torch.compile(step, mode="reduce-overhead", fullgraph=True)

    def call():
        out = compiled()
        # CUDA graph outputs are overwritten by the next replay.
        return out.clone() if device == "cuda" else out

    # Compiled here, so that a failure of the recipe on this machine's
    # PyTorch and transformers is reported as the peer's absence (with its
    # reason) rather than ending the run.
    try:
        call()
    except Exception as error:  # noqa: BLE001 - any failure of the recipe
        first = (str(error).strip().splitlines() or [type(error).__name__])[-1]
        return Peer("gpt-fast", absent=f"the recipe failed here: {first[:160]}")
    return Peer("gpt-fast", call, cuda=device == "cuda")


def ort_peer(model_path, inputs, device):
    """Prepares onnxruntime on the fp32 export. On a GPU it is a peer only
    when its CUDA provider is the one running the model."""
    import onnxruntime as ort
    providers = (["CUDAExecutionProvider"] if device == "cuda" else []) + [
        "CPUExecutionProvider"]
    available = ort.get_available_providers()
    if device == "cuda" and "CUDAExecutionProvider" not in available:
        return Peer("ort", absent="onnxruntime's CUDA provider is not "
                    "installed (no onnxruntime-gpu): not timed on the CPU")
    session = ort.InferenceSession(
        model_path, providers=[p for p in providers if p in available])
    if device == "cuda" and session.get_providers()[0] != "CUDAExecutionProvider":
        return Peer("ort", absent="onnxruntime fell back to "
                    f"{session.get_providers()[0]}: not timed")
    return Peer("ort", lambda: session.run(None, inputs))


def ort_reference(model_path, inputs):
    """The fp32 reference: onnxruntime on the CPU, on the fp32 export."""
    import onnxruntime as ort
    session = ort.InferenceSession(model_path,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def markdown_row(cells):
    """One row of a markdown table: `cells`, as text, between bars."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def add_row(rows, *cells):
    """Appends the markdown row of `cells` to `rows` and prints it at once,
    so that a long run shows its progress."""
    rows.append(markdown_row(cells))
    print(rows[-1], flush=True)


def publish(table, out):
    """Prints the markdown `table` and, when `out` names a file, writes it
    there too (making its folder)."""
    print(table)
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            f.write(table)


def agreement(ours, theirs):
    """The largest difference relative to the reference's largest magnitude,
    over the outputs both have."""
    worst = 0.0
    for a, b in zip(ours, theirs):
        a = np.asarray(a, np.float64)
        b = np.asarray(b, np.float64)
        if a.shape != b.shape:
            return float("inf")
        scale = max(float(np.max(np.abs(b))), 1e-30) if b.size else 1.0
        if a.size:
            worst = max(worst, float(np.max(np.abs(a - b))) / scale)
    return worst
