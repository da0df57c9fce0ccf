#!/usr/bin/env bash
# Randomized simulation runs of the protocol from a fresh seed (see CONTRIBUTING.md, "Long swarms").
#
#   scripts/swarm.sh RUNS           build the release binary, then RUNS swarm runs from a random seed
#   SWARM_SEED=S scripts/swarm.sh RUNS   the same from seed S (to repeat a swarm exactly)
#
# Prints the seed first, then every broken invariant with the command that replays its run alone,
# the summary, and the rate in runs per CPU-second. Every failing run is stored as a regression case
# under Tests/ProfileDropSimulatorTests/SwarmCases/seed-<run seed>.case (replayed by `swift test`);
# the script then exits 1. The whole log is kept in .build/swarm/swarm-<seed>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

usage() {
    echo "usage: scripts/swarm.sh RUNS   (SWARM_SEED=S to choose the seed)" >&2
    exit 2
}
[ $# -eq 1 ] && [[ $1 =~ ^[1-9][0-9]*$ ]] || usage
runs=$1
seed=${SWARM_SEED:-$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')}
[[ $seed =~ ^[0-9]+$ ]] || usage
echo "swarm.sh: seed $seed, $runs runs"

swift build -c release --static-swift-stdlib --product profiledrop > /dev/null
bin="$root/.build/release/profiledrop"
cases="$root/Tests/ProfileDropSimulatorTests/SwarmCases"
logs="$root/.build/swarm"
log="$logs/swarm-$seed.log"
mkdir -p "$cases" "$logs"

# User and system CPU seconds of the swarm alone, from bash's own accounting of the child.
TIMEFORMAT='%U %S %R'
status=0
{ time "$bin" simulate --swarm --runs "$runs" --seed "$seed" > "$log" 2>&1 || status=$?; } 2> "$log.time"
read -r user system real < "$log.time"

grep -E '^  (violation|reproduce):' "$log" || true
summary=$(grep -E '^swarm: [0-9]+ runs,' "$log" | tail -n 1 || true)
if [ -z "$summary" ]; then
    echo "swarm.sh: the swarm did not finish (exit $status); see $log" >&2
    tail -n 20 "$log" >&2
    exit 2
fi
echo "$summary"
awk -v runs="$runs" -v user="$user" -v sys="$system" -v real="$real" 'BEGIN {
    cpu = user + sys; if (cpu < 0.01) cpu = 0.01
    printf "swarm.sh: %.1f CPU-s (%.1f s wall), %.0f runs per CPU-second\n", cpu, real, runs / cpu
}'

# Each failing run: its violations (the lines between its "run" line and its "reproduce" line)
# become the comments of its case file.
stored=0
while IFS= read -r command; do
    run_seed=${command##* }
    file="$cases/seed-$run_seed.case"
    if [ -e "$file" ]; then
        echo "swarm.sh: run seed $run_seed is already stored as ${file#"$root"/}"
        continue
    fi
    {
        awk -v seed="$run_seed" '
            /^run [0-9]+\/[0-9]+ seed=/ { current = ($3 == "seed=" seed) }
            current && /^  violation: / { sub(/^  /, ""); print "# " $0 }
        ' "$log" | sort -u
        echo "# found by: profiledrop simulate --swarm --runs $runs --seed $seed ($(date -u +%Y-%m-%d))"
        echo "# cause: (to be found; see CONTRIBUTING.md, \"Long swarms\")"
        echo "$command"
    } > "$file"
    stored=$((stored + 1))
    echo "swarm.sh: stored ${file#"$root"/}"
done < <(grep -E '^  reproduce: ' "$log" | sed 's/^  reproduce: //' | sort -u)

if [ "$status" != 0 ]; then
    echo "swarm.sh: violations found ($stored new case(s) stored); full log $log" >&2
    exit 1
fi
