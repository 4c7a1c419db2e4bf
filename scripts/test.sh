#!/usr/bin/env bash
# The README's test command: set everything up, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
# Unit tests (gtest) and the corpus conformance run, through ctest; the lit
# suite through its own target.
(cd build && ctest --output-on-failure -j"$(nproc)")
ninja -C build check-kiln
# The Python package, installed as a user installs it, and its tests.
python3 -m pip install -q --disable-pip-version-check ./python
python3 -m pytest -q python/tests
# Each fuzz target for 20 seconds with a fixed seed, after its regression
# inputs: a smoke test that the targets build and run; the finding is done by
# campaigns (scripts/fuzz.sh; recorded in docs/reliability.md).
scripts/fuzz.sh --smoke --seconds 20
