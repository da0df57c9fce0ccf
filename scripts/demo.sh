#!/usr/bin/env bash
# Sets everything up and runs the main job: two `profiledrop share` processes paired on loopback,
# each line prefixed with the device it comes from. Traffic stays on lo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
tool=.build/release/profiledrop
work=$(mktemp -d /tmp/profiledrop-demo.XXXXXX)
# A discovery port of the demo's own, so it never meets a real device using the default one.
port=${PROFILEDROP_DEMO_PORT:-47644}
trap 'rm -rf "$work"' EXIT

echo "demo: two devices on loopback; each holds its own static key in $work"
"$tool" share --profile Examples/bori.json --interface lo --port "$port" --key-file "$work/bori.key" \
    --save "$work/received-by-bori" --timeout 60 2>&1 | sed -u 's/^/[bori] /' &
first=$!
"$tool" share --profile Examples/max.json --interface lo --port "$port" --key-file "$work/max.key" \
    --save "$work/received-by-max" --timeout 60 2>&1 | sed -u 's/^/[max]  /' &
second=$!
status=0
wait "$first" || status=1
wait "$second" || status=1
echo "demo: cards saved:"
find "$work" -name '*.json' -o -name '*.png' -o -name '*.jpg' | sed "s|$work/|  |" | sort
exit "$status"
