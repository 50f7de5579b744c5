#!/usr/bin/env bash
# tests/clients/run.sh [docker|bridge|agents|podman|ctr|cri|cri2|codeeval|all]... - rloxsc driven by the real clients (as root).
#
# Installs what it needs from Debian's archive (docker.io, containerd, podman, conmon, runc, jq,
# containernetworking-plugins, python3-venv; /usr/sbin/policy-rc.d first, so no daemon auto-starts) and,
# for the CRI client, PyPI's CRI v1 stubs into a venv (tests/clients/cri-requirements.txt), builds
# rloxsc and the demo bundle (`make build bundles`), installs the binary as $RLOXSC (default
# /usr/local/sbin/rloxsc), starts containerd (twice: one for docker/ctr, one with the CRI plugin for
# Kubernetes' path) and dockerd itself (no bridge, no iptables: contrib/docker/daemon.json) and stops
# them by pid at the end, imports the bundle's rootfs as an image into each client, then runs every
# scenario of each client through rloxsc. Prints a per-client pass table and `N passed, M failed[, K skipped]`; exits
# non-zero if anything failed.
#
# Environment:
#   RLOXSC_BIN=PATH        use this rloxsc binary instead of building (`make build bundles`)
#   RLOXSC_NO_BUILD=1      do not run make; use target/x86_64-unknown-linux-gnu/release/rloxsc and bundles/demo/rootfs as they are
#   RLOXSC_INSTALL=PATH    where the clients find rloxsc (default /usr/local/sbin/rloxsc; name must be rloxsc)
#   RLOXSC_TEST_ROOTFS=DIR the image's root filesystem (default bundles/demo/rootfs)
#   RLOXSC_ALLOW_SKIP=1    a scenario whose prerequisite is missing is skipped instead of failing
#   RLOXSC_ONLY=REGEX      only scenarios whose name matches (development)
#   RLOXSC_KEEP_WORKDIR=1  keep /tmp/rloxsc-clients-<pid> (logs of every scenario) at the end
#   RLOXSC_CRI_VENV=DIR    the CRI client's venv (default /var/tmp/rloxsc-ci-cri-venv, reused if its pins match)
#   RLOXSC_CRI2_HANDLER=runc  cri2 (containerd 2.x) runs its runtime-neutral scenarios through the handler runc (baseline)
#   RLOXSC_CRI2_RUNC=PATH  that handler's runc (default /usr/sbin/runc); RLOXSC_CONTAINERD2_VERSION: containerd2.sh
#   codeeval: llm-sandbox and the docker SDK's archive pattern through Docker and Podman, rloxsc
#                          side by side with runc (tests/clients/codeeval.sh); RLOXSC_CODEEVAL_VENV=DIR (default
#                          /var/tmp/rloxsc-ci-codeeval-venv), RLOXSC_CODEEVAL_JOBS=N (llm-sandbox scenarios at a time, 2)
set -uo pipefail

RX_T0=$(date +%s)
export W=/tmp/rloxsc-clients-$$
# shellcheck source=tests/clients/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
export RX_LIB RLOXSC W

usage() { echo "usage: $0 [docker|bridge|agents|podman|ctr|cri|cri2|codeeval|all]..." >&2; exit 2; }
CLIENTS=()
for a in "${@:-all}"; do
    case $a in
        all) CLIENTS+=(docker bridge agents podman ctr cri cri2 codeeval) ;;
        docker|bridge|podman|ctr|cri|cri2) CLIENTS+=("$a") ;;
        agents) CLIENTS+=("$a") ;;   # ~3 min, the first time +1 min to build its image (cached)
        codeeval) CLIENTS+=("$a") ;;   # ~5-8 min, the first time +2-5 min to build its image (cached)
        -h|--help) usage ;;
        *) echo "unknown client: $a" >&2; usage ;;
    esac
done

mkdir -p "$W/logs"
: >"$W/results"
: >"$W/started-daemons"
RX_LISTENER_PID=

