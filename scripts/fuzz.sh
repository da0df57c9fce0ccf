#!/usr/bin/env bash
# Coverage-guided fuzzing of the protocol with libFuzzer (see FUZZING.md).
#
#   scripts/fuzz.sh --list              the targets
#   scripts/fuzz.sh TARGET [SECONDS]    build TARGET, seed its corpus, fuzz it (default 60 s)
#   scripts/fuzz.sh --all SECONDS       build every target, then fuzz each for SECONDS
#   scripts/fuzz.sh --merge TARGET DIR...
#                                       add to TARGET's corpus the inputs of DIR... that reach
#                                       something it does not (libFuzzer -merge=1): corpora of other
#                                       runs, machines or CI caches
#   scripts/fuzz.sh --store TARGET      minimise everything known for TARGET into Fuzz/Corpus/TARGET,
#                                       the small corpus kept in the repository
#   scripts/fuzz.sh --keep TARGET...    add to Fuzz/Corpus/TARGET only the inputs of the corpus that
#                                       reach something it does not (-merge=1), after a campaign
#
# Several targets may run at once from one checkout, one script per target (builds take turns,
# each run swaps in only its own seeds).
#
# Every crash or broken invariant is minimised and stored as a regression input under
# Tests/ProfileDropCoreTests/FuzzCases/<target>/ (replayed by `swift test`) and printed; the script
# then exits 1. Exit 3: a target failed without a finding; exit 4: the targets did not build.
# Corpora persist in Fuzz/.build/corpus/<target>; every run also reads the seeds and the stored
# corpus Fuzz/Corpus/<target>. Environment: FUZZ_JOBS (parallel fuzzing jobs per target, default 1;
# libFuzzer -fork, all jobs sharing the one corpus), FUZZ_FLAGS (extra libFuzzer flags),
# FUZZ_SANITIZERS (fuzzer,address or fuzzer, for every target; by default fuzzer for the device
# target run alone and fuzzer,address otherwise, --all included).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

targets=(wire noise device capture file)
declare -A products=([wire]=FuzzWire [noise]=FuzzNoise [device]=FuzzDevice [capture]=FuzzCapture
    [file]=FuzzFile)
declare -A max_len=([wire]=1400 [noise]=4096 [device]=4096 [capture]=65536 [file]=16384)
# Without AddressSanitizer the device target runs about three times the inputs per
# CPU-second at the same depth (FUZZING.md, "Speed of the device target"), so a run of the device
# target alone (and its --merge, --store and --keep) leaves it out: the device runs safe Swift with
# bounds checks, and its unsafe-pointer code stays under AddressSanitizer in the capture target and
# in every --all run (CI's). FUZZ_SANITIZERS chooses for every target. Each choice builds in a
# scratch directory of its own.
case "${FUZZ_SANITIZERS:-}" in
"" | fuzzer,address | fuzzer) ;;
*) echo "fuzz: FUZZ_SANITIZERS is fuzzer,address or fuzzer" >&2; exit 2 ;;
esac
# Sets sanitizers, scratch and bin for runs of target $1 ("all" for --all).
configure() {
    if [ -n "${FUZZ_SANITIZERS:-}" ]; then
        sanitizers=$FUZZ_SANITIZERS
    elif [ "$1" = device ]; then
        sanitizers=fuzzer
    else
        sanitizers=fuzzer,address
    fi
    case "$sanitizers" in
    fuzzer,address) scratch="$root/Fuzz/.build/fuzz" ;;
    fuzzer) scratch="$root/Fuzz/.build/fuzz-fuzzer" ;;
    esac
    bin="$scratch/release"
}
# LeakSanitizer is off: Swift packs enum tags into pointer spare bits, so it misreads reachable
# objects (the device target's cached start states, for one) as leaks. Memory stays bounded by
# -rss_limit_mb and -malloc_limit_mb instead.
# Allocation-heavy targets (device above all) spend much of their time in AddressSanitizer's
# allocator: recording every allocation's stack, filling fresh blocks and cycling a 256 MB
# quarantine. Without them the device target runs a few per cent more inputs per CPU-second from
# the stored corpus, up to a fifth more on long inputs, in a fifth of the memory (114 MB, not 495;
# FUZZING.md, "Speed of the device target"), which matters when all targets run at once.
# Use-after-free is still caught (16 MB quarantine); only its report lacks the allocating stack.
# ASAN_OPTIONS from the caller come after, so they win.
export ASAN_OPTIONS="detect_leaks=0:malloc_context_size=0:max_malloc_fill_size=0:quarantine_size_mb=16${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export SWIFT_BACKTRACE=enable=no

