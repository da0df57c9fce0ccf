#!/usr/bin/env bash
# Installs what ProfileDrop needs on a fresh Debian machine (as root) and builds it.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
pkg-config --exists libsodium 2>/dev/null || need_apt+=(libsodium-dev)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
# iproute2 lets the LAN test build its own network namespaces joined by a veth pair.
command -v ip >/dev/null || need_apt+=(iproute2)
# tshark runs the Wireshark dissector over the golden captures in the tests.
command -v tshark >/dev/null || need_apt+=(tshark)
# tmux drives the live terminal session in the tests as a person would (keys in, screen out).
command -v tmux >/dev/null || need_apt+=(tmux)
# rsvg-convert draws the --timeline pictures in the tests.
command -v rsvg-convert >/dev/null || need_apt+=(librsvg2-bin)
# buildah and a static busybox build the swarm's image offline (scripts/image.sh, SwarmImageTests).
command -v buildah >/dev/null || need_apt+=(buildah)
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || need_apt+=(busybox-static)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "setup: installing ${need_apt[*]}"
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: run as root (or install ${need_apt[*]} yourself)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    # tshark asks whether non-root users may capture; answer no without a prompt.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq
    apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# The Python noiseprotocol package is the third-party Noise peer of the interop tests.
if ! python3 -c 'import noise.connection' 2>/dev/null; then
    echo "setup: installing the Python package noiseprotocol"
    python3 -m pip install -q noiseprotocol 2>/dev/null \
        || python3 -m pip install -q --break-system-packages noiseprotocol
fi

# The Python cryptography package lets scripts/check-vectors.py recompute the conformance vectors.
if ! python3 -c 'import cryptography.hazmat.primitives.ciphers.aead' 2>/dev/null; then
    echo "setup: installing the Python package cryptography"
    python3 -m pip install -q cryptography 2>/dev/null \
        || python3 -m pip install -q --break-system-packages cryptography
fi

echo "setup: building (release, with the Swift runtime linked in)"
swift build -c release --static-swift-stdlib --product profiledrop
echo "setup: a linker warning about mktemp, if shown above, comes from Foundation's static library, not from this package (CONTRIBUTING.md, \"Build\")"
test -x .build/release/profiledrop
