#!/usr/bin/env bash
# Builds the swarm's OCI image offline with buildah, from scratch: the profiledrop binary, exactly
# the shared libraries it loads (as ldd names them, with the dynamic loader), and a static busybox
# as /bin/sh for the Kubernetes Job's command line (docs/swarm.md). Nothing is pulled from a
# registry, so it works where no base image can be fetched.
#
#   scripts/image.sh [--binary PATH] [NAME]
#       NAME       the image to commit to local storage (default: profiledrop:latest)
#       --binary   the binary to put in (default: the release build, built here if missing)
#
# Prints the image's id. Push it with, for example:
#   buildah push profiledrop:latest docker://registry.example.com/profiledrop:latest
set -euo pipefail
cd "$(dirname "$0")/.."

binary=""
name="profiledrop:latest"
while [ $# -gt 0 ]; do
    case $1 in
    --binary)
        [ $# -ge 2 ] || { echo "image: --binary needs a path" >&2; exit 2; }
        binary=$2
        shift 2
        ;;
    -h | --help)
        sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    -*)
        echo "image: unknown option $1" >&2
        exit 2
        ;;
    *)
        name=$1
        shift
        ;;
    esac
done

need_apt=()
command -v buildah >/dev/null || need_apt+=(buildah)
[ -x /bin/busybox ] || need_apt+=(busybox-static)
if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "image: needs ${need_apt[*]}: run as root, or install them yourself" >&2
        exit 1
    fi
    echo "image: installing ${need_apt[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# A static busybox needs no library of its own; a dynamic one would bring its own into the image.
if ldd /bin/busybox >/dev/null 2>&1; then
    echo "image: /bin/busybox is not static (install busybox-static)" >&2
    exit 1
fi

if [ -z "$binary" ]; then
    binary=.build/release/profiledrop
    swift build -c release --static-swift-stdlib --product profiledrop >&2
fi
[ -x "$binary" ] || { echo "image: $binary: not an executable file" >&2; exit 2; }

container=$(buildah from scratch)
cleanup() {
    buildah unmount "$container" >/dev/null 2>&1 || true
    buildah rm "$container" >/dev/null 2>&1 || true
}
trap cleanup EXIT
root=$(buildah mount "$container")

install -D -m 0755 "$binary" "$root/usr/local/bin/profiledrop"
# Every library the binary loads, by the path the loader finds it at (links resolved), and the
# loader itself: `ldd` prints "name => /path (address)" for the first and "/path (address)" for it.
ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u |
    while read -r library; do
        install -D -m 0644 "$(readlink -f "$library")" "$root$library"
    done
chmod 0755 "$root"/lib*/ld-linux*.so* 2>/dev/null || true
install -D -m 0755 /bin/busybox "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
# /proc and /dev are mount points: a container runtime mounts them (the Swift runtime reads the
# arguments from /proc/self/cmdline).
mkdir -p "$root/tmp" "$root/results" "$root/proc" "$root/dev"
chmod 1777 "$root/tmp"

buildah config \
    --entrypoint '["/usr/local/bin/profiledrop"]' --cmd '["--help"]' --workingdir / \
    --env PATH=/usr/local/bin:/bin \
    --label org.opencontainers.image.title=profiledrop \
    --label org.opencontainers.image.description="ProfileDrop's swarm runner" \
    "$container"
buildah unmount "$container" >/dev/null
buildah commit --quiet --rm "$container" "$name"
trap - EXIT