usage() {
    echo "usage: scripts/fuzz.sh --list | TARGET [SECONDS] | --all SECONDS | --merge TARGET DIR... |" \
        "--store TARGET | --keep TARGET..." >&2
    exit 2
}

# -use-ld=lld: the default gold linker fails on sanitizer builds. The Swift toolchain ships ld.lld;
# Debian's lld package is the fallback.
ensure_lld() {
    local toolchain
    toolchain=$(dirname "$(readlink -f "$(command -v swift)")")
    if command -v ld.lld > /dev/null || [ -x "$toolchain/ld.lld" ]; then return; fi
    echo "fuzz: ld.lld not found, installing lld" >&2
    if [ "$(id -u)" = 0 ]; then apt-get install -y lld; else sudo apt-get install -y lld; fi
}

# `swift build --sanitize=fuzzer` links libFuzzer but leaves the code uninstrumented, hence -Xswiftc.
# FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION lets the crypto module remember X25519 results
# (X25519FuzzingMemo.swift): fuzz builds only, never a release.
# The Fuzz package depends on the main package by path, and SwiftPM does not notice a source file
# added to it: a scratch build made before the file existed fails to find it. So the scratch
# directory starts again whenever the list of the main package's sources changed.
build() {
    # SwiftPM names a package by its directory: a checkout in a directory called "fuzz" has the same
    # identity as the Fuzz package inside it, and the build fails with "product 'ProfileDropCore'
    # required by package 'fuzz' ... not found".
    if [ "$(basename "$(pwd -P)" | tr '[:upper:]' '[:lower:]')" = fuzz ]; then
        echo "fuzz: the checkout's directory is named fuzz, like the Fuzz package; SwiftPM cannot tell" \
            "them apart. Use a checkout (or a bind mount of this one) under another name." >&2
        return 1
    fi
    ensure_lld
    # Several targets may run at once from one checkout (one script per target): builds take turns,
    # so that none deletes the scratch directory under another.
    mkdir -p "$root/Fuzz/.build"
    exec {build_lock}> "$root/Fuzz/.build/build.lock"
    flock "$build_lock"
    local product sources
    # The main package's file list, including its two targets whose sources live under Fuzz/.
    sources=$(cd "$root" && find Sources Fuzz/Sources/FuzzSupport Fuzz/Sources/FileFuzz -name '*.swift' \
        | LC_ALL=C sort | sha256sum | cut -d' ' -f1)
    if [ "$(cat "$scratch/sources.sha256" 2> /dev/null)" != "$sources" ]; then
        rm -rf "$scratch"
        mkdir -p "$scratch"
        echo "$sources" > "$scratch/sources.sha256"
    fi
    for product in FuzzSeeds "$@"; do
        swift build --package-path Fuzz --scratch-path "$scratch" -c release \
            -Xswiftc -sanitize="$sanitizers" -Xswiftc -use-ld=lld \
            -Xswiftc -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION --product "$product" ||
            { exec {build_lock}>&-; return 1; }
    done
    exec {build_lock}>&-
}