# cleanup: remove what the suite made, stop the daemons it started, remove the work dir.
# Runs once: at the end of a normal run (before the summary), or from the EXIT trap.
RX_CLEANED=0
cleanup() {
    local d ids
    [ "$RX_CLEANED" = 0 ] || return 0
    RX_CLEANED=1
    set +e
    echo
    echo "== cleanup"
    # containers this suite named (scenarios remove their own; this catches interrupted runs)
    if [ -x "$D" ] && rx_docker_up; then
        ids=$("$D" ps -aq --filter "name=^$NAME_PREFIX-" 2>/dev/null)
        [ -z "$ids" ] || "$D" rm -f $ids >/dev/null 2>&1
        "$D" image rm -f "$IMG_DOCKER" >/dev/null 2>&1
    fi
    if command -v podman >/dev/null && [ -n "${CONTAINERS_CONF:-}" ]; then
        ids=$(podman ps -aq --filter "name=^$NAME_PREFIX-" 2>/dev/null)
        [ -z "$ids" ] || podman rm -f -t 0 $ids >/dev/null 2>&1
        podman image rm -f "$IMG_PODMAN" >/dev/null 2>&1
    fi
    if command -v ctr >/dev/null && rx_containerd_up; then
        for d in $(ctr -n "$CTR_NS" container ls -q 2>/dev/null); do
            ctr -n "$CTR_NS" task kill -s SIGKILL "$d" >/dev/null 2>&1
            sleep 0.2
            ctr -n "$CTR_NS" task rm -f "$d" >/dev/null 2>&1
            ctr -n "$CTR_NS" container rm "$d" >/dev/null 2>&1
        done
        ctr -n "$CTR_NS" image rm "$IMG_CTR" >/dev/null 2>&1
        ctr -n "$CTR_NS" content ls -q 2>/dev/null | xargs -r ctr -n "$CTR_NS" content rm >/dev/null 2>&1
        ctr namespace rm "$CTR_NS" >/dev/null 2>&1
    fi
    # every pod of the CRI's containerd is this suite's (its own instance); cri2: containerd2.sh
    rx_cri_select cri
    if [ -x "$CRI_VENV/bin/python" ] && rx_cri_up; then
        for d in $("$CRI_VENV/bin/python" "$RX_DIR/cri_client.py" --socket "$CRI_SOCK" pods 2>/dev/null | jq -r '.items[]?.id'); do
            "$CRI_VENV/bin/python" "$RX_DIR/cri_client.py" --socket "$CRI_SOCK" stopp "$d" >/dev/null 2>&1
            "$CRI_VENV/bin/python" "$RX_DIR/cri_client.py" --socket "$CRI_SOCK" rmp "$d" >/dev/null 2>&1
        done
    fi
    rx_cri2_cleanup_pods
    ! declare -F ce_cleanup >/dev/null || ce_cleanup    # codeeval's containers and images (codeeval.sh)
    # daemons we started, last started first
    for d in $(tac "$W/started-daemons" 2>/dev/null); do
        echo "stopping $d (pid $(cat "$W/$d.pid" 2>/dev/null))"
        rx_stop_daemon "$d"
    done
    # the bridge dockerd's network namespace (its daemon is stopped above)
    [ ! -f "$W/bridge-netns" ] || ip netns del "$(cat "$W/bridge-netns")" 2>/dev/null
    # the pods' cgroup parent (rloxsc made it; empty once every pod is gone) and the CRI's state dir
    for d in /sys/fs/cgroup/*/"$CRI_CGROUP_PARENT" /sys/fs/cgroup/*/rloxsc-ci-brcri; do
        [ ! -d "$d" ] || rmdir "$d" 2>/dev/null || echo "cgroup $d is not empty: left in place"
    done
    rx_cri2_cleanup_dirs
    # the bridge namespace's CRI containerd (bridge.sh): its pods are removed by the scenario
    if [ -d "/run/${W##*/}-brcri" ] && ! grep -qF " /run/${W##*/}-brcri/" /proc/self/mountinfo; then
        rm -rf --one-file-system "/run/${W##*/}-brcri"
    fi
    if grep -qF -e " $W/" -e " $CRI_STATE/" /proc/self/mountinfo; then
        echo "mounts left under $W or $CRI_STATE: both left in place"; RLOXSC_KEEP_WORKDIR=1
    else
        rm -rf --one-file-system "$CRI_STATE"
    fi
    if [ "${RLOXSC_KEEP_WORKDIR:-0}" = 1 ]; then echo "work dir kept: $W"; else rm -rf --one-file-system "$W"; fi
}
trap 'rc=$?; cleanup; exit $rc' EXIT
trap 'echo "interrupted" >&2; exit 130' INT TERM

