#!/usr/bin/env bash
# deps.sh - install everything rloxsc needs to build, run its demo and pass its tests on Debian 12,
# as root. Idempotent and quick when everything is already there.
#   scripts/deps.sh          build + demo + test dependencies (runc among them)
#   scripts/deps.sh --bench  also the benchmark peers (crun, hyperfine)
#   scripts/deps.sh --fuzz   also cargo-fuzz (from crates.io; ~1.5 min to build on 2 cores), for fuzz/
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

# runc: tests compare rloxsc's decisions with runc's on the same bundle (tests/caller_seccomp.rs)
# iproute2, nftables: tests/network.rs makes veth pairs and reads the egress filter back with nft
pkgs=(build-essential pkg-config libseccomp-dev libelf-dev zlib1g-dev busybox-static python3 git ca-certificates runc iproute2 nftables)
if [ "${1:-}" = "--bench" ]; then
    pkgs+=(crun hyperfine jq time)
fi

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Rust: the toolchain comes from rustup (Debian 12's rustc is too old for libcontainer).
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "deps: cargo not found. Install a Rust toolchain (>= 1.85) with rustup, then re-run." >&2
    exit 1
fi
if command -v rustup >/dev/null 2>&1; then
    for comp in rustfmt clippy; do
        rustup component list --installed 2>/dev/null | grep -q "^$comp" || rustup component add "$comp" >/dev/null 2>&1 || true
    done
fi
[ -f /usr/lib/x86_64-linux-gnu/libseccomp.a ] || { echo "deps: static libseccomp (libseccomp-dev) missing" >&2; exit 1; }
# cargo-fuzz builds libFuzzer (C++, from build-essential) into the targets; it runs on the stable
# toolchain with RUSTC_BOOTSTRAP=1 (scripts/fuzz.sh), so no nightly is needed.
if [ "${1:-}" = "--fuzz" ] && ! cargo fuzz --version 2>/dev/null | grep -q '^cargo-fuzz 0\.13\.'; then
    echo "deps: installing cargo-fuzz 0.13.2 (cargo install --locked)"
    cargo install --locked --version 0.13.2 cargo-fuzz
fi
echo "deps: ok"
