#!/usr/bin/env bash
# Compares the public API of the ProfileDrop library with the last release, so that a breaking
# change is a deliberate version bump (semantic versioning; while 0.x, a minor bump may break).
#
#   scripts/api-check.sh            # against the newest release tag (vX.Y.Z) reachable from HEAD
#   scripts/api-check.sh TREEISH    # against any commit, branch or tag
#
# Exit 0: no break, a break the version bump allows, or no baseline to compare with (said plainly:
# a fresh or shallow clone may have no tags). Exit 1: a break without a version bump.
set -euo pipefail
cd "$(dirname "$0")/.."

version_file=Sources/ProfileDrop/ProfileDrop.swift
version_of() { sed -n 's/.*static let version = "\([0-9.]*\)".*/\1/p'; }

baseline=${1:-}
if [ -z "$baseline" ]; then
    baseline=$(git describe --tags --abbrev=0 --match 'v[0-9]*' 2>/dev/null || true)
fi
if [ -z "$baseline" ]; then
    echo "api-check: SKIPPED, not failed: no release tag (v*) is reachable from HEAD, so the public API"
    echo "api-check: was not compared (a fresh or shallow clone may have none; try 'git fetch --tags')."
    exit 0
fi
if ! git cat-file -e "$baseline:$version_file" 2>/dev/null; then
    echo "api-check: $baseline has no ProfileDrop library yet: nothing to compare with."
    exit 0
fi

old=$(git show "$baseline:$version_file" | version_of)
new=$(version_of < "$version_file")
echo "api-check: ProfileDrop $new against $baseline ($old)"
status=0
swift package diagnose-api-breaking-changes "$baseline" --products ProfileDrop || status=$?
[ "$status" -eq 0 ] && exit 0

IFS=. read -r old_major old_minor _ <<<"$old"
IFS=. read -r new_major new_minor _ <<<"$new"
if [ "$new_major" -gt "$old_major" ] || { [ "$new_major" -eq 0 ] && [ "$new_minor" -gt "$old_minor" ]; }; then
    echo "api-check: the breaking changes above are allowed by the version bump $old -> $new;"
    echo "api-check: list them in CHANGELOG.md."
    exit 0
fi
echo "api-check: FAILED: the public API breaks (above) without a version bump: keep the API, or raise"
echo "api-check: ProfileDropAPI.version ($version_file) to the next minor (0.x) or major version." >&2
exit 1
