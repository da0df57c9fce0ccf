#!/usr/bin/env bash
# Source coverage of the fuzz corpora, as OSS-Fuzz reports it (see FUZZING.md, "Coverage").
#
#   scripts/coverage.sh [TARGET ...]    default: every target of scripts/fuzz.sh --list
#
# Builds the fuzz targets with coverage instrumentation (-profile-generate
# -profile-coverage-mapping) in Fuzz/.build/coverage, replays each target's corpus
# (Fuzz/.build/corpus/<target>, what scripts/fuzz.sh found), its seeds, the stored corpus
# (Fuzz/Corpus/<target>) and the stored cases (Tests/ProfileDropCoreTests/FuzzCases/<target>) once
# each, and prints:
#   - line and region coverage per module and target, and per file of every module;
#   - Core's line coverage counting only lines peer input can reach (Fuzz/coverage-exclusions.txt);
#   - which ExchangeState handler and which frame type's receive path the corpora reach.
# The HTML report (llvm-cov show) goes to Fuzz/.build/coverage/html/index.html, the summary to
# Fuzz/.build/coverage/summary.txt, every Core line the corpora miss (and that counts) to
# Fuzz/.build/coverage/core-unreached.txt. Exit 4: the targets did not build.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

all_targets=$(scripts/fuzz.sh --list)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets <<< "$all_targets"
declare -A products=([wire]=FuzzWire [noise]=FuzzNoise [device]=FuzzDevice [capture]=FuzzCapture
    [file]=FuzzFile)
for target in "${targets[@]}"; do
    [ -n "${products[$target]:-}" ] || { echo "coverage: unknown target $target" >&2; exit 2; }
done

scratch="$root/Fuzz/.build/coverage"
bin="$scratch/release"
profiles="$scratch/profiles"
toolchain=$(dirname "$(readlink -f "$(command -v swift)")")
profdata="$toolchain/llvm-profdata"
cov="$toolchain/llvm-cov"
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export SWIFT_BACKTRACE=enable=no

# The same restart rule as scripts/fuzz.sh: SwiftPM does not see a source file added to the main
# package, which the Fuzz package depends on by path.
sources=$(find Sources -name '*.swift' | LC_ALL=C sort | sha256sum | cut -d' ' -f1)
if [ "$(cat "$scratch/sources.sha256" 2> /dev/null)" != "$sources" ]; then
    rm -rf "$scratch"
    mkdir -p "$scratch"
    echo "$sources" > "$scratch/sources.sha256"
fi
# -sanitize=fuzzer links libFuzzer, which replays the corpora (-runs=0); the counters that matter
# are the profile's. No AddressSanitizer: replay only, and faster.
# Seeds come from scripts/fuzz.sh; when it has not run, this build writes them (with the same
# flags, so that nothing is compiled twice).
build_products=()
for target in "${targets[@]}"; do build_products+=("${products[$target]}"); done
[ -d "$root/Fuzz/.build/seeds" ] || build_products+=(FuzzSeeds)
for product in "${build_products[@]}"; do
    swift build --package-path Fuzz --scratch-path "$scratch" -c release \
        -Xswiftc -sanitize=fuzzer -Xswiftc -profile-generate -Xswiftc -profile-coverage-mapping \
        -Xswiftc -use-ld=lld --product "$product" ||
        { echo "coverage: the targets did not build" >&2; exit 4; }
done
if [ ! -d "$root/Fuzz/.build/seeds" ]; then
    LLVM_PROFILE_FILE=/dev/null "$bin/FuzzSeeds" "$root/Fuzz/.build/seeds" "$root"/Captures/*.pcapng
fi

rm -rf "$profiles"
mkdir -p "$profiles"
objects=()
for target in "${targets[@]}"; do
    directories=()
    for directory in "$root/Fuzz/.build/corpus/$target" "$root/Fuzz/.build/seeds/$target" \
        "$root/Fuzz/Corpus/$target" "$root/Tests/ProfileDropCoreTests/FuzzCases/$target"; do
        if [ -d "$directory" ]; then directories+=("$directory"); fi
    done
    inputs=$(find "${directories[@]}" -type f 2> /dev/null | wc -l)
    echo "coverage: $target: replaying $inputs inputs"
    # %m: one file per binary signature; %p: one per process.
    LLVM_PROFILE_FILE="$profiles/$target-%p.profraw" "$bin/${products[$target]}" -runs=0 \
        -timeout=30 -rss_limit_mb=4096 -detect_leaks=0 "${directories[@]}" \
        > "$profiles/$target.log" 2>&1 ||
        echo "coverage: $target: replay exited $? (see $profiles/$target.log)" >&2
    "$profdata" merge -sparse "$profiles/$target"-*.profraw -o "$profiles/$target.profdata"
    objects+=("$bin/${products[$target]}")
done
"$profdata" merge -sparse "$profiles"/*.profdata -o "$profiles/all.profdata"

object_arguments=("${objects[0]}")
for object in "${objects[@]:1}"; do object_arguments+=(-object "$object"); done
"$cov" export -summary-only "${object_arguments[@]}" -instr-profile "$profiles/all.profdata" \
    > "$scratch/all.json"
"$cov" show -format=text -show-line-counts "${object_arguments[@]}" \
    -instr-profile "$profiles/all.profdata" "$root/Sources/ProfileDropCore" > "$scratch/core.txt"
for target in "${targets[@]}"; do
    "$cov" export -summary-only "$bin/${products[$target]}" -instr-profile "$profiles/$target.profdata" \
        > "$scratch/$target.json"
done
python3 "$root/scripts/coverage_summary.py" --root "$root" --exclusions "$root/Fuzz/coverage-exclusions.txt" \
    --all "$scratch/all.json" --core "$scratch/core.txt" --unreached "$scratch/core-unreached.txt" \
    $(for target in "${targets[@]}"; do echo "--target $target=$scratch/$target.json"; done) |
    tee "$scratch/summary.txt"

"$cov" show "${object_arguments[@]}" -instr-profile "$profiles/all.profdata" -format=html \
    -show-line-counts-or-regions -output-dir "$scratch/html" \
    -ignore-filename-regex='/(Tests|Fuzz/Sources/(Fuzz[A-Za-z]*|CLibFuzzer))/|/\.build/' \
    > /dev/null
echo "coverage: HTML report in $scratch/html/index.html"
