#!/usr/bin/env bash
# Runs every test: installs missing dependencies first, then the whole Swift test suite, then the
# independent check of the conformance vectors.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build --build-tests
# The log lets CI repeat the verdict after the fuzz run.
swift test --skip-build 2>&1 | tee .build/swift-test.log
# A second implementation, written from PROTOCOL.md, recomputes the conformance vectors (Vectors/).
python3 scripts/check-vectors.py
