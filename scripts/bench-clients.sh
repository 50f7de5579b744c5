#!/usr/bin/env bash
# bench-clients.sh - a benchmark, not a test: `docker run --rm true`, `podman run --rm true` and
# `ctr run --rm true` through rloxsc against the same client through runc, in one hyperfine session per
# client, printing medians and rloxsc/runc ratios. Reuses the client test suite's setup
# (tests/clients/lib.sh: apt installs, containerd/dockerd started by pid with contrib's configs, images
# imported from bundles/demo/rootfs) and stops what it started. Usage: scripts/bench-clients.sh [--runs N]
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
    for d in $(tac "$W/started-daemons" 2>/dev/null); do rx_stop_daemon "$d"; done
    rm -rf "$W"
}
trap cleanup EXIT

rx_install_packages docker.io containerd podman conmon runc jq hyperfine python3-yaml || exit 2
make -C "$REPO" --no-print-directory build bundles >"$W/make.log" 2>&1 || { tail -20 "$W/make.log"; exit 2; }
rx_install_rloxsc "$REPO/target/release/rloxsc" || exit 2
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
bench docker "$D run --rm --pull=never --network=none --runtime=rloxsc $IMG_DOCKER /bin/true" \
             "$D run --rm --pull=never --network=none --runtime=runc $IMG_DOCKER /bin/true"
bench podman "podman run --rm --pull=never --network=none --runtime $RLOXSC $IMG_PODMAN /bin/true" \
             "podman run --rm --pull=never --network=none --runtime $RUNC $IMG_PODMAN /bin/true"
n=0
bench ctr "bash -c 'ctr -n $CTR_NS run --rm --runtime io.containerd.runc.v2 --runc-binary $RLOXSC $IMG_CTR b\$RANDOM\$\$ /bin/true'" \
          "bash -c 'ctr -n $CTR_NS run --rm --runtime io.containerd.runc.v2 --runc-binary $RUNC $IMG_CTR b\$RANDOM\$\$ /bin/true'"
