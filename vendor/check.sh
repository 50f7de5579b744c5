#!/usr/bin/env bash
# vendor/check.sh - shows that vendor/libcontainer is libcontainer 0.7.0 as published on crates.io
# plus exactly the patches in vendor/patches/ (in order), and nothing else.
#   bash vendor/check.sh        exit 0 when they match; otherwise prints the difference, exit 1
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version=0.7.0
sha256=2c28770cf8fb3acca0d168a10f5d9f8333d304af0b2ff5654029822d222d19f0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
crate="${CARGO_HOME:-$HOME/.cargo}/registry/cache/index.crates.io-1949cf8c6b5b557f/libcontainer-$version.crate"
if [ ! -f "$crate" ] || ! echo "$sha256  $crate" | sha256sum -c --quiet - 2>/dev/null; then
    crate="$tmp/libcontainer-$version.crate"
    curl -sSfL -o "$crate" "https://static.crates.io/crates/libcontainer/libcontainer-$version.crate"
fi
echo "$sha256  $crate" | sha256sum -c --quiet - || { echo "vendor/check.sh: checksum mismatch for $crate" >&2; exit 1; }
tar -xzf "$crate" -C "$tmp"
src="$tmp/libcontainer-$version"
# what vendoring leaves out of the published crate: its lock file, the original manifest, the tests
rm -rf "$src/Cargo.lock" "$src/Cargo.toml.orig" "$src/tests"
python3 - "$src/Cargo.toml" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace('[[test]]\nname = "as_sibling"\npath = "tests/as_sibling.rs"\n\n', '')
open(p, 'w').write(s)
PY
for p in "$here"/patches/*.patch; do
    patch -s -p1 -d "$src" < "$p" || { echo "vendor/check.sh: $(basename "$p") does not apply" >&2; exit 1; }
done
if diff -ru "$src" "$here/libcontainer"; then
    echo "vendor/check.sh: vendor/libcontainer = libcontainer $version + $(ls "$here"/patches/*.patch | wc -l) patch(es)"
else
    echo "vendor/check.sh: vendor/libcontainer differs from libcontainer $version + vendor/patches (above)" >&2
    exit 1
fi
