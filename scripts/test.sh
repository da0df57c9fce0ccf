#!/usr/bin/env bash
# Runs every test: installs missing dependencies first, then the whole Swift test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build --build-tests
swift test --skip-build
