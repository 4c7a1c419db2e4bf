#!/usr/bin/env bash
# Builds the libFuzzer targets (test/fuzz) into build-fuzz/ with clang-22,
# ASan and UBSan, and runs each for a bounded time; the fifth target,
# differential, runs random graphs on the host backend against the reference
# interpreter (test/fuzz/differential.py, with the normal build's kiln-run):
#
#   scripts/fuzz.sh --minutes 60            a campaign, every target in turn
#   scripts/fuzz.sh --seconds 30 --smoke    what CI runs (fixed seed, fewer
#                                           seed inputs)
#   scripts/fuzz.sh --minutes 60 onnx       one target (onnx, kiln-ir,
#                                           tensor-files, artifact,
#                                           differential)
#   --opt N                                 the build's optimization level
#                                           (default 3); CI's smoke builds
#                                           at 0, faster (see below)
#   --keep-going                            collect every crash of a
#                                           campaign instead of stopping at
#                                           the first (libFuzzer fork mode)
#
# First every file of test/fuzz/regressions/<target> (inputs that once
# crashed, or for differential once computed a wrong answer) must run clean;
# then the fuzzer runs on the seeds plus the corpus it has grown in
# build-fuzz/corpus/<target>. A crash, leak, timeout, sanitizer report or
# (differential) wrong answer leaves its input in build-fuzz/crashes/<target>/
# and fails the script. Each run appends a line to build-fuzz/fuzz-log.tsv
# (date, target, wall seconds, CPU seconds, executions, result);
# docs/reliability.md records the campaigns.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
seed=0
opt=3
smoke=0
keep_going=()
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) seconds=$(($2 * 60)); shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --opt)
      case "$2" in 0|1|2|3) opt=$2 ;; *) echo "fuzz.sh: --opt takes 0 to 3" >&2; exit 2 ;; esac
      shift 2 ;;
    --smoke) smoke=1; [ "$seed" = 0 ] && seed=1; shift ;;
    --keep-going)
      keep_going=(-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
      shift ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -eq 0 ] && targets=(onnx kiln-ir tensor-files artifact differential)
libfuzzer=0
for t in "${targets[@]}"; do
  case "$t" in
    onnx|kiln-ir|tensor-files|artifact) libfuzzer=1 ;;
    differential) ;;
    *) echo "fuzz.sh: unknown target '$t'" >&2; exit 2 ;;
  esac
done

for tool in clang++-22 python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "fuzz.sh: $tool not found; run scripts/setup.sh" >&2
    exit 1
  fi
done

# The artifact seeds are compiled by the normal build's kilnc; the
# differential target runs its kiln-run.
{ [ -x build/bin/kilnc ] && [ -x build/bin/kiln-run ]; } || scripts/build.sh

# The differential target: random graphs, host backend against the reference
# interpreter. Its regressions replay first; findings are saved as models.
run_differential() {
  local regressions=test/fuzz/regressions/differential
  local crashes=build-fuzz/crashes/differential log=build-fuzz/differential.log
  mkdir -p "$crashes"
  if [ -n "$(ls "$regressions"/*.onnx 2>/dev/null)" ]; then
    echo "== differential: regression inputs"
    if ! python3 test/fuzz/differential.py --kiln-run build/bin/kiln-run \
        --replay "$regressions"/*.onnx >build-fuzz/differential-regressions.log 2>&1; then
      tail -60 build-fuzz/differential-regressions.log >&2
      echo "fuzz.sh: differential: a regression input fails again" >&2
      return 1
    fi
  fi
  echo "== differential: fuzzing for ${seconds}s (seed $seed)"
  local start=$SECONDS status=0
  python3 test/fuzz/differential.py --kiln-run build/bin/kiln-run \
    --seconds "$seconds" --seed "$seed" --crashes "$crashes" >"$log" 2>&1 \
    || status=$?
  local wall=$((SECONDS - start)) tally result=ok
  tally=$(tail -1 "$log")
  if [ "$status" -ne 0 ]; then
    result="findings (see $log)"
    tail -80 "$log" >&2
    echo "fuzz.sh: differential: models in $crashes/; full log $log" >&2
  fi
  local graphs
  graphs=$(sed -n 's/.* batches, \([0-9]*\) graphs,.*/\1/p' "$log" | tail -1)
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" differential \
    "$wall" '?' "${graphs:-?} graphs" "$result" >>build-fuzz/fuzz-log.tsv
  echo "== differential: ${wall}s; $tally"
  return "$status"
}

mkdir -p build-fuzz
if [ "$libfuzzer" = 0 ]; then
  failed=0
  run_differential || failed=1
  exit $failed