# Seeds: valid datagrams of honest runs, frames, prefixes of honest device runs, and the UDP
# payloads (and whole files) of the golden captures. They are written into a private directory
# and only the given targets' seed directories are swapped in, each by a rename, so that a target
# started meanwhile from the same checkout never reads a half-written or deleted seed directory.
seed() {
    local fresh target
    mkdir -p "$root/Fuzz/.build/seeds"
    fresh=$(mktemp -d "$root/Fuzz/.build/seeds.new.XXXXXX")
    "$bin/FuzzSeeds" "$fresh" "$root"/Captures/*.pcapng
    seed_files "$fresh/file"
    for target in "$@"; do
        [ -d "$fresh/$target" ] || mkdir -p "$fresh/$target"
        if [ -d "$root/Fuzz/.build/seeds/$target" ]; then
            mv "$root/Fuzz/.build/seeds/$target" "$fresh/$target.old"
        fi
        mv "$fresh/$target" "$root/Fuzz/.build/seeds/$target"
    done
    rm -rf "$fresh"
}

# Seeds of the file target: the first byte names the format (FileFuzz.Format), the second how the
# rest is read (0: as it is). Card files carry their photo after a zero byte, named p.jpg.
seed_files() {
    local out=$1 file n=0
    mkdir -p "$out"
    for file in "$root"/Examples/*.json "$root"/Scenarios/*.json; do
        n=$((n + 1))
        { printf '\x00\x00'; cat "$file"; } > "$out/json-$n"
        { printf '\x04\x00'; cat "$file"; } > "$out/scenario-$n"
    done
    for file in "$root"/Examples/*.json; do
        n=$((n + 1))
        { printf '\x01\x00'; sed 's/"[a-z]*\.png"/"p.jpg"/' "$file"; printf '\x00'; cat "$root/Examples/bori.png"; } \
            > "$out/card-$n"
    done
    { printf '\x02\x00# profiledrop known peers\nv2 %s %s "Bori"\nv2 %s %s "Max \\u00e9"\n' \
        "$(printf '1%.0s' {1..64})" "$(printf '2%.0s' {1..64})" \
        "$(printf 'a%.0s' {1..64})" "$(printf 'B%.0s' {1..64})"; } > "$out/known-peers"
    { printf '\x03\x00 %s\n' "$(printf '3c%.0s' {1..32})"; } > "$out/key-file"
    { printf '\x05\x00'; printf '{"format": "profiledrop swarm summary 1", "seed": "7", "runs": 4, '
        printf '"shard": "1/2", "shardRuns": 2, "exchanged": 2, "aborted": 0, "violations": 0, '
        printf '"failing": []}\n'; } > "$out/swarm-summary"
    for n in 0 1 2 3 4 5; do printf "\\x0$n\\x80" > "$out/generated-$n"; done
}

# A new finding, said so that it cannot be mistaken for a failing test and cannot be lost: in CI the
# clone is thrown away, so the input itself is printed, with the commands that store and replay it.
report_finding() {
    local target=$1 artifact=$2 input=$3 name=$4 log=$5
    local kind seed
    kind=$(basename "$artifact" | cut -d- -f1)
    seed=$(grep -m1 -oE 'Seed: [0-9]+' "$log" | grep -oE '[0-9]+' || echo unknown)
    echo "fuzz: ================================================================================"
    echo "fuzz: NEW FINDING in target '$target' ($kind, libFuzzer seed $seed, $(wc -c < "$input") bytes)."
    echo "fuzz: Peer input reached a trap, a hang or a broken invariant. This is a bug in the code on"
    echo "fuzz: main, found by fresh exploration; it need not come from the change under test."
    echo "fuzz: What the target reported:"
    grep -m3 -E 'Fatal error|Precondition failed|invariant broken|ERROR: libFuzzer|ERROR: AddressSanitizer' \
        "$log" | sed 's/^/fuzz:   /' || true
    echo "fuzz: Stored as Tests/ProfileDropCoreTests/FuzzCases/$target/$name; the suite replays it."
    echo "fuzz: To keep it from a log, store it and replay it:"
    echo "fuzz:   echo '$(gzip -9nc "$input" | base64 -w 0)' | base64 -d | gunzip \\"
    echo "fuzz:     > Tests/ProfileDropCoreTests/FuzzCases/$target/$name"
    echo "fuzz:   swift test --filter 'FuzzRegressionTests|FuzzCaseReplayTests'"
    echo "fuzz: ================================================================================"
}

# Runs one target for $2 seconds; on a crash minimises it into FuzzCases and returns 1.
run() {
    local target=$1 seconds=$2
    local corpus="$root/Fuzz/.build/corpus/$target" artifacts="$root/Fuzz/.build/artifacts/$target"
    local cases="$root/Tests/ProfileDropCoreTests/FuzzCases/$target"
    local log="$root/Fuzz/.build/logs/$target.log"
    mkdir -p "$corpus" "$artifacts" "$cases" "$root/Fuzz/Corpus/$target" "$(dirname "$log")"
    rm -f "$artifacts"/crash-* "$artifacts"/timeout-* "$artifacts"/oom-* "$artifacts"/leak-*
    local flags=(-max_total_time="$seconds" -max_len="${max_len[$target]}" -timeout=10
        -rss_limit_mb=2048 -malloc_limit_mb=512 -detect_leaks=0 -print_final_stats=1
        -artifact_prefix="$artifacts/")
    local jobs=${FUZZ_JOBS:-1}
    if [ "$jobs" -gt 1 ]; then flags+=(-fork="$jobs" -ignore_crashes=0); fi
    echo "fuzz: $target for ${seconds}s (log $log)"
    local status=0
    # shellcheck disable=SC2086
    "$bin/${products[$target]}" "${flags[@]}" ${FUZZ_FLAGS:-} \
        "$corpus" "$root/Fuzz/.build/seeds/$target" "$root/Fuzz/Corpus/$target" "$cases" \
        > "$log" 2>&1 || status=$?
    grep -E '^stat::|invariant broken' "$log" | sed "s/^/fuzz: $target: /" || true
    local found=0 artifact
    for artifact in "$artifacts"/crash-* "$artifacts"/timeout-* "$artifacts"/oom-*; do
        [ -e "$artifact" ] || continue
        found=1
        local minimised="$artifact.min"
        "$bin/${products[$target]}" -minimize_crash=1 -runs=20000 \
            -max_total_time=60 -timeout=10 -detect_leaks=0 -exact_artifact_path="$minimised" "$artifact" \
            > "$log.minimize" 2>&1 || true
        [ -s "$minimised" ] || minimised=$artifact
        local name="" stored
        for stored in "$cases"/*; do
            if [ -f "$stored" ] && cmp -s "$stored" "$minimised"; then name=$(basename "$stored"); fi
        done
        if [ -n "$name" ]; then
            echo "fuzz: $target: FOUND $(basename "$artifact"), already stored as FuzzCases/$target/$name"
            continue
        fi
        name="fuzz-$(basename "$artifact" | cut -d- -f1)-$(sha1sum "$minimised" | cut -c1-16)"
        cp "$minimised" "$cases/$name"
        report_finding "$target" "$artifact" "$minimised" "$name" "$log"
    done
    if [ "$found" = 1 ]; then
        echo "fuzz: $target: a finding (exit $status); see $log" >&2
        return 1
    fi
    if [ "$status" != 0 ]; then
        echo "fuzz: $target: libFuzzer exited $status without leaving an input; see $log" >&2
        return 3
    fi
}

# Adds to the target's corpus what the directories hold that it lacks. -merge=1 keeps an input only
# when it reaches a feature the corpus does not; the control file lets an interrupted merge resume.
merge() {
    local target=$1
    shift
    local corpus="$root/Fuzz/.build/corpus/$target"
    mkdir -p "$corpus" "$root/Fuzz/.build/logs"
    local before
    before=$(find "$corpus" -type f | wc -l)
    "$bin/${products[$target]}" -merge=1 -max_len="${max_len[$target]}" -timeout=10 -detect_leaks=0 \
        -rss_limit_mb=2048 -merge_control_file="$root/Fuzz/.build/logs/$target.merge" "$corpus" "$@" \
        > "$root/Fuzz/.build/logs/$target.merge.log" 2>&1 ||
        { echo "fuzz: merging into $target failed; see Fuzz/.build/logs/$target.merge.log" >&2; return 3; }
    rm -f "$root/Fuzz/.build/logs/$target.merge"
    echo "fuzz: $target: corpus $before -> $(find "$corpus" -type f | wc -l) inputs"
}

# Rewrites the stored corpus Fuzz/Corpus/<target> as a small set of inputs (libFuzzer's
# -set_cover_merge=1: a greedy set cover, fewer inputs than -merge=1) that reaches every feature the
# corpus, the seeds and the stored corpus reach, each input cut to store_len bytes. The seeds are
# written afresh every run, so whole captures need not be stored again.
declare -A store_len=([wire]=1400 [noise]=512 [device]=1024 [capture]=4096 [file]=1024)
store() {
    local target=$1
    local fresh="$root/Fuzz/.build/store/$target"
    rm -rf "$fresh"
    mkdir -p "$fresh" "$root/Fuzz/Corpus/$target" "$root/Fuzz/.build/corpus/$target"
    "$bin/${products[$target]}" -set_cover_merge=1 -max_len="${store_len[$target]}" -timeout=10 -detect_leaks=0 \
        -rss_limit_mb=2048 "$fresh" "$root/Fuzz/Corpus/$target" "$root/Fuzz/.build/corpus/$target" \
        "$root/Fuzz/.build/seeds/$target" > "$root/Fuzz/.build/logs/$target.store.log" 2>&1 ||
        { echo "fuzz: storing $target failed; see Fuzz/.build/logs/$target.store.log" >&2; return 3; }
    rm -rf "$root/Fuzz/Corpus/$target"
    mkdir -p "$root/Fuzz/Corpus/$target"
    local file
    for file in "$fresh"/*; do
        [ -f "$file" ] && cp "$file" "$root/Fuzz/Corpus/$target/"
    done
    echo "fuzz: $target: stored $(find "$root/Fuzz/Corpus/$target" -type f | wc -l) inputs," \
        "$(find "$root/Fuzz/Corpus/$target" -type f -exec cat {} + | wc -c) bytes, in Fuzz/Corpus/$target"
}

# Adds to the stored corpus Fuzz/Corpus/<target> the inputs of the working corpus that reach a
# feature it lacks (libFuzzer -merge=1), each cut to store_len bytes: what a campaign found, in a
# small change to commit. Unlike --store it keeps every stored input as it is.
keep() {
    local target=$1
    local stored="$root/Fuzz/Corpus/$target" log="$root/Fuzz/.build/logs/$target.keep.log"
    mkdir -p "$stored" "$root/Fuzz/.build/corpus/$target"
    local before
    before=$(find "$stored" -type f | wc -l)
    "$bin/${products[$target]}" -merge=1 -max_len="${store_len[$target]}" -timeout=10 -detect_leaks=0 \
        -rss_limit_mb=2048 -merge_control_file="$root/Fuzz/.build/logs/$target.keep" "$stored" \
        "$root/Fuzz/.build/corpus/$target" > "$log" 2>&1 ||
        { echo "fuzz: keeping $target's corpus failed; see Fuzz/.build/logs/$target.keep.log" >&2; return 3; }
    rm -f "$root/Fuzz/.build/logs/$target.keep"
    echo "fuzz: $target: stored corpus $before -> $(find "$stored" -type f | wc -l) inputs," \
        "$(find "$stored" -type f -exec cat {} + | wc -c) bytes, in Fuzz/Corpus/$target"
}

[ $# -ge 1 ] || usage
case "$1" in
--keep)
    [ $# -ge 2 ] || usage
    for target in "${@:2}"; do [ -n "${products[$target]:-}" ] || usage; done
    mkdir -p "$root/Fuzz/.build/logs"
    for target in "${@:2}"; do
        configure "$target"
        build "${products[$target]}" || { echo "fuzz: the fuzz target did not build" >&2; exit 4; }
        keep "$target" || exit 3
    done
    ;;
--merge | --store)
    [ $# -ge 2 ] && [ -n "${products[$2]:-}" ] || usage
    configure "$2"
    build "${products[$2]}" || { echo "fuzz: the fuzz target did not build" >&2; exit 4; }
    seed "$2"
    mkdir -p "$root/Fuzz/.build/logs"
    if [ "$1" = --merge ]; then
        [ $# -ge 3 ] || usage
        merge "${@:2}"
    else
        store "$2"
    fi
    ;;
--list)
    printf '%s\n' "${targets[@]}"
    ;;
--all)
    [ $# -eq 2 ] || usage
    start=$(date +%s)
    configure all
    build "${products[@]}" || { echo "fuzz: the fuzz targets did not build" >&2; exit 4; }
    seed "${targets[@]}"
    echo "fuzz: built and seeded in $(($(date +%s) - start))s"
    failed=0
    for target in "${targets[@]}"; do
        status=0
        run "$target" "$2" || status=$?
        # A finding (1) outranks a failure without one (3).
        if [ "$status" = 1 ] || { [ "$status" != 0 ] && [ "$failed" = 0 ]; }; then failed=$status; fi
    done
    echo "fuzz: done in $(($(date +%s) - start))s"
    exit $failed
    ;;
-*)
    usage
    ;;
*)
    [ -n "${products[$1]:-}" ] || { echo "fuzz: unknown target $1 (try --list)" >&2; exit 2; }
    configure "$1"
    build "${products[$1]}" || { echo "fuzz: the fuzz target did not build" >&2; exit 4; }
    seed "$1"
    run "$1" "${2:-60}"
    ;;
esac
