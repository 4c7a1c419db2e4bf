#!/usr/bin/env bash
# Packs the tools a lent GPU machine needs into build-gpu/ (about 40 MiB):
# kilnc and kiln-run relinked with LLVM static (that machine has no LLVM or
# MLIR; Debian's MLIR links the 150 MB libLLVM.so), the ONNX and Protobuf
# libraries beside them (found through the rpath $ORIGIN/../lib), and the
# runtime's GPU tests with the artifact template they read, and the lit
# tests' replays (scripts/gpu_lit_cases.py). NVRTC, the driver and cuBLASLt
# come from that machine's CUDA. scripts/gpu_check.sh runs there.
#
# The device tool carries at most 64 MiB with the working tree, which the
# bundle (51 MiB on 2026-12-04) and the tree (17 MiB) together pass: it
# travels xz-compressed (10 MiB) as build-carry/build-gpu.tar.xz, which
# gpu_check.sh unpacks, beside an onnxruntime wheel (below). Carry
# ["build-carry"].
#
# Usage: scripts/gpu_bundle.sh   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
out=build-gpu
llvm_config=/usr/lib/llvm-22/bin/llvm-config
ninja -C build bin/kilnc bin/kiln-run bin/kiln-opt bin/kiln-jit-example \
  bin/kiln-generate-example bin/KilnRuntimeGpuTests
rm -rf "$out/bin" "$out/lib" && mkdir -p "$out/bin" "$out/lib"

# Every archive llvm-config names that the package ships (not Polly's).
archives=$(for f in $($llvm_config --link-static --libfiles all); do
  [ -f "$f" ] && printf '%s ' "$f"; done)
static_llvm="-Wl,--start-group $archives -Wl,--end-group"
for tool in kilnc kiln-run kiln-opt kiln-jit-example kiln-generate-example; do
  # The build's own link line, with the LLVM dylib swapped for the static
  # archives and the output and rpath moved into the bundle. --as-needed
  # drops what nothing calls (z3 and the driver stub ride along with LLVM's
  # and the runtime's interface libraries).
  link=$(ninja -C build -t commands "bin/$tool" | tail -1)
  link=${link//\/usr\/lib\/llvm-22\/lib\/libLLVM.so.1/$static_llvm}
  link=${link//-o bin\/$tool/-o ..\/$out\/bin\/$tool -Wl,--as-needed}
  link=$(sed -E 's/-Wl,-rpath,"[^"]*"/-Wl,-rpath,"\\$ORIGIN\/..\/lib"/' <<<"$link")
  (cd build && eval "$link")
  if ldd "$out/bin/$tool" | grep -q 'libLLVM\|libMLIR'; then
    echo "gpu_bundle: $tool still needs a shared LLVM" >&2
    exit 1
  fi
done
for lib in libonnx.so.1 libonnx_proto.so.1 libprotobuf.so.32; do
  cp -L "/usr/lib/x86_64-linux-gnu/$lib" "$out/lib/"
done
cp build/bin/KilnRuntimeGpuTests "$out/bin/"
cp build/lib/libkiln_model_template.so "$out/lib/"
strip "$out"/bin/* "$out"/lib/*.so*
python3 scripts/gpu_lit_cases.py --out "$out/lit"
du -sh "$out"
mkdir -p build-carry
# The oracle at this machine's version: that machine's onnxruntime was older
# (1.30 against 1.32 on 2026-12-04, which differ on QLinearSoftmax's NaN), so
# the same version travels as a wheel for its Python 3.12 (28 MiB), which
# gpu_check.sh puts first on PYTHONPATH. Without one, its own is used.
ort=$(python3 -c "import onnxruntime; print(onnxruntime.__version__)")
rm -rf build-carry/wheels
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 -d build-carry/wheels "onnxruntime==$ort" ||
  echo "gpu_bundle: no onnxruntime $ort wheel; that machine's own will judge" >&2
tar cJf build-carry/build-gpu.tar.xz --exclude "$out/out*" --exclude "$out/cache" \
  --exclude "$out/bench" "$out"
du -sh build-carry
