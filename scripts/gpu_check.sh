#!/usr/bin/env bash
# The GPU checks, in one call on a lent GPU machine (DESIGN.md, "Performance
# method"; the device tool's README). Prepare here, where LLVM is:
#   scripts/build.sh && scripts/gpu_bundle.sh
# then, there, from the repository root with build-carry/ carried (the
# bundle, compressed; unpacked here into build-gpu/, replacing its tools):
#   scripts/gpu_check.sh [OUTDIR] [SECTIONS]
# SECTIONS (default all but bench-norm, bench-llama-int4, bench-gpt2,
# bench-untuned and bench-variants): gtest, lit, gemm, packed, qdq,
# attention, profile, sanitizer, models, decode, bench, bench-profile,
# bench-norm, bench-llama, bench-llama-int4, bench-gpt2, bench-untuned,
# bench-variants. KILN_SANITIZE:
# comma-separated patterns of the sanitizer runs to do (default all);
# KILN_BENCH_PRECISIONS: the bench's (default fp16,bf16);
# KILN_BENCH_QUANTIZE: its quantized builds (default qdq-int8,qdq-fp8);
# KILN_BENCH_PEERS: the bench's PyTorch peers (default eager; bench/peers.py
# names the torch.compile modes) and KILN_BENCH_TIMEOUT its seconds (240);
# KILN_ATTENTION_PRECISIONS: the attention bench's (default fp16,tf32: bf16
# has timed within 1% of fp16 on every card so far); KILN_ATTENTION_ARGS:
# more of bench/attention.py's options (--shapes, --decode-shapes=,
# --configs).
# Logs go to build-gpu/out (KILN_GPU_OUT names another, so that two calls
# can run side by side), and summary.txt and logs.tgz (all of them) to
# OUTDIR (default $OUT, where the device tool fetches from); what passed is
# the last thing printed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export ROOT
# The carried pack replaces what an earlier call on a warm machine left.
if [ -s build-carry/build-gpu.tar.xz ]; then
  rm -rf build-gpu/bin build-gpu/lib build-gpu/lit
  tar xJf build-carry/build-gpu.tar.xz || exit 1