# ------------------------------------------------------------------------------------------------
echo "== preflight"
[ "$(id -u)" = 0 ] || { echo "run.sh needs root: the clients and rloxsc create real containers" >&2; exit 1; }
if [ ! -d /sys/fs/cgroup/memory ] || [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
    echo "these scenarios read cgroup v1 files (/sys/fs/cgroup/<controller>/...): this host is not cgroup v1" >&2
    exit 1
fi

# the scenarios assert rloxsc's compiled-in defaults: a host policy file would change them
if [ -e /etc/rloxsc/policy.toml ] || [ -n "${RLOXSC_POLICY:-}" ]; then
    echo "a policy file (/etc/rloxsc/policy.toml or RLOXSC_POLICY) changes the defaults these scenarios check: move it away" >&2
    exit 1
fi

PKGS=(jq python3 python3-yaml bsdutils)
for c in "${CLIENTS[@]}"; do
    case $c in
        docker) PKGS+=(docker.io containerd runc tini) ;;
        bridge) PKGS+=(docker.io containerd runc iproute2 podman conmon containernetworking-plugins) ;;
        agents) PKGS+=(docker.io containerd runc iproute2 podman conmon containernetworking-plugins python3-venv mmdebstrap) ;;
        podman) PKGS+=(podman conmon runc) ;;
        ctr) PKGS+=(containerd runc) ;;
        cri) PKGS+=(containerd containernetworking-plugins python3-venv) ;;
        cri2) PKGS+=(containernetworking-plugins python3-venv runc) ;;   # containerd 2.x: containerd2.sh
        codeeval) PKGS+=(docker.io containerd runc podman conmon python3-venv mmdebstrap iproute2) ;;
    esac
done
mapfile -t PKGS < <(printf '%s\n' "${PKGS[@]}" | awk '!seen[$0]++')
RX_SETUP_ERROR=
rx_install_packages "${PKGS[@]}" || RX_SETUP_ERROR="apt-get install of ${PKGS[*]} failed (see above)"

if [ -n "${RLOXSC_BIN:-}" ]; then
    SRC_BIN=$RLOXSC_BIN
elif [ "${RLOXSC_NO_BUILD:-0}" = 1 ]; then
    SRC_BIN=$RX_REPO/target/x86_64-unknown-linux-gnu/release/rloxsc
else
    echo "make build bundles"
    if ! make -C "$RX_REPO" --no-print-directory build bundles >"$W/make.log" 2>&1; then
        tail -n 30 "$W/make.log" >&2
        RX_SETUP_ERROR="make build bundles failed"
    fi
    SRC_BIN=$RX_REPO/target/x86_64-unknown-linux-gnu/release/rloxsc
fi
ROOTFS=${RLOXSC_TEST_ROOTFS:-$RX_REPO/bundles/demo/rootfs}
if [ -z "$RX_SETUP_ERROR" ]; then
    rx_install_rloxsc "$SRC_BIN" || RX_SETUP_ERROR="could not install $SRC_BIN as $RLOXSC"
