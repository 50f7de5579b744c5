#!/usr/bin/env bash
# vendor/check.sh - shows that each crate under vendor/ is its release as published on crates.io plus
# exactly its patches (in order), and nothing else:
#   vendor/libcontainer = libcontainer 0.7.0 + vendor/patches/*.patch
#   vendor/libcgroups   = libcgroups 0.7.0   + vendor/patches/libcgroups/*.patch
#   bash vendor/check.sh        exit 0 when they all match; otherwise prints the difference, exit 1
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

# check NAME VERSION SHA256 PATCH_DIR
check() {
    local name=$1 version=$2 sha256=$3 patches=$4 crate src p n
    crate="${CARGO_HOME:-$HOME/.cargo}/registry/cache/index.crates.io-1949cf8c6b5b557f/$name-$version.crate"
    if [ ! -f "$crate" ] || ! echo "$sha256  $crate" | sha256sum -c --quiet - 2>/dev/null; then
        crate="$tmp/$name-$version.crate"
        curl -sSfL -o "$crate" "https://static.crates.io/crates/$name/$name-$version.crate"
    fi
    echo "$sha256  $crate" | sha256sum -c --quiet - || { echo "vendor/check.sh: checksum mismatch for $crate" >&2; exit 1; }
    tar -xzf "$crate" -C "$tmp"
    src="$tmp/$name-$version"
    # what vendoring leaves out of the published crate: its lock file, the original manifest, the tests
    rm -rf "$src/Cargo.lock" "$src/Cargo.toml.orig" "$src/tests"
    python3 - "$src/Cargo.toml" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace('[[test]]\nname = "as_sibling"\npath = "tests/as_sibling.rs"\n\n', '')
open(p, 'w').write(s)
PY
    n=0
    for p in "$patches"/*.patch; do
        [ -e "$p" ] || continue
        patch -s -p1 -d "$src" < "$p" || { echo "vendor/check.sh: $(basename "$p") does not apply to $name" >&2; exit 1; }
        n=$((n + 1))
    done
    if diff -ru "$src" "$here/$name"; then
        echo "vendor/check.sh: vendor/$name = $name $version + $n patch(es)"
    else
        echo "vendor/check.sh: vendor/$name differs from $name $version + its patches (above)" >&2
        failed=1
    fi
}

check libcontainer 0.7.0 2c28770cf8fb3acca0d168a10f5d9f8333d304af0b2ff5654029822d222d19f0 "$here/patches"
check libcgroups 0.7.0 d85e8f0bca12f0d04fdd8f14858022018cd1667b4f971d6b09058fe90323e19d "$here/patches/libcgroups"
exit "$failed"
