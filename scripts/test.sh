#!/usr/bin/env bash
# The README's test command: set everything up, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
# One cache of compiled kernels (NVRTC's and the host compiler's) for the
# whole run, the lit suite's: the tests compile many of the same sources (an
# export at one precision in several checks, the same small graphs), and an
# entry is keyed by its source, options and compiler, so a second compile
# only reads the first one's result. Tests of the cache itself choose their
# own folder.
export KILN_CACHE_DIR="$PWD/build/test/cache"
# Unit tests (gtest) and the corpus conformance run, through ctest; the lit
# suite through its own target.
(cd build && ctest --output-on-failure -j"$(nproc)")
ninja -C build check-kiln
# The Python package, installed as a user installs it, and its tests.
python3 -m pip install -q --disable-pip-version-check ./python
python3 -m pytest -q python/tests
# Each fuzz target for 20 seconds with a fixed seed, after its regression
# inputs: a smoke test that the targets build and run; the finding is done by
# campaigns (scripts/fuzz.sh; recorded in docs/reliability.md). Built at -O0,
# which saves CI about 5 minutes of compiling for fewer inputs a second.
scripts/fuzz.sh --smoke --seconds 20 --opt 0
