#!/usr/bin/env bash
# build-llm-sandbox-image.sh [OUTDIR]      (default: bundles/llm-sandbox)
#
# Builds OUTDIR/rootfs, a Debian 12 (bookworm) root filesystem that stands in for llm-sandbox's default
# Python image (ghcr.io/vndee/sandbox-python-311-bullseye, not reachable here) in the code-eval client
# tests (tests/clients/codeeval.sh), with mmdebstrap from Debian's archive: python3 (+ venv, whose
# ensurepip wheels give the session's venv its pip), python-is-python3 (llm-sandbox runs `python -m
# venv`), matplotlib (its plot capture), IPython (its InteractiveSandboxSession) and procps, plus the
# directories llm-sandbox's image has: /sandbox (its WORKDIR), /tmp/sandbox_output, /tmp/sandbox_plots.
# Only the root filesystem: the test setup imports it into docker and podman (with WORKDIR, CMD, ENV).
#
# Cached: OUTDIR/.rootfs.stamp holds a hash of this script's commands (comments left out: package
# list, mirrors, options, extra steps); when it matches, nothing is done. FORCE=1 rebuilds. A rebuild
# goes to OUTDIR/rootfs.new and replaces the old rootfs only when it succeeded (a failed one is removed). Installs mmdebstrap
# with apt-get when missing (needs root anyway: the rootfs holds root-owned files).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUTDIR="${1:-$ROOT/bundles/llm-sandbox}"
ROOTFS="$OUTDIR/rootfs"
STAMP="$OUTDIR/.rootfs.stamp"
SUITE=bookworm
MIRROR="${WORKLOAD_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${WORKLOAD_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
PACKAGES=(python3 python3-venv python-is-python3 python3-matplotlib python3-ipython procps)

log() { echo "build-llm-sandbox-image: $*" >&2; }

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
# a failed build leaves nothing behind (bundles/.gitignore ignores rootfs/ and .rootfs.stamp, not this)
trap 'rm -rf "$NEW"' EXIT
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

# what llm-sandbox's image has (its Dockerfile: WORKDIR /sandbox; mkdir /tmp/sandbox_output
# /tmp/sandbox_plots); /tmp stays world-writable with the sticky bit
mkdir -p "$NEW/sandbox" "$NEW/tmp/sandbox_output" "$NEW/tmp/sandbox_plots"
chmod 1777 "$NEW/tmp"
# what Docker bind-mounts into every container; without it "localhost" does not resolve
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$NEW/etc/hosts"
# the apt lists and caches are of no use inside a container
rm -rf "$NEW"/var/lib/apt/lists/* "$NEW"/var/cache/apt/*.bin "$NEW"/var/cache/apt/archives/*.deb

# record what is inside, for the test logs
dpkg-query --admindir="$NEW/var/lib/dpkg" -W -f='${Package} ${Version}\n' \
    python3.11 python3.11-venv python3-matplotlib python3-ipython procps >"$NEW/etc/llm-sandbox-image-versions" 2>/dev/null || true

rm -rf "$ROOTFS"
mv "$NEW" "$ROOTFS"
echo "$want" >"$STAMP"
log "rootfs ready at $ROOTFS ($(du -sh "$ROOTFS" | cut -f1), $(( $(date +%s) - t0 )) s)"
cat "$ROOTFS/etc/llm-sandbox-image-versions" >&2
