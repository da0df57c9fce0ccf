#!/usr/bin/env bash
# Sets everything up and runs the main job: two `profiledrop share --json` processes paired on
# loopback, twice. scripts/demo-pair.py stands in for both users: it reads each device's consent
# request, compares the two codes as two people would compare their screens, and answers share
# only when they match. The second meeting uses the same key and known-peers files, so each device
# recognises the other as a known peer. Traffic stays on lo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
tool=.build/release/profiledrop
work=$(mktemp -d /tmp/profiledrop-demo.XXXXXX)
# A discovery port of the demo's own, so it never meets a real device using the default one.
port=${PROFILEDROP_DEMO_PORT:-47644}
trap 'rm -rf "$work"' EXIT

echo "demo: two devices on loopback; each keeps its identity key and known peers in $work/<name>"
status=0
python3 scripts/demo-pair.py "$tool" "$port" "$work" "first meeting: two new devices" || status=1
if [ "$status" -eq 0 ]; then
    python3 scripts/demo-pair.py "$tool" "$port" "$work" \
        "second meeting, same key and known-peers files: each knows the other" || status=1
fi
echo "demo: cards saved:"
find "$work" -name '*.json' -o -name '*.png' -o -name '*.jpg' | sed "s|$work/|  |" | sort
exit "$status"