fi
if [ -z "$RX_SETUP_ERROR" ]; then
    for f in bin/busybox bin/sh bin/escape-demo bin/seccomp-probe; do
        [ -e "$ROOTFS/$f" ] || RX_SETUP_ERROR="rootfs $ROOTFS has no /$f (make bundles)"
    done
fi
[ -n "$RX_SETUP_ERROR" ] || rx_rootfs_tar "$ROOTFS" "$W/rootfs.tar" || RX_SETUP_ERROR="could not tar $ROOTFS"

# ------------------------------------------------------------------------------------------------
# per-client setup: prints the reason and returns 1 if the client cannot be used

setup_docker() {
    rx_ensure_containerd || { echo "containerd did not start"; return 1; }
    rx_ensure_dockerd || { echo "dockerd did not start with the rloxsc runtime"; return 1; }
    "$D" import -c 'CMD ["/bin/sh"]' "$W/rootfs.tar" "$IMG_DOCKER" >/dev/null || { echo "docker import failed"; return 1; }
}

# Docker with a bridge and published ports, its dockerd in a network namespace of the suite's own
# (tests/clients/bridge.sh)
setup_bridge() {
    rx_ensure_containerd || { echo "containerd did not start"; return 1; }
    # shellcheck source=tests/clients/bridge.sh
    source "$RX_DIR/bridge.sh"
    rx_ensure_bridge_dockerd || { echo "the bridge dockerd did not start in its namespace"; return 1; }
}

# agent frameworks (SWE-ReX, smolagents, autogen) on the bridge dockerd (tests/clients/agents.sh)
setup_agents() {
    rx_ensure_containerd || { echo "containerd did not start"; return 1; }
    # shellcheck source=tests/clients/bridge.sh
    source "$RX_DIR/bridge.sh"
    # shellcheck source=tests/clients/agents.sh
    source "$RX_DIR/agents.sh"
    ag_setup
}

setup_podman() {
    rx_podman_conf || { echo "no usable contrib/podman/containers.conf"; return 1; }
    podman import --change 'CMD ["/bin/sh"]' "$W/rootfs.tar" "$IMG_PODMAN" >"$W/podman-import.log" 2>&1 \
        || { cat "$W/podman-import.log"; echo "podman import failed"; return 1; }
}

setup_ctr() {
    rx_ensure_containerd || { echo "containerd did not start"; return 1; }
    rx_mk_oci_archive "$ROOTFS" "$W/bbx-oci.tar" "$IMG_CTR" || { echo "could not build the OCI archive"; return 1; }
    ctr -n "$CTR_NS" image import "$W/bbx-oci.tar" >"$W/ctr-import.log" 2>&1 \
        || { cat "$W/ctr-import.log"; echo "ctr image import failed"; return 1; }
}

