#!/usr/bin/env bash
# build-agents-image.sh [OUTDIR]      (default: bundles/agents)
#
# Builds OUTDIR/rootfs, the image the agent-framework client tests (tests/clients/agents.sh) run
# SWE-ReX's DockerDeployment, smolagents' DockerExecutor and autogen's DockerJupyterServer on. Their
# own images come from Docker Hub and quay.io (python:3.11, python:3.12-bullseye,
# quay.io/jupyter/docker-stacks-foundation), which are not reachable here, and each would be built
# with `pip install` from inside a container. This one is a Debian 12 (bookworm) root filesystem from
# Debian's archive (mmdebstrap: python3, python3-venv, bash, procps, libstdc++6 for pyzmq) with one venv, /opt/agents, made in
# a chroot from wheels the host downloaded from PyPI first (tests/clients/agents-image-requirements.txt):
# swe-rex (its `swerex-remote` server), jupyter_kernel_gateway, jupyter_client, ipykernel. What the
# frameworks' Dockerfiles would install, at pinned versions; the chroot never reaches the network.
# Only the root filesystem: the test setup imports it (with PATH, CMD, EXPOSE) under each framework's name.
#
# Cached: OUTDIR/.rootfs.stamp holds a hash of this script's commands (comments left out) and of the
# requirements; when it matches, nothing is done. FORCE=1 rebuilds. A rebuild goes to OUTDIR/rootfs.new
# and replaces the old rootfs only when it succeeded. Installs mmdebstrap with apt-get when missing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUTDIR="${1:-$ROOT/bundles/agents}"
ROOTFS="$OUTDIR/rootfs"
STAMP="$OUTDIR/.rootfs.stamp"
REQ="$ROOT/tests/clients/agents-image-requirements.txt"
SUITE=bookworm
MIRROR="${WORKLOAD_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${WORKLOAD_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
PACKAGES=(python3 python3-venv bash procps libstdc++6)

log() { echo "build-agents-image: $*" >&2; }

[ "$(id -u)" = 0 ] || { log "needs root (mmdebstrap in root mode, a chroot, root-owned files)"; exit 1; }

want="$( (grep -v '^[[:space:]]*#' "${BASH_SOURCE[0]}"; cat "$REQ") | sha256sum | cut -d' ' -f1) $MIRROR $SECURITY_MIRROR"
if [ "${FORCE:-0}" != 1 ] && [ -x "$ROOTFS/opt/agents/bin/swerex-remote" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
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
WHEELS="$OUTDIR/wheels.new"
rm -rf "$NEW" "$WHEELS"
# a failed build leaves nothing behind (bundles/.gitignore ignores rootfs/ and .rootfs.stamp)
cleanup() {
    ! mountpoint -q "$NEW/wheels" 2>/dev/null || umount "$NEW/wheels"
    rm -rf "$NEW" "$WHEELS"
}
trap cleanup EXIT
t0=$(date +%s)

# the wheels, on the host (PyPI), for the image's CPython 3.11 (bookworm's) on x86_64
log "pip download -r $REQ"
python3 -m pip download --disable-pip-version-check -q --only-binary :all: \
    --python-version 3.11 --implementation cp --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --platform any \
    -d "$WHEELS" -r "$REQ" >&2

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

# the venv, made inside the image by its own python, from the downloaded wheels only
log "venv /opt/agents (no index: the wheels only)"
mkdir -p "$NEW/wheels"
cp "$REQ" "$WHEELS/requirements.txt"
mount --bind -o ro "$WHEELS" "$NEW/wheels"
chroot "$NEW" /usr/bin/python3 -m venv /opt/agents >&2
chroot "$NEW" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root /opt/agents/bin/pip install \
    --disable-pip-version-check -q --no-index --find-links /wheels -r /wheels/requirements.txt >&2
umount "$NEW/wheels"
rmdir "$NEW/wheels"
# the kernel gateway's working directory (autogen's default work_dir), world-writable like /tmp
mkdir -p "$NEW/workspace"
chmod 1777 "$NEW/tmp" "$NEW/workspace"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$NEW/etc/hosts"
rm -rf "$NEW"/var/lib/apt/lists/* "$NEW"/var/cache/apt/*.bin "$NEW"/var/cache/apt/archives/*.deb "$NEW/root/.cache"
chroot "$NEW" /opt/agents/bin/pip freeze --disable-pip-version-check >"$NEW/etc/agents-image-versions"

rm -rf "$ROOTFS"
mv "$NEW" "$ROOTFS"
echo "$want" >"$STAMP"
log "rootfs ready at $ROOTFS ($(du -sh "$ROOTFS" | cut -f1), $(( $(date +%s) - t0 )) s)"
