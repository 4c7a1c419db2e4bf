#!/usr/bin/env bash
# The README's main command: set up, build, compile the bundled example model to
# a .so, and run it: on the GPU if there is one, else on the host backend (the
# generated CUDA kernels compiled for and emulated on the CPU). Either way the
# outputs are compared with the reference interpreter (failing outside the
# fp32 numerics contract) and with onnxruntime.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
out=build/example
mkdir -p "$out"
python3 examples/make_ffn.py "$out/ffn.onnx"
build/bin/kilnc "$out/ffn.onnx" -o "$out/ffn.so" --dump-dir "$out/dump"
echo "example: wrote $out/ffn.so; dynamic symbols:"
nm -D --defined-only "$out/ffn.so" | grep kiln_model_
if nvidia-smi -L >/dev/null 2>&1; then
  backend=cuda
else
  backend=host
  echo "example: no GPU here; running the .so on the host backend"
fi
build/bin/kiln-run "$out/ffn.so" --backend "$backend" --reference-model "$out/ffn.onnx" \
  --compare-reference --output-dir "$out/outputs"
python3 test/conformance/compare_ort.py "$out/ffn.onnx" "$out/outputs"