# (setup_cri2 runs this with the CRI_* variables of containerd 2.x: rx_cri_select, containerd2.sh)
setup_cri() {
    [ "${1:-}" = selected ] || rx_cri_select cri
    rx_cri_venv || { echo "could not install the CRI client's venv ($CRI_VENV) from PyPI"; return 1; }
    rx_ensure_containerd_cri || { echo "containerd with the CRI plugin did not start"; return 1; }
    rx_mk_oci_archive "$ROOTFS" "$W/cri-app-oci.tar" "$IMG_CRI" || { echo "could not build the OCI archive"; return 1; }
    # the sandbox ("pause") image: the same rootfs, its command /bin/sleep (CRI runs the image's command)
    rx_mk_oci_archive "$ROOTFS" "$W/cri-pause-oci.tar" "$IMG_CRI_PAUSE" '["/bin/sleep", "1000000"]' \
        || { echo "could not build the OCI archive"; return 1; }
    "$CRI_CTR" -a "$CRI_SOCK" -n "$CRI_NS" image import "$W/cri-app-oci.tar" >"$W/cri-import.log" 2>&1 \
        && "$CRI_CTR" -a "$CRI_SOCK" -n "$CRI_NS" image import "$W/cri-pause-oci.tar" >>"$W/cri-import.log" 2>&1 \
        || { cat "$W/cri-import.log"; echo "ctr image import (namespace $CRI_NS) failed"; return 1; }
    "$CRI_VENV/bin/python" "$RX_DIR/cri_client.py" --socket "$CRI_SOCK" images >"$W/cri-images.json" \
        && jq -e --arg a "$IMG_CRI" --arg p "$IMG_CRI_PAUSE" '[.images[].repo_tags[]] | index($a) and index($p)' "$W/cri-images.json" >/dev/null \
        || { cat "$W/cri-images.json"; echo "the CRI does not list the imported images"; return 1; }
    # one pod's whole life before the scenarios, so that containerd's one-time host setup (the first
    # pod makes /run/netns a shared bind mount of itself) is not counted by a scenario's leak check.
    # Best effort: if it fails, the scenarios show why.
    rx_cri_cycle_configs "$CRI_WORK" && "$CRI_VENV/bin/python" "$RX_DIR/cri_client.py" --socket "$CRI_SOCK" \
        cycle "$CRI_WORK/cycle-pod.json" "$CRI_WORK/cycle-ctr.json" "$CRI_HANDLER" || echo "(the first pod failed; continuing)"
    # the nginx-style image of the nginx-image scenario (built once, cached; containerd2.sh)
    rx_cri_nginx_import || echo "(no nginx image: the nginx-image scenario will say so)"
}

# containerd 2.x from Debian sid, unpacked privately, its own instance (tests/clients/containerd2.sh)
setup_cri2() {
    rx_cri_select cri2
    setup_cri selected
}

# llm-sandbox's image (scripts/build-llm-sandbox-image.sh) imported into docker and podman, the venv,
# dockerd with runc by path, a podman service per runtime (tests/clients/codeeval.sh)
setup_codeeval() {
    # shellcheck source=tests/clients/codeeval.sh
    source "$RX_DIR/codeeval.sh"
    ce_setup
}

for client in "${CLIENTS[@]}"; do
    echo
    echo "== $client"
    src=$client; [ "$client" != cri2 ] || src=cri    # cri2: cri.sh's scenarios against containerd 2.x
    export RX_CLIENT=$client RX_SOURCES="$RX_DIR/$src.sh"
    [ "$client" != agents ] || RX_SOURCES="$RX_DIR/bridge.sh $RX_DIR/agents.sh"   # (on bridge.sh's dockerd)
    RX_PREREQ_MISSING=
    if [ -n "$RX_SETUP_ERROR" ]; then
        RX_PREREQ_MISSING=$RX_SETUP_ERROR
    else
        ts=$(date +%s)
        # not in a subshell: setup exports what the scenarios need (CONTAINERS_CONF)
        "setup_$client" >"$W/setup-$client.log" 2>&1 \
            || RX_PREREQ_MISSING="$client setup: $(rx_last_line "$(cat "$W/setup-$client.log")")"
        echo "  (setup $(( $(date +%s) - ts ))s)"
    fi
    export RX_PREREQ_MISSING
    # shellcheck source=/dev/null
    source "$RX_DIR/$src.sh"
    list_var="$(echo "$client" | tr '[:lower:]' '[:upper:]')_SCENARIOS"
    while read -r name fn; do
        [ -n "$name" ] || continue
        [[ "$name" =~ ${RLOXSC_ONLY:-.} ]] || continue
        t "$name" "$fn"
    done <<<"${!list_var}"
    ! declare -F "report_$client" >/dev/null || "report_$client"   # a client's own report (codeeval's table)
done

RX_SUMMARY=$(rx_summary); RX_RC=$?
cleanup
echo
echo "== results ($(( $(date +%s) - RX_T0 ))s in all, installs and build included)"
printf '%s\n' "$RX_SUMMARY"
exit "$RX_RC"