fi

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# The optimization level is the build's: a level other than the one it was
# configured with rebuilds it. With the sanitizers, clang takes twice as long
# at -O3 as without them; at -O0 the build takes two thirds of the time
# (about 10 minutes against 15 on two cores) but the targets run 3 to 10
# times fewer inputs a second: enough for CI's smoke run, which replays the
# regressions and shows that each target builds and runs, not for a
# campaign.
flags="-O$opt -DNDEBUG"
if [ ! -f build-fuzz/build.ninja ] || \
   ! grep -qx "CMAKE_CXX_FLAGS_RELEASE:STRING=$flags" build-fuzz/CMakeCache.txt; then
  CC=clang-22 CXX=clang++-22 cmake -G Ninja -S . -B build-fuzz \
    -DCMAKE_BUILD_TYPE=Release -DKILN_FUZZ=ON \
    -DCMAKE_C_FLAGS_RELEASE="$flags" -DCMAKE_CXX_FLAGS_RELEASE="$flags" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCUDAToolkit_ROOT=/usr/local/cuda "${launcher[@]}" >/dev/null
fi
ninja -C build-fuzz kiln-fuzzers

seeds=build-fuzz/seeds
[ "$smoke" = 1 ] && seeds=build-fuzz/seeds-smoke
if [ ! -d "$seeds" ]; then
  smoke_flag=()
  [ "$smoke" = 1 ] && smoke_flag=(--smoke)
  python3 test/fuzz/make_seeds.py --out "$seeds.tmp" --kilnc build/bin/kilnc \
    "${smoke_flag[@]}"
  mv "$seeds.tmp" "$seeds"
fi

# Leaks are reported at exit and fail the run; allocations past 2 GiB at
# once or 4 GiB in all are bugs (DESIGN.md, hostile input), as is an input
# that takes more than 30 s.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=0
for t in "${targets[@]}"; do
  if [ "$t" = differential ]; then
    run_differential || failed=1
    continue
  fi
  fuzzer=build-fuzz/bin/kiln-fuzz-$t
  regressions=test/fuzz/regressions/$t
  corpus=build-fuzz/corpus/$t
  crashes=build-fuzz/crashes/$t
  mkdir -p "$corpus" "$crashes"
  # The fuzzer runs in a scratch folder: models may name external data
  # files, which must resolve to nothing of ours.
  scratch=$(mktemp -d)
  if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
    echo "== $t: regression inputs"
    if ! (cd "$scratch" && "$OLDPWD/$fuzzer" -rss_limit_mb=4096 \
            -malloc_limit_mb=2048 -timeout=30 "$OLDPWD/$regressions"/*) \
            >"build-fuzz/$t-regressions.log" 2>&1; then
      tail -60 "build-fuzz/$t-regressions.log" >&2
      echo "fuzz.sh: $t: a regression input fails again" >&2
      failed=1
      rm -rf "$scratch"
      continue
    fi
  fi
  echo "== $t: fuzzing for ${seconds}s (seed $seed)"
  log=build-fuzz/$t.log
  before=$(ls "$crashes" | wc -l)
  start=$SECONDS
  status=0
  (cd "$scratch" && exec /usr/bin/time -f '%U %S' -o "$OLDPWD/$log.cpu" \
      "$OLDPWD/$fuzzer" -max_total_time="$seconds" \
      -seed="$seed" -rss_limit_mb=4096 -malloc_limit_mb=2048 -timeout=30 \
      -max_len=262144 -print_final_stats=1 "${keep_going[@]}" \
      -artifact_prefix="$OLDPWD/$crashes/" \
      "$OLDPWD/$corpus" "$OLDPWD/$seeds/$t") >"$log" 2>&1 || status=$?
  rm -rf "$scratch"
  wall=$((SECONDS - start))
  cpu=$(awk 'END { printf "%d", $1 + $2 }' "$log.cpu" 2>/dev/null || echo '?')
  found=$(( $(ls "$crashes" | wc -l) - before ))
  result=ok
  if [ "$status" -ne 0 ] || [ "$found" -gt 0 ]; then
    result="$found new crash inputs"
    failed=1
    tail -60 "$log" >&2
    echo "fuzz.sh: $t: inputs in $crashes/; full log $log" >&2
  fi
  # Executions: the final statistics, or fork mode's last progress line.
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -z "$execs" ] && execs=$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$log" | tail -1)
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$wall" \
    "$cpu" "${execs:-?}" "$result" >>build-fuzz/fuzz-log.tsv
  echo "== $t: ${wall}s, ${cpu}s CPU, ${execs:-?} executions, $result"
done
exit $failed
