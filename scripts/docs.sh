#!/usr/bin/env bash
# Builds the DocC documentation of the ProfileDrop library with the toolchain's own `docc`, from
# the symbol graphs the compiler writes (the DocC plugin package is not fetched), and fails on any
# documentation warning or on a public symbol without a doc comment.
#
#   scripts/docs.sh            # the archive: .build/docs/ProfileDrop.doccarchive
#   scripts/docs.sh --static   # also transformed for static hosting (.build/docs/site)
set -euo pipefail
cd "$(dirname "$0")/.."

module=ProfileDrop
scratch=.build/docs/build          # its own build directory: the symbol-graph flags would otherwise
graphs=.build/docs/symbol-graphs   # make the next plain `swift build` recompile everything
archive=.build/docs/$module.doccarchive

docc=$(command -v docc || true)
if [ -z "$docc" ]; then
    swift_path=$(command -v swift)
    docc=$(dirname "$(readlink -f "$swift_path")")/docc
fi
[ -x "$docc" ] || { echo "docs: no docc beside the swift toolchain" >&2; exit 2; }

rm -rf "$graphs/$module" "$archive"
mkdir -p "$graphs/all" "$graphs/$module"
build() {
    swift build --target "$module" --scratch-path "$scratch" \
        -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$graphs/all" >/dev/null
}
build
# A module the build did not need to compile again keeps the graph its last compile wrote; when
# that graph is gone, compile from scratch.
if [ ! -f "$graphs/all/$module.symbols.json" ]; then
    rm -rf "$scratch"
    build
fi
# Only this module's graphs (and its extensions of other modules' types), not its dependencies'.
cp "$graphs/all/$module".symbols.json "$graphs/$module/"
cp "$graphs/all/$module"@*.symbols.json "$graphs/$module/" 2>/dev/null || true

# Every public symbol declared in the module's sources has a doc comment of its own.
python3 - "$graphs/$module" <<'PY'
import json, os, sys
missing = []
for name in sorted(os.listdir(sys.argv[1])):
    graph = json.load(open(os.path.join(sys.argv[1], name)))
    for symbol in graph["symbols"]:
        uri = symbol.get("location", {}).get("uri", "")
        if "/Sources/ProfileDrop/" not in uri or symbol.get("docComment"):
            continue
        line = symbol["location"]["position"]["line"] + 1
        missing.append(f"{uri.split('/Sources/')[-1]}:{line}: {'.'.join(symbol['pathComponents'])}")
if missing:
    print("docs: public symbols without a doc comment:", *missing, sep="\n  ", file=sys.stderr)
    sys.exit(1)
PY

"$docc" convert "Sources/$module/$module.docc" \
    --additional-symbol-graph-dir "$graphs/$module" \
    --fallback-display-name "$module" --fallback-bundle-identifier org.profiledrop.$module \
    --output-path "$archive" --warnings-as-errors
if [ "${1:-}" = "--static" ]; then
    "$docc" process-archive transform-for-static-hosting "$archive" --output-path .build/docs/site
fi
echo "docs: $archive"
