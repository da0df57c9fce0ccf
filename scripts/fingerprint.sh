#!/usr/bin/env bash
# The simulator's output for a fixed set of seeds, to show that a change (a speed-up, say) left
# every run byte-identical: a 1,500-run swarm summary, every scenario's transcript at seed 3, and an
# attack summary.
#
#   scripts/fingerprint.sh OUTDIR          write the fingerprint of this checkout to OUTDIR
#   diff -r BEFORE AFTER                   compare two of them; no output means no change
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: scripts/fingerprint.sh OUTDIR" >&2; exit 2; }
# Resolved before moving to the repository, so that a relative OUTDIR is the caller's.
mkdir -p "$1"
out=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
swift build -c release --static-swift-stdlib --product profiledrop > /dev/null
bin=.build/release/profiledrop
# Exit codes are part of the output: a run that fails must fail the same way.
set +e
$bin simulate --swarm --runs 1500 --seed 7 --summary - > "$out/swarm.json"
echo "exit $?" >> "$out/swarm.json"
for scenario in Scenarios/*.json; do
    name=$(basename "$scenario" .json)
    $bin simulate "$scenario" --seed 3 > "$out/scenario-$name.txt" 2>&1
    echo "exit $?" >> "$out/scenario-$name.txt"
done
$bin simulate --attacks --runs 200 --seed 5 > "$out/attacks.txt" 2>&1
echo "exit $?" >> "$out/attacks.txt"
set -e
# Rates depend on the machine, not on the runs.
sed -i -E 's/[0-9.]+ runs\/CPU-s//; s/[0-9.]+ runs per CPU-second//' "$out/attacks.txt"
echo "fingerprint written to $out"
