#!/usr/bin/env bash
# build-workload-bundle.sh [OUTDIR]      (default: bundles/workload)
#
# Builds OUTDIR/rootfs, a Debian 12 (bookworm) root filesystem for the workload report
# (scripts/workload-report.sh) and the code-eval example (contrib/code-eval/), with mmdebstrap from
# Debian's archive: python3 + CPython's regression test suite (libpython3.11-testsuite), nodejs,
# gcc + libc6-dev, tzdata and netbase, plus an /etc/hosts and CPython's test_sqlite3 (see below). The
# test drivers are not in the image: they are bind-mounted read-only at run time from scripts/workload/.
#
# Cached: OUTDIR/.rootfs.stamp holds a hash of this script's commands (comments left out: package
# list, mirrors, options, extra steps); when it matches, nothing is done. FORCE=1 rebuilds. A rebuild goes to OUTDIR/rootfs.new and replaces the old
# rootfs only when it succeeded. Installs mmdebstrap with apt-get when missing (needs root anyway:
# the rootfs holds root-owned files).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUTDIR="${1:-$ROOT/bundles/workload}"
ROOTFS="$OUTDIR/rootfs"
STAMP="$OUTDIR/.rootfs.stamp"
SUITE=bookworm
MIRROR="${WORKLOAD_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${WORKLOAD_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
PACKAGES=(python3 libpython3.11-testsuite nodejs gcc libc6-dev tzdata netbase)

log() { echo "build-workload-bundle: $*" >&2; }

[ "$(id -u)" = 0 ] || { log "needs root (mmdebstrap in root mode, root-owned files)"; exit 1; }

want="$(grep -v '^[[:space:]]*#' "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1) $MIRROR $SECURITY_MIRROR"
if [ "${FORCE:-0}" != 1 ] && [ -x "$ROOTFS/usr/bin/python3" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
    log "rootfs up to date at $ROOTFS (FORCE=1 rebuilds)"
    exit 0
fi

if ! command -v mmdebstrap >/dev/null 2>&1; then
    log "installing mmdebstrap"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends mmdebstrap >&2 ||
        { apt-get update >&2 && apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends mmdebstrap >&2; }
fi

mkdir -p "$OUTDIR"
NEW="$ROOTFS.new"
rm -rf "$NEW"
t0=$(date +%s)
log "mmdebstrap $SUITE (${PACKAGES[*]}) into $NEW"
include="$(IFS=,; echo "${PACKAGES[*]}")"
mmdebstrap --mode=root --variant=essential --include="$include" \
    --aptopt='Acquire::Languages "none"' \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    "$SUITE" "$NEW" \
    "deb $MIRROR $SUITE main" \
    "deb $MIRROR $SUITE-updates main" \
    "deb $SECURITY_MIRROR $SUITE-security main" >&2

# CPython 3.11.2's "make install" leaves out Lib/test/test_sqlite3 (missing from TESTSUBDIRS in
# Makefile.pre.in, fixed in later 3.11 releases), so Debian's libpython3.11-testsuite lacks it. Take
# it from the same upstream tarball Debian builds from (python3.11_3.11.2.orig.tar.gz in Debian's
# pool), pinned to the SHA-256 listed for it in bookworm's Sources index.
PYORIG_URL="$MIRROR/pool/main/p/python3.11/python3.11_3.11.2.orig.tar.gz"
PYORIG_SHA256=2411c74bda5bbcfcddaf4531f66d1adc73f247f529aee981b029513aefdbf849
pyver="$(dpkg-query --admindir="$NEW/var/lib/dpkg" -W -f='${Version}' python3.11)"
if [ "${pyver%%-*}" = 3.11.2 ] && [ ! -d "$NEW/usr/lib/python3.11/test/test_sqlite3" ]; then
    orig="$OUTDIR/.python3.11_3.11.2.orig.tar.gz"
    if [ ! -f "$orig" ] || ! echo "$PYORIG_SHA256  $orig" | sha256sum -c --quiet - 2>/dev/null; then
        log "downloading $PYORIG_URL for test_sqlite3"
        curl -fsSL --retry 3 -o "$orig.part" "$PYORIG_URL"
        echo "$PYORIG_SHA256  $orig.part" | sha256sum -c --quiet - || { log "checksum mismatch: $PYORIG_URL"; rm -f "$orig.part"; exit 1; }
        mv "$orig.part" "$orig"
    fi
    tar -xzf "$orig" -C "$NEW/usr/lib/python3.11/test" --strip-components=3 Python-3.11.2/Lib/test/test_sqlite3
    log "added test_sqlite3 from the upstream 3.11.2 tarball"
elif [ ! -d "$NEW/usr/lib/python3.11/test/test_sqlite3" ]; then
    log "warning: python3.11 $pyver: no test_sqlite3 and no pinned source for it; the report will show it missing"
fi

# Mount points the bundles' configs use; /tmp is a tmpfs at run time.
mkdir -p "$NEW/workload" "$NEW/out" "$NEW/snippets"
chmod 1777 "$NEW/tmp"
# what Docker bind-mounts into every container; without it "localhost" does not resolve
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$NEW/etc/hosts"
# the apt lists and caches are of no use inside a container
rm -rf "$NEW"/var/lib/apt/lists/* "$NEW"/var/cache/apt/*.bin "$NEW"/var/cache/apt/archives/*.deb

# record what is inside, for the report
chroot_pkgs() { dpkg-query --admindir="$NEW/var/lib/dpkg" -W -f='${Package} ${Version}\n' "$@"; }
chroot_pkgs python3.11 libpython3.11-testsuite nodejs gcc-12 libc6 >"$NEW/etc/workload-versions" 2>/dev/null || true

rm -rf "$ROOTFS"
mv "$NEW" "$ROOTFS"
echo "$want" >"$STAMP"
log "rootfs ready at $ROOTFS ($(du -sh "$ROOTFS" | cut -f1), $(( $(date +%s) - t0 )) s)"
cat "$ROOTFS/etc/workload-versions" >&2
