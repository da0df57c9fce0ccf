#!/usr/bin/env bash
# How long a pair takes over a lossy link, across seeds: Scenarios/lossy-30.json (30 % loss each way,
# 5 % duplication, 10 % reordering, 30 s overall limit) run once per seed, in virtual time.
#
#   scripts/lossy-tail.sh SEEDS          build the release binary, run seeds 1..SEEDS
#   LOSSY_BIN=path scripts/lossy-tail.sh SEEDS   use that binary instead (to compare two builds)
#
# Prints how many runs ended with both devices exchanged, then the time until both closed (the
# scenario's virtual end) over those runs: mean, median, 90th and 99th percentile, maximum, and how
# many took over 10 s. The tail is the point: a median hides a handshake that stalls for seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] && [[ $1 =~ ^[1-9][0-9]*$ ]] || { echo "usage: scripts/lossy-tail.sh SEEDS" >&2; exit 2; }
seeds=$1
if [ -z "${LOSSY_BIN:-}" ]; then
    swift build -c release --static-swift-stdlib --product profiledrop > /dev/null
    bin=.build/release/profiledrop
else
    bin=$LOSSY_BIN
fi
for seed in $(seq 1 "$seeds"); do
    # The summary line: "summary: 2 devices, 2 exchanged, …, virtual 3.100s, 0 violations".
    "$bin" simulate Scenarios/lossy-30.json --seed "$seed" --quiet | grep '^summary:' \
        | sed -E 's/.* ([0-9]+) exchanged,.*virtual ([0-9.]+)s,.*/\1 \2/'
done | sort -k2 -n | awk -v seeds="$seeds" '
    $1 == 2 { time[++n] = $2; sum += $2; if ($2 > 10) slow++ }
    END {
        printf "lossy-30, seeds 1-%d: %d of %d exchanged on both sides\n", seeds, n, seeds
        if (n == 0) exit 1
        printf "time to both closed (s): mean %.2f, median %.2f, p90 %.2f, p99 %.2f, max %.2f; over 10 s: %d\n",
            sum / n, time[int((n + 1) / 2)], time[int(n * 0.9)], time[int(n * 0.99)], time[n], slow
    }'
