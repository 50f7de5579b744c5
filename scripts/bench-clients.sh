#!/usr/bin/env bash
# bench-clients.sh - a benchmark, not a test: `docker run --rm true`, `podman run --rm true`,
# `ctr run --rm true` and one CRI pod's whole life (RunPodSandbox, CreateContainer, StartContainer,
# StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox: tests/clients/cri_client.py cycle,
# handler rloxsc vs containerd's runc handler) through rloxsc against the same client through runc, in
# one hyperfine session per client, printing medians and rloxsc/runc ratios. Reuses the client test suite's setup
# (tests/clients/lib.sh: apt installs, containerd/dockerd started by pid with contrib's configs, images
# imported from bundles/demo/rootfs) and stops what it started. Usage: scripts/bench-clients.sh [--runs N]
# Exits 1 when a client could not run (or time) a container through either runtime, 2 on setup errors;
# `make bench` (scripts/bench.sh) runs it last.
set -uo pipefail
RUNS=20
[ "${1:-}" = --runs ] && RUNS=${2:?}
export W=/tmp/rloxsc-bench-clients-$$
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$REPO/tests/clients/lib.sh"
[ "$(id -u)" = 0 ] || { echo "bench-clients.sh must run as root" >&2; exit 2; }
mkdir -p "$W/logs"
: >"$W/started-daemons"
cleanup() {
    set +e
    "$D" image rm -f "$IMG_DOCKER" >/dev/null 2>&1
    podman image rm -f "$IMG_PODMAN" >/dev/null 2>&1
    ctr -n "$CTR_NS" image rm "$IMG_CTR" >/dev/null 2>&1
    if rx_cri_up; then  # pods left by a failed cycle (every pod of this containerd is ours)
        for d in $("$CRI_VENV/bin/python" "$REPO/tests/clients/cri_client.py" --socket "$CRI_SOCK" pods | jq -r '.items[]?.id'); do
            "$CRI_VENV/bin/python" "$REPO/tests/clients/cri_client.py" --socket "$CRI_SOCK" stopp "$d"
            "$CRI_VENV/bin/python" "$REPO/tests/clients/cri_client.py" --socket "$CRI_SOCK" rmp "$d"
        done >/dev/null 2>&1
    fi
    for d in $(tac "$W/started-daemons" 2>/dev/null); do rx_stop_daemon "$d"; done
    for d in /sys/fs/cgroup/*/"$CRI_CGROUP_PARENT"; do [ ! -d "$d" ] || rmdir "$d" 2>/dev/null; done
    grep -qF -e " $W/" -e " $CRI_STATE/" /proc/self/mountinfo || rm -rf --one-file-system "$W" "$CRI_STATE"
}
trap cleanup EXIT

rx_install_packages docker.io containerd podman conmon runc jq hyperfine python3-yaml \
    containernetworking-plugins python3-venv || exit 2
make -C "$REPO" --no-print-directory build bundles >"$W/make.log" 2>&1 || { tail -20 "$W/make.log"; exit 2; }
rx_install_rloxsc "$REPO/target/x86_64-unknown-linux-gnu/release/rloxsc" || exit 2
rx_rootfs_tar "$REPO/bundles/demo/rootfs" "$W/rootfs.tar" || exit 2
rx_ensure_containerd || { echo "containerd did not start" >&2; exit 2; }
# the test suite keeps runc out of containerd's PATH (to catch silent fallbacks); the benchmark needs
# plain runc as the reference runtime, so it puts it back for its own containerd
[ -d "$W/containerd/path" ] && ln -sf "$(command -v runc)" "$W/containerd/path/runc"
rx_ensure_dockerd || { echo "dockerd did not start" >&2; exit 2; }
"$D" import -c 'CMD ["/bin/sh"]' "$W/rootfs.tar" "$IMG_DOCKER" >/dev/null || exit 2
rx_podman_conf || exit 2
podman import --change 'CMD ["/bin/sh"]' "$W/rootfs.tar" "$IMG_PODMAN" >/dev/null 2>&1 || exit 2
rx_mk_oci_archive "$REPO/bundles/demo/rootfs" "$W/oci.tar" "$IMG_CTR" || exit 2
ctr -n "$CTR_NS" image import "$W/oci.tar" >/dev/null 2>&1 || exit 2

RUNC=$(command -v runc)
bench() { # NAME RLOXSC_CMD RUNC_CMD
    local c
    for c in "$2" "$3"; do # a failing command is reported with its output, not timed
        bash -c "$c" >"$W/$1.try" 2>&1 || { echo "$1: '$c' failed:"; tail -5 "$W/$1.try"; return 1; }
    done
    hyperfine -N --warmup 2 --runs "$RUNS" --export-json "$W/$1.json" -n rloxsc "$2" -n runc "$3" >/dev/null 2>"$W/$1.err" \
        || { echo "$1: hyperfine failed:"; tail -5 "$W/$1.err"; return 1; }
    jq -r --arg c "$1" '[.results[] | {(.command): (.median*1000)}] | add | "\($c)\t\(.rloxsc|floor)\t\(.runc|floor)\t\((.rloxsc/.runc*100|floor)/100)"' "$W/$1.json"
}
printf 'client\trloxsc ms\trunc ms\trloxsc/runc (medians, %s runs)\n' "$RUNS"
rc=0
bench docker "$D run --rm --pull=never --network=none --runtime=rloxsc $IMG_DOCKER /bin/true" \
             "$D run --rm --pull=never --network=none --runtime=runc $IMG_DOCKER /bin/true" || rc=1
bench podman "podman run --rm --pull=never --network=none --runtime $RLOXSC $IMG_PODMAN /bin/true" \
             "podman run --rm --pull=never --network=none --runtime $RUNC $IMG_PODMAN /bin/true" || rc=1
n=0
bench ctr "bash -c 'ctr -n $CTR_NS run --rm --runtime io.containerd.runc.v2 --runc-binary $RLOXSC $IMG_CTR b\$RANDOM\$\$ /bin/true'" \
          "bash -c 'ctr -n $CTR_NS run --rm --runtime io.containerd.runc.v2 --runc-binary $RUNC $IMG_CTR b\$RANDOM\$\$ /bin/true'" || rc=1

# CRI: the test suite's CRI containerd (its own socket; the shared PATH dir above has runc, so the
# default handler "runc" works here), a pod of one container (sh waiting for SIGTERM) per cycle
if rx_cri_venv >"$W/cri-setup.log" 2>&1 && rx_ensure_containerd_cri >>"$W/cri-setup.log" 2>&1 \
    && rx_mk_oci_archive "$REPO/bundles/demo/rootfs" "$W/cri-app.tar" "$IMG_CRI" \
    && rx_mk_oci_archive "$REPO/bundles/demo/rootfs" "$W/cri-pause.tar" "$IMG_CRI_PAUSE" '["/bin/sleep", "1000000"]' \
    && ctr -a "$CRI_SOCK" -n "$CRI_NS" image import "$W/cri-app.tar" >>"$W/cri-setup.log" 2>&1 \
    && ctr -a "$CRI_SOCK" -n "$CRI_NS" image import "$W/cri-pause.tar" >>"$W/cri-setup.log" 2>&1 \
    && rx_cri_cycle_configs "$W/cri"; then
    CRI_CYCLE="$CRI_VENV/bin/python $REPO/tests/clients/cri_client.py --socket $CRI_SOCK cycle $W/cri/cycle-pod.json $W/cri/cycle-ctr.json"
    bench cri "$CRI_CYCLE rloxsc" "$CRI_CYCLE runc" || rc=1
else
    echo "cri: not measured (setup failed):"; tail -n 5 "$W/cri-setup.log"
    rc=1
fi
exit "$rc"
