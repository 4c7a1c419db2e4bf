#!/usr/bin/env bash
# Installs everything Kiln needs to build and test on Debian bookworm (run as
# root, or with sudo available). Safe to run again: installed packages are
# skipped.
set -euo pipefail

apt_packages=(
  cmake ninja-build ccache g++ git python3 python3-pip python3-dev python3-venv
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libzstd-dev zlib1g-dev libxml2-dev libedit-dev libcurl4-openssl-dev
  libonnx-dev libprotobuf-dev protobuf-compiler libgtest-dev
  libboost-context-dev libtsan2
  clang-22 libclang-rt-22-dev time
)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

if [ ! -x /usr/local/cuda/bin/nvcc ] && [ ! -f /usr/local/cuda/include/nvrtc.h ]; then
  echo "setup: the CUDA 13 toolkit (NVRTC) is expected under /usr/local/cuda" >&2
  exit 1
fi

# Test oracles and tools; numpy and onnx read the conformance data; pybind11
# builds the Python package's native module; nvdisasm reads the kernels' SASS
# without a GPU (scripts/kernel_sass.py).
python3 -m pip install -q --disable-pip-version-check onnx onnxruntime numpy pytest \
  pybind11 nvidia-cuda-nvdisasm

# The Triton serving tests (test/serving): Triton's server as PyPI's
# nvidia-pytriton bundles it (only its tritonserver binary is used, so none
# of its Python dependencies), and tritonclient over HTTP and gRPC, in a
# virtual environment of their own: tritonclient pins a protobuf older than
# the one onnx uses here.
cd "$(dirname "$0")/.."
triton_venv=build/venv-triton
if [ ! -x "$triton_venv/bin/python" ] || \
   ! "$triton_venv/bin/python" -c "import importlib.util, tritonclient.grpc, tritonclient.http
assert importlib.util.find_spec('pytriton')" 2>/dev/null; then
  mkdir -p build
  python3 -m venv "$triton_venv"
  "$triton_venv/bin/python" -m pip install -q --disable-pip-version-check \
    numpy "tritonclient[http,grpc]"
  "$triton_venv/bin/python" -m pip install -q --disable-pip-version-check \
    --no-deps nvidia-pytriton==0.7.0
fi
