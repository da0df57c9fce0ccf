#!/usr/bin/env bash
# Sets everything up and runs the main job: the Noise vector self-check and the handshake benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
tool=.build/release/profiledrop
vectors=../shared/noise-vectors/cacophony-25519-ChaChaPoly-BLAKE2b.json
if [ -f "$vectors" ]; then
    "$tool" noise-vectors "$vectors"
else
    echo "demo: $vectors not found beside the repository; skipping the vector self-check"
fi
"$tool" bench handshake
