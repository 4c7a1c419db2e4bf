#!/usr/bin/env bash
# The README's main command: set up, build, compile the bundled example model to
# a .so, and run it. With a GPU the .so runs on it and is compared with the
# reference interpreter; without one the model runs on the reference
# interpreter (the host backend that executes the generated CUDA on the CPU is
# not built yet) and the script says so.
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
  build/bin/kiln-run "$out/ffn.so" --backend cuda --reference-model "$out/ffn.onnx" \
    --compare-reference --output-dir "$out/outputs"
else
  echo "example: no GPU here; running the model on the reference interpreter"
  build/bin/kiln-run "$out/ffn.onnx" --backend reference --output-dir "$out/outputs"
  python3 test/conformance/compare_ort.py "$out/ffn.onnx" "$out/outputs"
fi
