#!/usr/bin/env bash
# build-bundle.sh OUTDIR
#
# Builds the rootfs of the rloxsc demo OCI bundle at OUTDIR/rootfs:
#   - a busybox-static userland (Debian's busybox-static package),
#   - /etc/passwd and /etc/group with root and nobody,
#   - /bin/escape-demo, compiled statically from bundles/demo/escape-demo.c;
#   - /bin/seccomp-probe, compiled statically from bundles/test/seccomp-probe.c;
#   - /bin/adversary, compiled statically from bundles/test/adversary.c (tests/adversarial.rs).
# The bundle's config.json is not written here (see bundles/demo/).
#
# Idempotent and cheap to re-run: each step is skipped when its output is
# newer than its input.  Installs busybox-static / gcc / libc6-dev with
# apt-get when they are missing (needs root in that case).
set -euo pipefail

usage() { echo "usage: $0 OUTDIR" >&2; exit 2; }
[ $# -eq 1 ] || usage
[ -n "$1" ] || usage

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/bundles/demo/escape-demo.c"
OUTDIR="$1"
ROOTFS="$OUTDIR/rootfs"
BUSYBOX=/bin/busybox
CC="${CC:-gcc}"
APPLET_STAMP="$OUTDIR/.busybox-applets.stamp"

log() { echo "build-bundle: $*" >&2; }

apt_install() {
    if [ "$(id -u)" -ne 0 ]; then
        log "missing packages ($*) and not root: install them with apt-get"
        exit 1
    fi
    log "installing $*"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y --no-install-recommends "$@" >&2; then
        apt-get update >&2
        apt-get install -y --no-install-recommends "$@" >&2
    fi
}

is_static() {
    # A dynamic ELF carries a PT_INTERP program header.
    ! LC_ALL=C readelf -l "$1" 2>/dev/null | grep -q 'program interpreter'
}

# ---- prerequisites -------------------------------------------------------
if [ ! -x "$BUSYBOX" ] || ! is_static "$BUSYBOX"; then
    apt_install busybox-static
fi
[ -x "$BUSYBOX" ] || { log "$BUSYBOX still missing"; exit 1; }

if ! command -v "$CC" >/dev/null 2>&1; then
    apt_install gcc libc6-dev
fi
libc_a="$("$CC" -print-file-name=libc.a 2>/dev/null || true)"
if [ "${libc_a#/}" = "$libc_a" ] || [ ! -f "$libc_a" ]; then
    apt_install libc6-dev
fi

[ -f "$SRC" ] || { log "missing $SRC"; exit 1; }

# ---- directory skeleton --------------------------------------------------
mkdir -p "$ROOTFS"
chmod 0755 "$ROOTFS"
for d in bin sbin usr/bin usr/sbin proc sys dev etc tmp root var run mnt; do
    mkdir -p "$ROOTFS/$d"
done
chmod 1777 "$ROOTFS/tmp"
chmod 0700 "$ROOTFS/root"

# ---- busybox + applet symlinks -------------------------------------------
if [ ! -f "$ROOTFS/bin/busybox" ] || [ "$BUSYBOX" -nt "$ROOTFS/bin/busybox" ]; then
    log "copying $BUSYBOX"
    rm -f "$ROOTFS/bin/busybox"
    cp -L "$BUSYBOX" "$ROOTFS/bin/busybox"
    chmod 0755 "$ROOTFS/bin/busybox"
    rm -f "$APPLET_STAMP"
fi
if [ ! -f "$APPLET_STAMP" ] || [ "$ROOTFS/bin/busybox" -nt "$APPLET_STAMP" ]; then
    log "creating busybox applet links"
    # Ask the host's busybox for the list: no chroot needed.
    for a in $("$BUSYBOX" --list); do
        [ "$a" = busybox ] && continue
        case "$a" in */*|.|..|'') continue ;; esac
        ln -sf /bin/busybox "$ROOTFS/bin/$a"
    done
    touch "$APPLET_STAMP"
fi

# ---- /etc ----------------------------------------------------------------
# Rewrite a file only when its content changes (keeps mtimes stable).
write_file() {
    local dst="$1" mode="$2" content="$3"
    if [ ! -f "$dst" ] || [ "$(cat "$dst")" != "$content" ]; then
        printf '%s\n' "$content" >"$dst.tmp.$$"
        chmod "$mode" "$dst.tmp.$$"
        mv -f "$dst.tmp.$$" "$dst"
    fi
}
write_file "$ROOTFS/etc/passwd" 0644 \
'root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false'
write_file "$ROOTFS/etc/group" 0644 \
'root:x:0:
nogroup:x:65534:'

# ---- escape-demo -----------------------------------------------------------
DEMO="$ROOTFS/bin/escape-demo"
if [ ! -x "$DEMO" ] || [ "$SRC" -nt "$DEMO" ]; then
    log "compiling escape-demo"
    "$CC" -static -O2 -Wall -Wextra -o "$DEMO.tmp.$$" "$SRC"
    mv -f "$DEMO.tmp.$$" "$DEMO"
fi

# ---- test payloads -----------------------------------------------------------
PROBE_SRC="$ROOT/bundles/test/seccomp-probe.c"
PROBE="$ROOTFS/bin/seccomp-probe"
if [ ! -x "$PROBE" ] || [ "$PROBE_SRC" -nt "$PROBE" ]; then
    log "compiling seccomp-probe"
    "$CC" -static -O2 -Wall -Wextra -o "$PROBE.tmp.$$" "$PROBE_SRC"
    mv -f "$PROBE.tmp.$$" "$PROBE"
fi

ADV_SRC="$ROOT/bundles/test/adversary.c"
ADV="$ROOTFS/bin/adversary"
if [ ! -x "$ADV" ] || [ "$ADV_SRC" -nt "$ADV" ]; then
    log "compiling adversary"
    "$CC" -static -O2 -Wall -Wextra -o "$ADV.tmp.$$" "$ADV_SRC"
    mv -f "$ADV.tmp.$$" "$ADV"
fi

log "rootfs ready at $ROOTFS"