fi
# The development machine's onnxruntime, where gpu_bundle.sh carried it:
# the tests' oracle at the version CI runs.
ort_source="the machine's own"
if ls build-carry/wheels/*.whl >/dev/null 2>&1; then
  rm -rf build-gpu/site
  if python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --target build-gpu/site build-carry/wheels/*.whl >/dev/null 2>&1 &&
    PYTHONPATH="$ROOT/build-gpu/site" python3 -c "import onnxruntime" >/dev/null 2>&1; then
    export PYTHONPATH="$ROOT/build-gpu/site${PYTHONPATH:+:$PYTHONPATH}"
    ort_source="carried"
  else
    ort_source="the machine's own (the carried wheel did not install or import)"
  fi
fi
dest=${1:-${OUT:-}}
out=${KILN_GPU_OUT:-build-gpu/out}
sections=${2:-gtest,lit,gemm,packed,qdq,attention,profile,sanitizer,models,decode,bench,bench-profile,bench-llama}
rm -rf "$out" && mkdir -p "$out/lit"
summary="$out/summary.txt"
: >"$summary"
# Each note also lands in OUTDIR at once: a call cut off at its time limit
# still brings back what was done.
note() {
  echo "$*" | tee -a "$summary"
  [ -z "$dest" ] || { mkdir -p "$dest" && cp "$summary" "$dest/"; }
}
want() { [[ ",$sections," == *",$1,"* ]]; }
# The Q/DQ GEMM's forms a kind of product has, and the kilnc flags that
# make every run of a build take one (each flag's default would move runs
# of many rows to another form).
qdq_forms() { if [ "$1" = fp8 ]; then echo wgmma mma cublaslt; else echo wgmma mma; fi; }
qdq_flags() {
  case $1 in
  wgmma) echo "--qdq-wgmma-rows=1 --qdq-cublaslt-rows=-1" ;;
  mma) echo "--qdq-wgmma-rows=-1 --qdq-cublaslt-rows=-1" ;;
  cublaslt) echo "--qdq-wgmma-rows=-1 --qdq-cublaslt-rows=1" ;;
  esac
}

# The bundle's tools; NVRTC and cuBLASLt from that machine's CUDA.
export PATH="$ROOT/build-gpu/bin:$PATH:/usr/local/cuda/bin"
libdirs=""
for lib in libnvrtc.so.13 libcublasLt.so.13; do
  found=""
  for where in /usr/local/cuda/ /usr/local/ /usr/lib/ /opt/; do
    [ -z "$found" ] && found=$(find "$where" -name "$lib" -print -quit 2>/dev/null)
  done
  [ -n "$found" ] && libdirs="$libdirs$(dirname "$found"):"
done
export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:-}"
export KILN_CACHE_DIR="$ROOT/build-gpu/cache"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
  --format=csv,noheader | tee "$out/gpu.txt"
note "libraries: $libdirs"
note "onnxruntime $(python3 -c 'import onnxruntime; print(onnxruntime.__version__)' 2>&1), $ort_source"
gpu=h100
grep -q H200 "$out/gpu.txt" && gpu=h200

if want gtest; then
  KILN_MODEL_TEMPLATE="$ROOT/build-gpu/lib/libkiln_model_template.so" \
    KilnRuntimeGpuTests >"$out/gtest.log" 2>&1
  note "gtest KilnRuntimeGpuTests: exit $? ($(grep -c '^\[       OK' "$out/gtest.log") ok, $(grep -c '^\[  FAILED' "$out/gtest.log") failed lines, $(grep -c '^\[  SKIPPED' "$out/gtest.log") skipped)"
fi

if want lit; then
  # Each lit test's own lines on the CUDA backend, twelve at a time.
  run_case() {
    timeout 150 bash "$1/run.sh" >"$1/log" 2>&1
    echo "$? $(basename "$1")"
  }
  export -f run_case
  ls -d build-gpu/lit/*/ | sed 's:/$::' |
    xargs -P 12 -I{} bash -c 'run_case {}' | sort -k2 >"$out/lit.txt"
  for f in build-gpu/lit/*/log; do
    cp "$f" "$out/lit/$(basename "$(dirname "$f")").log"
  done
  note "lit on cuda: $(grep -c '^0 ' "$out/lit.txt") of $(wc -l <"$out/lit.txt") tests passed"
  grep -v '^0 ' "$out/lit.txt" | sed 's/^/  FAILED exit /' | tee -a "$summary"
fi

if want gemm; then
  # Every layout and split of Kiln's GEMM family, both forms (tensor-core
  # tiles and decoding's GEMV), at every tail, against the reference
  # interpreter on the GPU (issue 38): what must pass before --gemm timed
  # (and KILN_PDL=1) become defaults.
  timeout 300 python3 test/host/kernel_families.py --backend cuda --filter gemm/ \
    --kilnc build-gpu/bin/kilnc --kiln-run build-gpu/bin/kiln-run >"$out/gemm.log" 2>&1
  note "kernel_families --backend cuda --filter gemm/: exit $?"
  grep -E "^(FAIL|  gemm)|passed" "$out/gemm.log" | head -20 >>"$summary"
fi
if want packed; then
  # The packed GEMV's bandwidth at one row (issue 39: at least 80% of HBM):
  # four products by 8192 x 8192 weights (int4 with zero points, int8,
  # int2, int4 with float zero points; 144 MB, more than L2 holds), each
  # run reading them once. The device median over 200 runs, and the bytes
  # the run must read (the packed weights, scales and zero points).
  mkdir -p build-gpu/packed
  python3 test/Target/CUDA/Inputs/packed_model.py build-gpu/packed/model.onnx \
    8192 --static --n 8192 >"$out/packed.log" 2>&1
  kilnc build-gpu/packed/model.onnx -q -o build-gpu/packed/model.so >>"$out/packed.log" 2>&1
  timeout 120 kiln-run build-gpu/packed/model.so --backend cuda --bench \
    --warmup 20 --iters 200 >>"$out/packed.log" 2>&1
  note "packed GEMV bench: exit $?"
  bytes=$(python3 -c "import onnx, sys
m = onnx.load(sys.argv[1])
print(sum(t.raw_data.__len__() for t in m.graph.initializer))" build-gpu/packed/model.onnx)
  median=$(grep -oE 'bench: device: .*median [0-9.]+ ms' "$out/packed.log" |
    grep -oE 'median [0-9.]+' | cut -d' ' -f2)
  [ -n "$median" ] && note "packed GEMV, 1 row: $bytes bytes in $median ms: $(python3 -c "print(round($bytes / ($median * 1e-3) / 1e9, 1))") GB/s"
fi
if want qdq; then
  # The Q/DQ GEMMs' forms (issue 39), float8 and int8, at fp16 by
  # BERT-base's FFN shapes (K 3072 x N 768, K 768 x N 3072; two products
  # each for float8, three for int8): Hopper's wgmma (wgmma:
  # --qdq-wgmma-rows=1) against mma.sync (mma), and for float8 cuBLASLt's
  # FP8 kernels with the finish kernel after them (cublaslt:
  # --qdq-cublaslt-rows=1), each first checked against the reference at 128
  # rows, then timed at 4096 (b32 s128): the device median over 200 runs,
  # and TFLOP/s over the products.
  mkdir -p build-gpu/qdq
  : >"$out/qdq.log"
  # The models, then their 16 builds eight at a time (one after another,
  # they took most of the section's 100 s on 2026-12-04): --bench times
  # static shapes, so one build at each row count.
  for kind in fp8 int8; do
    script=fp8_qdq_matmul_model.py
    [ "$kind" = int8 ] && script=qdq_matmul_model.py
    for shape in "3072 768" "768 3072"; do
      set -- $shape
      model=build-gpu/qdq/${kind}_k$1_n$2.onnx
      python3 test/Target/CUDA/Inputs/$script "$model" "$1" --n "$2" >>"$out/qdq.log" 2>&1
      for form in $(qdq_forms $kind); do
        for batch in 1 32; do
          echo "$model $batch $(qdq_flags $form) build-gpu/qdq/${kind}_k$1_n$2_${form}_b$batch.so"
        done
      done
    done
  done >build-gpu/qdq/builds.txt
  xargs -P 8 -L 1 sh -c 'kilnc "$0" --dim batch=$1,seq=128 --precision fp16 \
    $2 $3 -q -o "$4"' <build-gpu/qdq/builds.txt >>"$out/qdq.log" 2>&1
  for kind in fp8 int8; do
    products=2
    [ "$kind" = int8 ] && products=3
    for shape in "3072 768" "768 3072"; do
      set -- $shape
      model=build-gpu/qdq/${kind}_k$1_n$2.onnx
      for form in $(qdq_forms $kind); do
        timeout 300 kiln-run build-gpu/qdq/${kind}_k$1_n$2_${form}_b1.so --backend cuda \
          --reference-model "$model" --dim batch=1,seq=128 --compare-reference --rel-l2 1e-2 \
          >>"$out/qdq.log" 2>&1
        note "$kind K $1 N $2 $form at 128 rows against the reference: exit $?"
        timeout 120 kiln-run build-gpu/qdq/${kind}_k$1_n$2_${form}_b32.so --backend cuda --bench \
          --warmup 20 --iters 200 >"$out/qdq-bench.log" 2>&1
        cat "$out/qdq-bench.log" >>"$out/qdq.log"
        median=$(grep -oE 'bench: device: .*median [0-9.]+ ms' "$out/qdq-bench.log" |
          grep -oE 'median [0-9.]+' | cut -d' ' -f2)
        [ -n "$median" ] && note "$kind K $1 N $2 $form, 4096 rows: $median ms for the step (its quantizing kernels and $products products): $(python3 -c "print(round($products * 2 * 4096 * $1 * $2 / ($median * 1e-3) / 1e12, 1))") TFLOP/s"
      done
    done
  done
fi
if want attention; then
  # shellcheck disable=SC2086
  timeout 300 python3 bench/attention.py --tools build-gpu/bin --out "$out/attention.md" \
    --precisions "${KILN_ATTENTION_PRECISIONS:-fp16,tf32}" \
    ${KILN_ATTENTION_ARGS:-} >"$out/attention.log" 2>&1
  note "attention bench: exit $?"
  awk '/^\|/ && !seen[$0]++' "$out/attention.log" >>"$summary"
fi

if want profile; then
  # Nsight Compute on the largest attention (clocks left alone), the full
  # set: where its time goes (docs/performance.md), the warp stalls and, per
  # SASS instruction, the stall samples (ncu-attention-sass.csv).
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  mkdir -p build-gpu/attention
  att=build-gpu/attention/attention_8x16x2048x128.mlir
  [ -s "$att" ] || python3 -c "import sys; sys.path.insert(0, 'bench')
import attention; open(sys.argv[1], 'w').write(attention.attention_mlir(8, 16, 2048, 128))" "$att"
  timeout 200 "$ncu" --clock-control none --kernel-name kiln_attention_0 \
    --launch-count 1 --set full -f -o build-gpu/ncu-attention \
    kiln-run "$att" --backend cuda --precision fp16 --keep-io-types=false \
    --cuda-graphs=false >"$out/ncu-attention.log" 2>&1
  note "ncu attention 8x16x2048x128 fp16: exit $?"
  "$ncu" -i build-gpu/ncu-attention.ncu-rep --page details >"$out/ncu-attention.txt" 2>&1
  "$ncu" -i build-gpu/ncu-attention.ncu-rep --page source --print-source sass \
    --csv >"$out/ncu-attention-sass.csv" 2>&1
  grep -E "^ +(Duration|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Cache Throughput|Achieved Occupancy|Registers Per Thread|Issue Slots Busy|Executed Ipc Active|Warp Cycles Per Issued Instruction|No Eligible|Stall)" \
    "$out/ncu-attention.txt" | head -20 >>"$summary"
fi

if want sanitizer; then
  # compute-sanitizer over one run of each kernel family, the outputs still
  # compared with the reference.
  att=build-gpu/lit/test__Target__CUDA__attention-tensor-cores.test/t
  views=build-gpu/lit/test__Target__CUDA__attention-head-views.test/t
  tf32=build-gpu/lit/test__Target__CUDA__attention-tf32.test/t
  wg=build-gpu/lit/test__Target__CUDA__attention-wgmma.test/t
  pq=build-gpu/lit/test__Target__CUDA__packed-gemv.test/t
  pn=build-gpu/lit/test__Target__CUDA__packed-gemm-norm.test/t
  gk=build-gpu/lit/test__Target__CUDA__gemm-kernels.test/t
  gl=build-gpu/lit/test__Target__CUDA__gemm-layer-norm.test/t
  sr=build-gpu/lit/test__Target__CUDA__split-reduction.test/t
  qf=build-gpu/lit/test__Target__CUDA__fp8-wgmma-gemm.test/t
  qi=build-gpu/lit/test__Target__CUDA__int8-wgmma-gemm.test/t
  qc=build-gpu/lit/test__Target__CUDA__fp8-cublaslt-gemm.test/t
  pc=build-gpu/lit/test__Target__CUDA__packed-gemv-cache-update.test/t
  qn=build-gpu/lit/test__Target__CUDA__qdq-gemm-tail-norm.test/t
  hub=test/models/hub/llama-genai-int4-fp16/model.onnx
  hubdims=batch_size=1:8,sequence_length=1:64,past_sequence_length=64,total_sequence_length=1:64,kv_cache_dim=16
  # An export with its committed inputs and pinned dims.
  export_args() {
    local d=test/models/fresh/$1
    printf '%s/model.onnx' "$d"
    [ -s "$d/dims" ] && printf ' --dim %s' "$(cat "$d/dims")"
    for f in "$d"/inputs/*.npy; do
      printf ' --input %s=%s' "$(basename "$f" .npy)" "$f"
    done
  }
  runs=(
    "tc-attention-fp16|$att/mask.mlir --precision fp16 --compare-reference --rel-l2 1e-2 --seed 3"
    "tc-attention-decode|$att/decode.mlir --precision fp16 --compare-reference --rel-l2 1e-2 --seed 4"
    "tc-attention-bf16-tails|$att/symbolic.mlir --precision bf16 --compare-reference --rel-l2 1e-2 --seed 5 --run-dim s=67 --run-dim t=129"
    "tc-attention-cp-async|$att/mask.mlir --precision fp16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 3"
    "tc-attention-cp-async-tails|$att/symbolic.mlir --precision bf16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 5 --run-dim s=67 --run-dim t=129"
    "tc-attention-two-mtiles|$att/mask.mlir --precision fp16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 3"
    "tc-attention-two-mtiles-tails|$att/symbolic.mlir --precision bf16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 5 --run-dim s=67 --run-dim t=129"
    "tc-attention-two-mtiles-wide|$att/wide.mlir --precision fp16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 8"
    "tc-attention-two-mtiles-one-stage|$att/mask.mlir --precision fp16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 3"
    "tc-attention-two-mtiles-one-stage-tails|$att/symbolic.mlir --precision bf16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 5 --run-dim s=67 --run-dim t=129"
    "tc-attention-two-mtiles-one-stage-wide|$att/wide.mlir --precision fp16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 8"
    "tc-attention-two-barriers-tails|$att/symbolic.mlir --precision bf16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 5 --run-dim s=67 --run-dim t=129"
    "tc-attention-two-mtiles-two-barriers-wide|$att/wide.mlir --precision fp16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 8"
    "tc-attention-8-warps|$att/decode.mlir --precision fp16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 4"
    "tc-attention-head-views-packed|$views/packed.mlir --precision fp16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 3"
    "tc-attention-head-views-split|$views/split.mlir --precision bf16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 7 --run-dim b=3 --run-dim s=129"
    "tc-attention-head-views-decode|$views/split.mlir --precision fp16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 7 --run-dim b=2 --run-dim s=1"
    "tc-attention-wgmma-tails|$wg/tails.mlir --precision fp16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 3"
    "tc-attention-wgmma-keys64-tails|$wg/tails.mlir --precision bf16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 3"
    "tc-attention-wgmma-gqa|$wg/gqa.mlir --precision bf16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 4"
    "tc-attention-wgmma-symbolic|$wg/symbolic.mlir --precision fp16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 5 --run-dim s=129 --run-dim t=257"
    "tc-attention-wgmma-elements|$wg/rope.mlir --precision fp16 --keep-io-types=false --compare-reference --rel-l2 1e-2 --seed 6"
    "tc-attention-tf32|$tf32/mask.mlir --allow-tf32 --compare-reference --rel-l2 1e-2 --seed 3"
    "tc-attention-tf32-tails|$tf32/symbolic.mlir --allow-tf32 --compare-reference --rel-l2 1e-2 --seed 5 --run-dim s=67 --run-dim t=129"
    "tc-attention-tf32-split|$tf32/split.mlir --allow-tf32 --compare-reference --rel-l2 1e-2 --seed 3"
    "bert-fp32|$(export_args bert-torchscript) --compare-reference"
    "bert-fp16|$(export_args bert-dynamo) --precision fp16 --compare-reference --rel-l2 1e-2"
    "gpt2-kv|$(export_args gpt2-dynamo-kv) --compare-reference"
    "gpt2-kv-in-place-generate|test/models/fresh/gpt2-dynamo-kv/model.onnx --dim batch=1,sequence=1:8,past_sequence=0:7,s53=past_sequence+sequence --kv-cache-in-place --generate 4 --prompt 1,2,3,4"
    "llama-bf16|$(export_args llama-torchscript) --precision bf16 --compare-reference --rel-l2 3e-2"
    "vit-fp32|$(export_args vit-torchscript) --compare-reference"
    "packed-gemv-rows1|$pq/packed.so --reference-model $pq/packed.onnx --dim batch=1:4,seq=1:8 --run-dim batch=1,seq=1 --compare-reference --rel-l2 1e-3 --seed 1"
    "packed-gemv-rows8|$pq/packed.so --reference-model $pq/packed.onnx --dim batch=1:4,seq=1:8 --run-dim batch=2,seq=4 --compare-reference --rel-l2 1e-3 --seed 3"
    "split-reduction|$sr/split.so --reference-model $sr/split.onnxtxt --compare-reference --seed 3"
    "qdq-wgmma-fp8|$qf/all.so --reference-model $qf/fp8.onnx --dim batch=1:4,seq=1:130 --run-dim batch=1,seq=129 --compare-reference --rel-l2 1e-3 --seed 4"
    "qdq-wgmma-int8|$qi/zero.so --reference-model $qi/zero.onnx --dim batch=1:4,seq=1:130 --run-dim batch=1,seq=129 --compare-reference --seed 7"
    "qdq-cublaslt-fp8|$qc/all.so --reference-model $qc/fp8.onnx --dim batch=1:4,seq=1:130 --run-dim batch=1,seq=129 --compare-reference --rel-l2 1e-3 --seed 3"
    "qdq-rival-fp8|$qc/rival.so --gemm wgmma_128x128x128_s4_split2 --reference-model $qc/fp8.onnx --dim batch=1:4,seq=1:130 --run-dim batch=1,seq=129 --compare-reference --rel-l2 1e-3 --seed 13"
    "packed-unpacked-rows9|$pq/packed.so --reference-model $pq/packed.onnx --dim batch=1:4,seq=1:8 --run-dim batch=3,seq=3 --compare-reference --rel-l2 1e-3 --seed 4"
    "packed-split-twice|$pq/twice.so --reference-model $pq/twice.onnx --dim batch=1:4,seq=1:64 --run-dim batch=1,seq=7 --compare-reference --rel-l2 1e-3 --seed 12"
    "packed-norm-gemv|$pn/norm.so --reference-model $pn/norm.onnx --dim batch=1:4,seq=1:64 --run-dim batch=1,seq=1 --compare-reference --rel-l2 1e-3 --seed 1"
    "packed-norm-gemm|$pn/norm.so --reference-model $pn/norm.onnx --dim batch=1:4,seq=1:64 --run-dim batch=3,seq=11 --compare-reference --rel-l2 1e-3 --seed 5"
    "packed-norm-four-tiles|$pn/wide.so --reference-model $pn/wide.onnx --dim batch=1:4,seq=1:16 --run-dim batch=1,seq=5 --compare-reference --rel-l2 1e-3 --seed 9"
    "family-split|$gk/decode.so --gemm mma_16x64x32_w1x4_split4 --reference-model $gk/decode.onnxtxt --compare-reference --rtol 2e-3 --atol 5e-4"
    "family-norm-split|$gl/norm.so --gemm mma_16x64x32_w1x4_split4 --reference-model $gl/norm.onnxtxt --compare-reference --rtol 5e-3 --atol 4e-3"
    "family-norm-gemv|$gl/norm.so --gemm gemv_8x128_w4_split1 --reference-model $gl/norm.onnxtxt --compare-reference --rtol 5e-3 --atol 4e-3"
    "packed-cache-update-gemv|$pc/decoder.so --reference-model $hub --dim $hubdims --run-dim batch_size=1,sequence_length=7,total_sequence_length=20 --compare-reference --rel-l2 1e-2 --seed 2"
    "qdq-tail-norm|$qn/floats.so --reference-model $qn/floats.mlir --compare-reference --seed 4"
    "packed-cache-update-mma|$pc/decoder.so --reference-model $hub --dim $hubdims --run-dim batch_size=2,sequence_length=12,total_sequence_length=20 --compare-reference --rel-l2 1e-2 --seed 3"
  )
  racy=" tc-attention-fp16 tc-attention-decode tc-attention-bf16-tails tc-attention-cp-async tc-attention-cp-async-tails tc-attention-two-mtiles tc-attention-two-mtiles-tails tc-attention-two-mtiles-wide tc-attention-two-mtiles-one-stage tc-attention-two-mtiles-one-stage-tails tc-attention-two-mtiles-one-stage-wide tc-attention-two-barriers-tails tc-attention-two-mtiles-two-barriers-wide tc-attention-8-warps tc-attention-head-views-packed tc-attention-head-views-split tc-attention-head-views-decode tc-attention-wgmma-tails tc-attention-wgmma-keys64-tails tc-attention-wgmma-gqa tc-attention-wgmma-symbolic tc-attention-wgmma-elements tc-attention-tf32 tc-attention-tf32-tails tc-attention-tf32-split split-reduction qdq-wgmma-fp8 qdq-wgmma-int8 qdq-cublaslt-fp8 qdq-rival-fp8 bert-fp32 llama-bf16 packed-split-twice packed-norm-gemv packed-norm-gemm packed-norm-four-tiles family-split family-norm-split family-norm-gemv packed-cache-update-gemv packed-cache-update-mma qdq-tail-norm "
  deadline=$((SECONDS + 180))
  for tool in memcheck racecheck; do
    for r in "${runs[@]}"; do
      name=${r%%|*}
      args=${r#*|}
      [ "$tool" = racecheck ] && [[ "$racy" != *" $name "* ]] && continue
      # KILN_SANITIZE=PATTERN,...: only the runs whose names match one.
      wanted=0
      IFS=, read -ra patterns <<<"${KILN_SANITIZE:-*}"
      for pattern in "${patterns[@]}"; do
        # shellcheck disable=SC2053
        [[ $name == $pattern ]] && wanted=1
      done
      ((wanted)) || continue
      if ((SECONDS > deadline)); then
        note "compute-sanitizer $tool $name: not run (section out of time)"
        continue
      fi
      # The emitter's defaults unless the name says (two buffers each for
      # keys and values with two m-tiles; "one-stage": one each).
      config=()
      [[ $name == *8-warps ]] && config+=(--attention-warps=8)
      [[ $name == *two-mtiles* ]] && config+=(--attention-rows-per-warp=32)
      [[ $name == *one-stage* ]] && config+=(--attention-kv-stages=1)
      [[ $name == *two-barriers* ]] && config+=(--attention-barriers=2)
      [[ $name == *wgmma* ]] && config+=(--attention-wgmma)
      [[ $name == *keys64* ]] && config+=(--attention-tile-keys=64)
      # shellcheck disable=SC2086
      timeout 60 compute-sanitizer --tool "$tool" --error-exitcode 9 \
        kiln-run $args "${config[@]}" --backend cuda --cuda-graphs=false \
        >"$out/sanitizer-$tool-$name.log" 2>&1
      status=$?
      note "compute-sanitizer $tool $name: exit $status, $(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer-$tool-$name.log" || echo 'no summary')"
    done
  done
fi

if want models; then
  # Issue 13's must-shows on the GPU: one artifact at four shapes against
  # onnxruntime, and greedy decoding (fed back and in place) token for token.
  for check in check_symbolic_artifact check_generate; do
    timeout 120 python3 "test/models/$check.py" --kilnc build-gpu/bin/kilnc \
      --kiln-run build-gpu/bin/kiln-run --backend cuda >"$out/$check.log" 2>&1
    note "$check --backend cuda: exit $?"
    grep -E "^(ok|FAIL)|greedy" "$out/$check.log" | head -20 >>"$summary"
  done
fi

if want decode; then
  # A decoding loop's step with CUDA graphs off, captured at each length,
  # and updated in place, and with the model choosing its next token
  # (bench/decode.py).
  timeout 150 python3 bench/decode.py --tools build-gpu/bin --next-token 8 \
    --work build-gpu/decode --out "$out/decode.md" >"$out/decode.log" 2>&1
  note "bench/decode.py: exit $?"
  cat "$out/decode.md" >>"$summary" 2>/dev/null
fi

if want bench; then
  # Beside the 16-bit rows, BERT-base's int8 and fp8 Q/DQ builds
  # (onnxruntime's quantize_static; issue 39), Kiln alone.
  timeout "${KILN_BENCH_TIMEOUT:-240}" python3 bench/run.py --tools build-gpu/bin \
    --cases bert-base-b1-s128,bert-base-b32-s128 --peers "${KILN_BENCH_PEERS:-eager}" \
    --precisions "${KILN_BENCH_PRECISIONS:-fp16,bf16}" \
    --quantize "${KILN_BENCH_QUANTIZE:-qdq-int8,qdq-fp8}" \
    --warmup 10 --iters 100 --roofline-gpu "$gpu" --work build-gpu/bench --out "$out/bench.md" \
    >"$out/bench.log" 2>&1
  note "bench/run.py BERT-base: exit $?"
  cat "$out/bench.md" >>"$summary" 2>/dev/null
fi

if want bench-profile; then
  # Where a bench build's time goes (after a bench section in the same
  # call, which leaves the builds under build-gpu/bench): one run with CUDA
  # graphs off under Nsight Compute, each kernel's duration only, summed by
  # name (bench/kernel_times.py). cuBLASLt's heuristic choice
  # (KILN_TUNE_MATMULS=0): the timing of candidates would be profiled too.
  # KILN_PROFILE_BUILDS: the .so files (default BERT-base b32's fp16 and
  # int8 Q/DQ builds, the second 6.7x slower than the first on 2026-12-04).
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  [ -n "$ncu" ] || note "bench-profile: no ncu on this machine"
  b32=build-gpu/bench/bert-base-b32-s128
  for so in ${KILN_PROFILE_BUILDS:-$b32/model-fp16.so $b32/model-fp16-qdq-int8.so}; do
    name=$(basename "$(dirname "$so")")-$(basename "$so" .so)
    if [ -z "$ncu" ] || [ ! -s "$so" ]; then
      note "ncu kernel times of $name: not run (${ncu:+no build at $so}${ncu:-no ncu})"
      continue
    fi
    inputs=()
    for f in "$(dirname "$so")"/inputs/*.npy; do
      inputs+=(--input "$(basename "$f" .npy)=$f")
    done
    KILN_TUNE_MATMULS=0 timeout 240 "$ncu" --clock-control none \
      --metrics gpu__time_duration.sum --csv --print-units base \
      kiln-run "$so" --backend cuda --cuda-graphs=false "${inputs[@]}" \
      >"$out/profile-$name.csv" 2>"$out/profile-$name.log"
    note "ncu kernel times of $name: exit $?"
    python3 bench/kernel_times.py "$out/profile-$name.csv" --top 15 >>"$summary" 2>&1
  done
fi

if want bench-norm; then
  # BERT-base fp16 with a LayerNorm after each of its GEMMs as the GEMM's
  # epilogue (the default since 2026-12-01) and as a row kernel of its own
  # (kilnc --gemm-norm-epilogue=false), Kiln alone, one after the other: b32
  # timed 15% slower on 2026-12-04 than before the epilogue came.
  for form in epilogue row-kernel; do
    flag=()
    [ "$form" = row-kernel ] && flag=(--kilnc-flag=--gemm-norm-epilogue=false)
    timeout 200 python3 bench/run.py --tools build-gpu/bin \
      --cases bert-base-b1-s128,bert-base-b32-s128 --peers "" --precisions fp16 \
      "${flag[@]}" --warmup 10 --iters 100 --roofline-gpu "$gpu" --work build-gpu/bench \
      --out "$out/bench-norm-$form.md" >"$out/bench-norm-$form.log" 2>&1
    note "bench/run.py BERT-base fp16, the norm as $form: exit $?"
    grep -E "kiln median" "$out/bench-norm-$form.log" >>"$summary"
  done
fi

if want bench-llama; then
  # A LLaMA prefill end to end against eager (rotary embeddings, 32 query
  # heads over 4 key/value heads, causal): two TinyLlama-wide layers over
  # 2048 tokens (bench/models.py), exported there with torch's dynamo
  # exporter (the TorchScript one cannot trace transformers' causal mask
  # without an attention_mask input: aten::diff).
  timeout 240 python3 bench/run.py --tools build-gpu/bin --exporter dynamo \
    --cases llama-2l-prefill-s2048 --peers eager --precisions fp16 \
    --warmup 5 --iters 100 --roofline-gpu "$gpu" --work build-gpu/bench --out "$out/bench-llama.md" \
    >"$out/bench-llama.log" 2>&1
  note "bench/run.py LLaMA prefill: exit $?"
  cat "$out/bench-llama.md" >>"$summary" 2>/dev/null
fi

if want bench-llama-int4; then
  # Issue 39's decode goal: the 22-layer TinyLlama-width decoder at b1 after
  # 1024 tokens, fp16 against its int4-weight build (kilnc --weights int4)
  # and eager, in one call. Not in the default sections: the export of 1.1B
  # parameters and two compiles take most of a call.
  timeout 540 python3 bench/run.py --tools build-gpu/bin \
    --cases llama-22l-decode-b1-p1024 --peers eager --precisions fp16 --quantize int4 \
    --warmup 10 --iters 100 --roofline-gpu "$gpu" --work build-gpu/bench --out "$out/bench-llama-int4.md" \
    >"$out/bench-llama-int4.log" 2>&1
  note "bench/run.py LLaMA 22-layer decode, fp16 and int4 weights: exit $?"
  cat "$out/bench-llama-int4.md" >>"$summary" 2>/dev/null
fi
if want bench-gpt2; then
  # Issue 38's GPT-2 medium decode at b1 after 512 and 1,000 tokens, its KV
  # cache in place as a decoding loop keeps it (bench/models.py
  # in_place_cache), fp16 against eager and reduce-overhead in one call.
  # Not in the default sections: the export of 355M parameters, two
  # compiles and torch.compile's capture take most of a call.
  timeout 540 python3 bench/run.py --tools build-gpu/bin --cases gpt2 \
    --peers "${KILN_BENCH_PEERS:-eager,reduce-overhead}" --precisions fp16 \
    --warmup 10 --iters 100 --roofline-gpu "$gpu" --work build-gpu/bench --out "$out/bench-gpt2.md" \
    >"$out/bench-gpt2.log" 2>&1
  note "bench/run.py GPT-2 medium decode, fp16: exit $?"
  cat "$out/bench-gpt2.md" >>"$summary" 2>/dev/null
fi
if want bench-untuned; then
  # The same with cuBLASLt's first heuristic choice (KILN_TUNE_MATMULS=0):
  # what timing the candidates gives, apart from other changes. Eager is
  # not run again.
  KILN_TUNE_MATMULS=0 timeout 150 python3 bench/run.py --tools build-gpu/bin \
    --cases bert-base-b1-s128,bert-base-b32-s128 --peers "" \
    --precisions "${KILN_BENCH_PRECISIONS:-fp16,bf16}" \
    --warmup 10 --iters 50 --roofline-gpu "$gpu" --work build-gpu/bench \
    --out "$out/bench-untuned.md" >"$out/bench-untuned.log" 2>&1
  note "bench/run.py BERT-base, KILN_TUNE_MATMULS=0: exit $?"
  cat "$out/bench-untuned.md" >>"$summary" 2>/dev/null
fi

if want bench-variants; then
  # BERT-base b1 with Kiln's GEMM kernels racing cuBLASLt's
  # (KILN_GEMM_KERNEL=timed) and with programmatic dependent launch
  # (KILN_PDL=1), each against the defaults in the same call.
  for variant in "" KILN_GEMM_KERNEL=timed KILN_PDL=1 "KILN_GEMM_KERNEL=timed KILN_PDL=1"; do
    name=$(echo "${variant:-default}" | tr ' =' '_-')
    env $variant timeout 150 python3 bench/run.py --tools build-gpu/bin \
      --cases bert-base-b1-s128 --peers "" --precisions fp16 \
      --warmup 10 --iters 100 --roofline-gpu "$gpu" --work build-gpu/bench \
      --out "$out/bench-$name.md" >"$out/bench-$name.log" 2>&1
    note "bench/run.py BERT-base b1, ${variant:-defaults}: exit $?"
    cat "$out/bench-$name.md" >>"$summary" 2>/dev/null
  done
fi

if [ -n "$dest" ]; then
  mkdir -p "$dest"
  cp "$summary" "$dest/"
  tar czf "$dest/logs.tgz" -C "$(dirname "$out")" "$(basename "$out")"
fi
echo "===== summary"
cat "$summary"
