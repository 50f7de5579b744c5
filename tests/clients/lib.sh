# shellcheck shell=bash
# tests/clients/lib.sh - shared helpers of the client suite (sourced by run.sh and by every scenario).
#
# What is here:
#   - a tiny test framework: `t NAME CMD...` runs CMD in its own bash (set -e, a timeout, output to a
#     log file) and records pass / fail / skip with the reason; `rx_summary` prints the per-client
#     table and the final line `N passed, M failed[, K skipped]`. A scenario whose prerequisite is
#     missing calls `skip REASON`: that counts as a FAILURE unless RLOXSC_ALLOW_SKIP=1.
#   - assertions (`fail`, `assert_eq`, `assert_match`, `assert_no_match`, `assert_le`) and `run_cap`,
#     which runs a command capturing RC, OUT and ERR (carriage returns stripped, both logged);
#   - installs from Debian's archive (policy-rc.d written first so no daemon auto-starts), daemons
#     started and stopped by pid, images imported from the bundle rootfs (docker import, podman import,
#     and an OCI image-layout archive for `ctr image import` built by rx_mk_oci_archive);
#   - the hardening probe run inside containers and its checks, and the leak snapshot.
#
# Variables (exported by run.sh so each scenario's bash sees them):
#   W          work dir (/tmp/rloxsc-clients-<pid>), removed at the end
#   RLOXSC     the installed runtime (file name must be rloxsc; default /usr/local/sbin/rloxsc)
#   RX_CLIENT  the client whose scenarios are running (docker|podman|ctr|cri|cri2)

RX_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RX_REPO=$(cd "$RX_DIR/../.." && pwd)
RX_LIB="$RX_DIR/lib.sh"
: "${W:=/tmp/rloxsc-clients-$$}"
: "${RLOXSC:=${RLOXSC_INSTALL:-/usr/local/sbin/rloxsc}}"
: "${RX_CLIENT:=none}"

D=/usr/bin/docker                 # NOT /usr/local/bin/docker (a newer CLI may shadow it in PATH)
CTR_NS=rloxsc-ci                  # ctr's containers live in their own containerd namespace
IMG_DOCKER=rloxsc-ci-bbx:latest
IMG_PODMAN=localhost/rloxsc-ci-bbx:latest
IMG_CTR=docker.io/library/rloxsc-ci-bbx:latest
# CRI: a containerd of the suite's own (its own socket, state and root; the CRI plugin on), so a
# containerd already running on the host, with or without CRI, is never reconfigured or reused.
# Pods are in containerd's namespace k8s.io, so the shim calls rloxsc with --root /run/containerd/runc/k8s.io.
CRI_STATE=/run/${W##*/}-cri                     # containerd's state dir; its socket is in there
CRI_SOCK=$CRI_STATE/containerd.sock
CRI_NS=k8s.io
CRI_RUNC_ROOT=/run/containerd/runc/$CRI_NS     # the shim's default Root + namespace: rloxsc's --root
CRI_CGROUP_PARENT=rloxsc-ci-cri                # every pod's cgroup_parent (as kubelet's pod cgroup)
CRI_VENV=${RLOXSC_CRI_VENV:-/var/tmp/rloxsc-ci-cri-venv}
IMG_CRI=docker.io/library/rloxsc-ci-bbx:latest
IMG_CRI_PAUSE=docker.io/library/rloxsc-ci-pause:latest   # the sandbox image: the bundle's /bin/sleep
NAME_PREFIX=rxci                  # every named container starts with this (cleanup removes them)
# rloxsc's capability allowlist as a mask: CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP
# NET_BIND_SERVICE AUDIT_WRITE SETFCAP (bits 0 1 3 4 5 6 7 8 10 29 31).
RX_CAP_ALLOWED=0xa00005fb
RX_PIDS_CEILING=4096
RX_MEMORY_CEILING=17179869184     # 16 GiB
# interfaces a fresh netns may hold besides lo: fallback devices of loaded tunnel modules
RX_FALLBACK_NETDEVS="lo sit0 tunl0 ip6tnl0 gre0 gretap0 erspan0 ip6gre0 ip6_vti0 ip_vti0"
# every capability the kernel knows except SYS_RESOURCE (not in this host's bounding set)
RX_ALL_CAPS="AUDIT_CONTROL AUDIT_READ AUDIT_WRITE BLOCK_SUSPEND BPF CHECKPOINT_RESTORE CHOWN DAC_OVERRIDE
DAC_READ_SEARCH FOWNER FSETID IPC_LOCK IPC_OWNER KILL LEASE LINUX_IMMUTABLE MAC_ADMIN MAC_OVERRIDE MKNOD
NET_ADMIN NET_BIND_SERVICE NET_BROADCAST NET_RAW PERFMON SETFCAP SETGID SETPCAP SETUID SYS_ADMIN SYS_BOOT
SYS_CHROOT SYS_MODULE SYS_NICE SYS_PACCT SYS_PTRACE SYS_RAWIO SYS_TIME SYS_TTY_CONFIG SYSLOG WAKE_ALARM"
# a payload that exits 0 at once on SIGTERM (sh handles the trap when `wait` is interrupted)
RX_LONG='trap "exit 0" TERM; sleep 1000 & wait'
# records SIGUSR1 in /tmp/rxci-usr1 (rloxsc's writable tmpfs), exits 0 on SIGTERM
RX_SIGNALS='trap "echo got-usr1 >> /tmp/rxci-usr1" USR1; trap "exit 0" TERM; while :; do sleep 1000 & wait $!; done'

# ---------------------------------------------------------------------------------------------------
# framework

rx_note() { printf '%s\n' "$*" >&2; }

# fail MESSAGE: the scenario fails with MESSAGE as its reason
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

# skip REASON: a prerequisite is missing (a failure unless RLOXSC_ALLOW_SKIP=1)
skip() { printf 'SKIP: %s\n' "$*" >&2; exit 77; }

# run_cap CMD...: run CMD with stdin from $RX_STDIN (default /dev/null); sets RC, OUT (stdout), ERR (stderr), both logged
run_cap() {
    local o e
    o=$(mktemp -p "$W" out.XXXXXX); e=$(mktemp -p "$W" err.XXXXXX)
    printf '+ %s\n' "$(rx_quote "$@")" >&2
    set +e
    "$@" >"$o" 2>"$e" <"${RX_STDIN:-/dev/null}"
    RC=$?
    set -e
    OUT=$(tr -d '\r' <"$o"); ERR=$(tr -d '\r' <"$e")
    rm -f "$o" "$e"
    [ -z "$OUT" ] || printf '%s\n' "$OUT" | sed 's/^/  stdout| /' >&2
    [ -z "$ERR" ] || printf '%s\n' "$ERR" | sed 's/^/  stderr| /' >&2
    printf '  rc=%s\n' "$RC" >&2
}

rx_quote() { local a out=; for a in "$@"; do out+="$(printf '%q' "$a") "; done; printf '%s' "${out% }"; }

# ok CMD...: run CMD (captured) and fail unless it exits 0
ok() {
    run_cap "$@"
    [ "$RC" = 0 ] || fail "$(rx_quote "$@" | cut -c1-120) exited $RC: $(rx_last_line "$ERR$OUT")"
}

rx_last_line() { printf '%s\n' "$1" | sed '/^[[:space:]]*$/d' | tail -n 1 | cut -c1-400; }

assert_eq() {  # WHAT EXPECTED ACTUAL
    [ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
}
assert_match() {  # WHAT EXTENDED-REGEX TEXT
    grep -Eq -- "$2" <<<"$3" || fail "$1: no match for /$2/ in: $(printf '%s' "$3" | tr '\n' ' ' | cut -c1-400)"
}
assert_no_match() {  # WHAT EXTENDED-REGEX TEXT
    if grep -Eq -- "$2" <<<"$3"; then
        fail "$1: unexpected /$2/ in: $(printf '%s\n' "$3" | grep -E -- "$2" | head -n 3 | tr '\n' ' ' | cut -c1-400)"
    fi
}
assert_le() {  # WHAT MAX VALUE   (integers)
    [[ "$3" =~ ^[0-9]+$ ]] || fail "$1: '$3' is not a number (must be <= $2)"
    [ "$3" -le "$2" ] || fail "$1: $3 > $2"
}

# wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds
wait_for() {
    local n=$(( $1 * 10 )) i; shift
    for ((i = 0; i < n; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
    return 1
}

# on_exit CMD...: run CMD when the scenario ends, however it ends (last registered runs first)
RX_CLEANUP=()
on_exit() { RX_CLEANUP=("$(rx_quote "$@")" "${RX_CLEANUP[@]}"); }
rx_run_cleanup() {
    local rc=$? c
    set +e
    for c in "${RX_CLEANUP[@]}"; do printf '+ cleanup: %s\n' "$c" >&2; eval "$c" >/dev/null 2>&1; done
    exit $rc
}

# t NAME CMD...: run one scenario of $RX_CLIENT and record the result
t() {
    local name=$1; shift
    local dir="$W/logs/$RX_CLIENT" rc reason status start end secs
    mkdir -p "$dir"
    local log="$dir/$name.log"
    start=$(date +%s.%N)
    if [ -n "${RX_PREREQ_MISSING:-}" ]; then
        printf 'SKIP: %s\n' "$RX_PREREQ_MISSING" >"$log"; rc=77
    else
        timeout -k 10 "${RX_T_TIMEOUT:-240}" bash -c '
            set -eo pipefail
            source "$RX_LIB"
            for f in $RX_SOURCES; do source "$f"; done
            trap rx_run_cleanup EXIT
            "$@"' "t:$name" "$@" >"$log" 2>&1 </dev/null
        rc=$?
    fi
    end=$(date +%s.%N); secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    case $rc in
        0) status=pass; reason= ;;
        77) reason=$(grep '^SKIP: ' "$log" | tail -n 1 | cut -c7-)
            if [ "${RLOXSC_ALLOW_SKIP:-0}" = 1 ]; then status=skip
            else status=fail; reason="prerequisite missing (RLOXSC_ALLOW_SKIP=1 would skip): $reason"; fi ;;
        124|137) status=fail; reason="timed out after ${RX_T_TIMEOUT:-240}s" ;;
        *) status=fail
           reason=$(grep '^FAIL: ' "$log" | tail -n 1 | cut -c7-)
           [ -n "$reason" ] || reason="exit status $rc: $(rx_last_line "$(cat "$log")")" ;;
    esac
    printf '%s\t%s\t%s\t%s\t%s\n' "$RX_CLIENT" "$name" "$status" "$secs" "$reason" >>"$W/results"
    case $status in
        pass) printf '  PASS  %-28s %5ss\n' "$name" "$secs" ;;
        skip) printf '  SKIP  %-28s %5ss  %s\n' "$name" "$secs" "$reason" ;;
        fail) printf '  FAIL  %-28s %5ss  %s\n' "$name" "$secs" "$reason"
              tail -n 25 "$log" | sed 's/^/        | /' ;;
    esac
    return 0
}

# rx_summary: per-client table, failures, and the final line; returns 1 if anything failed
rx_summary() {
    local f="$W/results" c p fl s np=0 nf=0 ns=0
    [ -f "$f" ] || : >"$f"
    echo
    printf '%-8s %7s %7s %8s\n' client passed failed skipped
    for c in $(cut -f1 "$f" | awk '!seen[$0]++'); do
        p=$(awk -F'\t' -v c="$c" '$1==c && $3=="pass"' "$f" | wc -l)
        fl=$(awk -F'\t' -v c="$c" '$1==c && $3=="fail"' "$f" | wc -l)
        s=$(awk -F'\t' -v c="$c" '$1==c && $3=="skip"' "$f" | wc -l)
        printf '%-8s %7d %7d %8d\n' "$c" "$p" "$fl" "$s"
        np=$((np + p)); nf=$((nf + fl)); ns=$((ns + s))
    done
    if [ "$nf" -gt 0 ]; then
        echo; echo "failed:"
        awk -F'\t' '$3=="fail" {printf "  %s/%s: %s\n", $1, $2, $5}' "$f"
    fi
    if [ "$ns" -gt 0 ]; then
        echo; echo "skipped:"
        awk -F'\t' '$3=="skip" {printf "  %s/%s: %s\n", $1, $2, $5}' "$f"
    fi
    echo
    if [ "$ns" -gt 0 ]; then echo "$np passed, $nf failed, $ns skipped"; else echo "$np passed, $nf failed"; fi
    [ "$nf" = 0 ]
}

# ---------------------------------------------------------------------------------------------------
# installs

# rx_install_packages PKG...: apt-get install what is missing. /usr/sbin/policy-rc.d (exit 101) is
# written FIRST, so Debian's postinst scripts never start dockerd/containerd (with a bridge) themselves.
rx_install_packages() {
    local p missing=()
    if [ ! -x /usr/sbin/policy-rc.d ] || { /usr/sbin/policy-rc.d >/dev/null 2>&1; [ $? != 101 ]; }; then
        printf '#!/bin/sh\n# written by rloxsc tests/clients: never start services from package scripts\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 0755 /usr/sbin/policy-rc.d
    fi
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} = 0 ] && return 0
    rx_note "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 || return 1
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >"$W/apt.log" 2>&1 || { tail -n 20 "$W/apt.log" >&2; return 1; }
}

# the rloxsc binary the clients are given (the FILE NAME must be rloxsc for Podman's runtime_supports_json)
rx_install_rloxsc() {
    local src=$1
    [ -x "$src" ] || { rx_note "no rloxsc binary at $src"; return 1; }
    [ "$(basename "$RLOXSC")" = rloxsc ] || { rx_note "RLOXSC must be named rloxsc, not $(basename "$RLOXSC")"; return 1; }
    if ! cmp -s "$src" "$RLOXSC" 2>/dev/null; then
        # installed as `make install` does: immutable, so rloxsc runs it without re-executing
        if [ -e "$RLOXSC" ]; then chattr -i "$RLOXSC" 2>/dev/null || true; fi
        install -D -m 0755 "$src" "$RLOXSC" || return 1
        chattr +i "$RLOXSC" 2>/dev/null || rx_note "$RLOXSC could not be made immutable: rloxsc re-executes itself"
    fi
    "$RLOXSC" --version >&2
}

# ---------------------------------------------------------------------------------------------------
# daemons (started by this suite only; stopped by pid)

# rx_start_daemon NAME CMD...: start detached, pid in $W/NAME.pid, output in $W/NAME.log
rx_start_daemon() {
    local name=$1; shift
    setsid nohup "$@" >"$W/$name.log" 2>&1 </dev/null &
    echo $! >"$W/$name.pid"
    echo "$name" >>"$W/started-daemons"
}

# rx_stop_daemon NAME: SIGTERM the pid we started, wait up to 30 s, then SIGKILL
rx_stop_daemon() {
    local p i
    p=$(cat "$W/$1.pid" 2>/dev/null) || return 0
    [ -n "$p" ] || return 0
    kill -TERM "$p" 2>/dev/null || { rm -f "$W/$1.pid"; return 0; }
    for ((i = 0; i < 300; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$p" 2>/dev/null; then rx_note "$1 (pid $p) did not stop on SIGTERM: SIGKILL"; kill -KILL "$p" 2>/dev/null; fi
    rm -f "$W/$1.pid"
}

rx_containerd_up() { ctr version >/dev/null 2>&1; }

# containerd: reuse a running one, else start ours with contrib/containerd/config.toml (path substituted).
# Ours gets a PATH holding only containerd's shims, no `runc`: where containerd drops BinaryName and
# falls back to plain runc (ctr --no-pivot, CRI with user namespaces, `features`), the fallback then
# fails loudly instead of running a container unhardened (contrib/README.md).
rx_ensure_containerd() {
    local f
    if rx_containerd_up; then rx_note "containerd: reusing the one already running"; return 0; fi
    mkdir -p "$W/containerd" "$W/containerd/path"
    sed "s#BinaryName = \"/usr/local/bin/rloxsc\"#BinaryName = \"$RLOXSC\"#" \
        "$RX_REPO/contrib/containerd/config.toml" >"$W/containerd/config.toml"
    for f in /usr/bin/containerd /usr/bin/containerd-shim*; do ln -sf "$f" "$W/containerd/path/"; done
    rx_start_daemon containerd env PATH="$W/containerd/path" /usr/bin/containerd --config "$W/containerd/config.toml"
    wait_for 20 rx_containerd_up || { tail -n 20 "$W/containerd.log" >&2; return 1; }
}

rx_cri_up() { [ -S "$CRI_SOCK" ] && "${CRI_CTR:-ctr}" -a "$CRI_SOCK" version >/dev/null 2>&1; }

# containerd for the CRI scenarios, started by pid as "containerd-cri": contrib/containerd/config.toml
# (BinaryName substituted, as for ctr) plus what only the test needs: its own root/state/socket, the
# sandbox (pause) image the suite imports, and a CNI config in $W/cri/cni. Same PATH as
# rx_ensure_containerd: no runc, so a fallback to plain runc fails instead of running a pod unhardened.
#
# CNI: the only network plugin is Debian's `loopback` (it brings lo up in the pod's netns; no bridge, no
# address outside 127.0.0.0/8). containerd 1.6 refuses a pod whose CNI result has no address for
# "eth0" ("failed to find network info for sandbox"), and loopback's result names "lo"; the test-only
# chained plugin `rxci-lo-result` passes loopback's result on with its addresses not tied to an
# interface, which containerd then files under eth0 (the pod IP reads 127.0.0.1). It creates nothing.
# rx_cri_cni DIR: DIR/bin (loopback and rxci-lo-result) and DIR/conf (their conflist), as described above
rx_cri_cni() {
    local lo
    lo=$(command -v /usr/lib/cni/loopback || true)
    [ -n "$lo" ] || { rx_note "no /usr/lib/cni/loopback (Debian package containernetworking-plugins)"; return 1; }
    mkdir -p "$1/conf" "$1/bin"
    ln -sf "$lo" "$1/bin/loopback"
    cat >"$1/bin/rxci-lo-result" <<'PLUGIN'
#!/bin/bash
# test-only chained CNI plugin (tests/clients/lib.sh): on ADD, print the previous plugin's result with
# its IPs not tied to an interface; nothing to do on DEL/CHECK. containerd gives plugins its own PATH.
set -euo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
case ${CNI_COMMAND:-} in
    VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}' ;;
    ADD) jq -c '.prevResult | del(.ips[]?.interface) | .cniVersion = "1.0.0"' ;;
    DEL|CHECK) cat >/dev/null ;;
    *) echo '{"cniVersion":"1.0.0","code":4,"msg":"unsupported CNI_COMMAND"}'; exit 1 ;;
esac
PLUGIN
    chmod 0755 "$1/bin/rxci-lo-result"
    echo '{"cniVersion": "1.0.0", "name": "rxci-loopback", "plugins": [{"type": "loopback"}, {"type": "rxci-lo-result"}]}' \
        >"$1/conf/10-rxci-loopback.conflist"
}

rx_ensure_containerd_cri() {
    local f cfg=$W/cri/config.toml
    # containerd 2.x (client cri2): tests/clients/containerd2.sh
    [ "${CRI_INSTANCE:-cri}" != cri2 ] || { rx_ensure_containerd2; return; }
    if rx_cri_up; then rx_note "a containerd already serves $CRI_SOCK: not started by this run"; return 1; fi
    mkdir -p "$W/cri/root" "$W/cri/pods" "$W/containerd/path"
    for f in /usr/bin/containerd /usr/bin/containerd-shim*; do ln -sf "$f" "$W/containerd/path/"; done
    rx_cri_cni "$W/cri/cni" || return 1
    {
        printf '# written by tests/clients/lib.sh from contrib/containerd/config.toml\n'
        printf 'root = "%s"\nstate = "%s"\n' "$W/cri/root" "$CRI_STATE"
        sed -e "s#BinaryName = \"/usr/local/bin/rloxsc\"#BinaryName = \"$RLOXSC\"#" \
            -e "/^\[plugins.\"io.containerd.grpc.v1.cri\"\]\$/a\\  sandbox_image = \"$IMG_CRI_PAUSE\"" \
            "$RX_REPO/contrib/containerd/config.toml"
        printf '\n[grpc]\n  address = "%s"\n[ttrpc]\n  address = "%s.ttrpc"\n' "$CRI_SOCK" "$CRI_SOCK"
        printf '[plugins."io.containerd.grpc.v1.cri".cni]\n  bin_dir = "%s"\n  conf_dir = "%s"\n' "$W/cri/cni/bin" "$W/cri/cni/conf"
    } >"$cfg"
    grep -q "BinaryName = \"$RLOXSC\"" "$cfg" || { rx_note "contrib/containerd/config.toml: no BinaryName line for the rloxsc handler"; return 1; }
    grep -q "sandbox_image = \"$IMG_CRI_PAUSE\"" "$cfg" || { rx_note "contrib/containerd/config.toml: no [plugins.\"io.containerd.grpc.v1.cri\"] table"; return 1; }
    rx_start_daemon containerd-cri env PATH="$W/containerd/path" /usr/bin/containerd --config "$cfg"
    wait_for 20 rx_cri_up || { tail -n 20 "$W/containerd-cri.log" >&2; return 1; }
}

# the CRI client's Python environment: PyPI's container-runtime-interface-api (generated CRI v1 stubs)
# and grpcio, pinned in cri-requirements.txt, in a venv of Debian's python3 (kept between runs in
# $CRI_VENV, rebuilt when the pins change)
rx_cri_venv() {
    local req="$RX_DIR/cri-requirements.txt"
    if [ -x "$CRI_VENV/bin/python" ] && cmp -s "$req" "$CRI_VENV/rloxsc-requirements.txt" \
        && "$CRI_VENV/bin/python" -c 'import grpc, cri_api.v1.api_pb2_grpc' 2>/dev/null; then
        return 0
    fi
    rm -rf "$CRI_VENV"
    /usr/bin/python3 -m venv "$CRI_VENV" || return 1
    "$CRI_VENV/bin/pip" install --disable-pip-version-check -q -r "$req" >&2 || return 1
    "$CRI_VENV/bin/python" -c 'import grpc, cri_api.v1.api_pb2_grpc' || return 1
    cp "$req" "$CRI_VENV/rloxsc-requirements.txt"
}

# rx_cri_cycle_configs DIR: DIR/cycle-pod.json and DIR/cycle-ctr.json, a pod of one container (sh
# waiting for SIGTERM) for `cri_client.py cycle` (the CRI setup's first pod, scripts/bench-clients.sh)
rx_cri_cycle_configs() {
    mkdir -p "$1/cycle-logs"
    jq -n --arg cg "/$CRI_CGROUP_PARENT" --arg d "$1/cycle-logs" '{metadata: {name: "rxci-cycle", namespace: "rxci"},
        log_directory: $d, linux: {cgroup_parent: $cg, security_context: {namespace_options: {network: "POD", pid: "CONTAINER", ipc: "POD"}}}}' \
        >"$1/cycle-pod.json" || return 1
    jq -n --arg img "$IMG_CRI" --arg c "$RX_LONG" '{metadata: {name: "app"}, image: {image: $img}, command: ["sh", "-c", $c],
        log_path: "app.log", linux: {security_context: {namespace_options: {network: "POD", pid: "CONTAINER", ipc: "POD"}}}}' \
        >"$1/cycle-ctr.json"
}

rx_docker_up() { "$D" version >/dev/null 2>&1; }

# dockerd: contrib/docker/daemon.json (the runtime only) + this host's needs (our containerd, overlay2;
# no bridge, no iptables, no forwarding or NAT: no bridge with private-range addresses may be made on
# these machines; the cgroupfs driver, as before contrib stopped setting it), started by pid.
# A dockerd we did not start is reused only if it already has the rloxsc runtime at $RLOXSC.
rx_ensure_dockerd() {
    if rx_docker_up; then
        if "$D" info --format '{{json .Runtimes}}' 2>/dev/null | jq -e --arg p "$RLOXSC" '.rloxsc.path == $p' >/dev/null; then
            rx_note "dockerd: reusing the one already running (runtime rloxsc -> $RLOXSC)"; return 0
        fi
        rx_note "a dockerd not started by this suite is running without runtime rloxsc -> $RLOXSC"; return 1
    fi
    mkdir -p "$W/docker"
    # runc registered by path too (this containerd has none on its PATH), for controls
    jq --arg p "$RLOXSC" '.runtimes.rloxsc.path = $p | .runtimes.rxrunc.path = "/usr/sbin/runc"
        | .containerd = "/run/containerd/containerd.sock" | ."storage-driver" = "overlay2"
        | .bridge = "none" | .iptables = false | .ip6tables = false | ."ip-forward" = false | ."ip-masq" = false
        | ."exec-opts" = ["native.cgroupdriver=cgroupfs"]' \
        "$RX_REPO/contrib/docker/daemon.json" >"$W/docker/daemon.json" || return 1
    rx_start_daemon dockerd /usr/sbin/dockerd --config-file "$W/docker/daemon.json"
    wait_for 30 rx_docker_up || { tail -n 20 "$W/dockerd.log" >&2; return 1; }
}

# podman: contrib/podman/containers.conf with the runtime path substituted
rx_podman_conf() {
    mkdir -p "$W/podman"
    sed "s#^rloxsc = \[\"/usr/local/bin/rloxsc\"\]#rloxsc = [\"$RLOXSC\"]#" \
        "$RX_REPO/contrib/podman/containers.conf" >"$W/podman/containers.conf"
    grep -q "^rloxsc = \[\"$RLOXSC\"\]" "$W/podman/containers.conf" || { rx_note "contrib/podman/containers.conf: no rloxsc runtime line"; return 1; }
    export CONTAINERS_CONF="$W/podman/containers.conf"
}

# ---------------------------------------------------------------------------------------------------
# images

# rx_rootfs_tar ROOTFS OUT: the bundle rootfs as a tar (numeric owners)
rx_rootfs_tar() { tar --numeric-owner -C "$1" -cf "$2" .; }

# rx_mk_oci_archive ROOTFS OUT.tar REF [CMD-JSON]: an OCI image layout (one uncompressed layer) that
# `ctr image import` accepts; the image's Cmd is CMD-JSON (default ["/bin/sh"]). Digests are sha256
# of the blobs; JSON is built with jq.
rx_mk_oci_archive() {
    local rootfs=$1 out=$2 ref=$3 cmd=${4:-'["/bin/sh"]'} d blobs layer cfg man sz
    d=$(mktemp -d -p "$W" oci.XXXXXX); blobs="$d/blobs/sha256"; mkdir -p "$blobs"
    rx_blob() { local h; h=$(sha256sum "$1" | cut -d' ' -f1); mv "$1" "$blobs/$h"; echo "$h"; }
    tar --numeric-owner -C "$rootfs" -cf "$d/layer" .
    layer=$(rx_blob "$d/layer")
    jq -nc --arg diff "sha256:$layer" --argjson cmd "$cmd" '{
        architecture: "amd64", os: "linux",
        config: {Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], Cmd: $cmd},
        rootfs: {type: "layers", diff_ids: [$diff]},
        history: [{created_by: "rloxsc tests/clients rx_mk_oci_archive"}]}' >"$d/config"
    sz=$(stat -c %s "$d/config"); cfg=$(rx_blob "$d/config")
    jq -nc --arg c "sha256:$cfg" --argjson cs "$sz" --arg l "sha256:$layer" --argjson ls "$(stat -c %s "$blobs/$layer")" '{
        schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
        config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $cs},
        layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $l, size: $ls}]}' >"$d/manifest"
    sz=$(stat -c %s "$d/manifest"); man=$(rx_blob "$d/manifest")
    jq -nc --arg m "sha256:$man" --argjson ms "$sz" --arg ref "$ref" --arg tag "${ref##*:}" '{
        schemaVersion: 2,
        manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $m, size: $ms,
                     annotations: {"io.containerd.image.name": $ref, "org.opencontainers.image.ref.name": $tag},
                     platform: {architecture: "amd64", os: "linux"}}]}' >"$d/index.json"
    echo '{"imageLayoutVersion":"1.0.0"}' >"$d/oci-layout"
    tar -C "$d" -cf "$out" oci-layout index.json blobs
    rm -rf "$d"
}

# ---------------------------------------------------------------------------------------------------
# hardening probe: run inside a container, prints one fact per line

RX_PROBE='
for k in CapPrm CapEff CapBnd CapAmb NoNewPrivs Seccomp; do grep "^$k:" /proc/self/status; done
echo "net: $(ls /sys/class/net | tr "\n" " ")"
echo "pids.max: $(cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || echo unreadable)"
echo "memory.limit: $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || echo unreadable)"
if [ -r /sys/fs/cgroup/devices/devices.list ]; then echo "devices.list: $(tr "\n" ";" </sys/fs/cgroup/devices/devices.list)"; else echo "devices.list: unreadable"; fi
for d in /dev/fuse /dev/kmsg; do
  if [ ! -e $d ]; then echo "device $d: absent"
  elif (exec 3<$d) 2>/dev/null; then echo "device $d: OPENABLE"
  else echo "device $d: present, open denied"; fi
done
for n in pid net ipc uts cgroup mnt; do echo "ns-$n: $(readlink /proc/self/ns/$n)"; done
awk '\''$5 == "/" || $5 == "/proc/sys" || $5 == "/sys" || $5 ~ "^/sys/fs/cgroup" { print "mnt " $5 " " $6 }'\'' /proc/self/mountinfo
echo "probe: $(/bin/seccomp-probe 2>&1 | tail -n 1)"
echo "probe-done"
'

# rx_field TEXT KEY: the value after "KEY:" (first match, trimmed)
rx_field() { printf '%s\n' "$1" | sed -n "s/^$2:[[:space:]]*//p" | head -n 1 | sed 's/[[:space:]]*$//'; }

# assert_hardened TEXT [HOST_CGROUP_DIR_SUFFIX]: the probe output shows rloxsc's containment. Values the
# container cannot read (ctr mounts no cgroupfs) are read on the host under
# /sys/fs/cgroup/{pids,memory,devices}/SUFFIX instead (give it while the container runs).
assert_hardened() {
    local out=$1 host=${2:-} v masked n extra="" pids mem devs
    grep -q '^probe-done$' <<<"$out" || fail "the probe did not run to the end: $(rx_last_line "$out")"
    assert_eq "Seccomp (inside)" 2 "$(rx_field "$out" Seccomp)"
    assert_eq "NoNewPrivs (inside)" 1 "$(rx_field "$out" NoNewPrivs)"
    for n in CapPrm CapEff CapBnd CapAmb; do
        v=$(rx_field "$out" "$n"); [[ "$v" =~ ^[0-9a-f]+$ ]] || fail "$n unreadable: '$v'"
        masked=$(( 0x$v & ~RX_CAP_ALLOWED ))
        [ "$masked" = 0 ] || fail "$n=$v has capabilities outside rloxsc's allowlist (mask $(printf '%x' "$masked"))"
        [ $(( (0x$v >> 21) & 1 )) = 0 ] || fail "$n=$v has CAP_SYS_ADMIN (bit 21)"
    done
    for n in $(rx_field "$out" net); do
        [[ " $RX_FALLBACK_NETDEVS " == *" $n "* ]] || extra+="$n "
    done
    [ -z "$extra" ] || fail "network interfaces besides lo inside the container: $extra"
    grep -q '^net: .*\blo\b' <<<"$out" || fail "no lo in the container's netns: $(rx_field "$out" net)"
    pids=$(rx_field "$out" pids.max); mem=$(rx_field "$out" memory.limit); devs=$(rx_field "$out" devices.list)
    if [ -n "$host" ]; then
        [ "$pids" != unreadable ] || pids=$(cat "/sys/fs/cgroup/pids/$host/pids.max" 2>/dev/null || echo "missing:/sys/fs/cgroup/pids/$host")
        [ "$mem" != unreadable ] || mem=$(cat "/sys/fs/cgroup/memory/$host/memory.limit_in_bytes" 2>/dev/null || echo missing)
        [ "$devs" != unreadable ] || devs=$(tr '\n' ';' <"/sys/fs/cgroup/devices/$host/devices.list" 2>/dev/null || echo missing)
    fi
    assert_le "pids.max" "$RX_PIDS_CEILING" "$pids"
    assert_le "memory.limit_in_bytes" "$RX_MEMORY_CEILING" "$mem"
    [ "$devs" != unreadable ] && [ "$devs" != missing ] || fail "devices.list unreadable"
    # "c *:* m" / "b *:* m" (mknod only; CAP_MKNOD is dropped anyway) are runc's defaults too
    assert_no_match "devices.list: read/write on every device" '(^|;)[abc] \*:\* [a-z]*[rw]' "$devs"
    assert_no_match "devices.list: fuse (10:229) or kmsg (1:11) allowed" '(^|;)c (10:229|1:11|10:\*|1:\*) [a-z]*[rw]' "$devs"
    assert_no_match "device nodes" 'OPENABLE' "$out"
    assert_match "seccomp-probe" '(^| )0 allowed' "$(rx_field "$out" probe)"
    # namespaces: none is the host's (this shell's)
    for n in pid net ipc uts cgroup mnt; do
        v=$(rx_field "$out" "ns-$n")
        [ -n "$v" ] || fail "namespace $n unreadable inside"
        [ "$v" != "$(readlink "/proc/$$/ns/$n")" ] || fail "the container shares the host's $n namespace ($v)"
    done
    # read-only: the root, /proc/sys, /sys and every cgroupfs (the last mount on a path is the visible one)
    local mp opts
    for mp in / /proc/sys /sys; do
        grep -q "^mnt $mp " <<<"$out" || fail "no mount at $mp inside"
    done
    while read -r mp; do
        opts=$(printf '%s\n' "$out" | awk -v m="$mp" '$1 == "mnt" && $2 == m { o = $3 } END { print o }')
        [[ ",$opts," == *,ro,* ]] || fail "$mp is mounted $opts inside, not read-only"
    done < <(printf '%s\n' "$out" | awk '$1 == "mnt" { print $2 }' | sort -u)
}

# rx_refused_by_rloxsc TEXT: the client printed rloxsc's refusal (rloxsc names the policy key)
rx_refused_by_rloxsc() { grep -q 'policy key' <<<"$1"; }

# assert_refused WHAT: the last run_cap must have failed with rloxsc's refusal printed by the client
assert_refused() {
    [ "$RC" != 0 ] || fail "$1 was accepted: it must be refused"
    rx_refused_by_rloxsc "$ERR$OUT" || fail "$1 failed ($RC) without rloxsc's refusal (policy key): $(rx_last_line "$ERR$OUT")"
    rx_note "refused as expected: $(rx_last_line "$ERR$OUT")"
}

# Two host directories for a bind-mount scenario: $1-open (mode 1777: any uid may write, as Docker
# users make a directory they hand a container to write) and $1-root (host root's, mode 0700, what
# tempfile.mkdtemp makes). Prints the two paths.
rx_bind_dirs() {
    mkdir -p "$1-open" "$1-root"
    chmod 1777 "$1-open"
    chmod 0700 "$1-root"
    echo "$1-open" "$1-root"
}
# Checks a bind-mount scenario run with RX_BIND_PAYLOAD, $1-open at /data and $1-root at /rootowned,
# as under runc (issue #20): the container's root owns a bind as its directory's owner (host root
# here), so it writes both and the files are host root's on the host; never set-uid; the binds are
# nosuid,nodev.
assert_bind_works() {
    assert_eq "file written through the bind mount, seen on the host" rxci-bind "$(cat "$1-open/f" 2>/dev/null)"
    local owner; owner=$(stat -c %u "$1-open/f" 2>/dev/null || echo missing)
    assert_eq "the file written through the bind belongs to the directory's owner" 0 "$owner"
    local opts; opts=$(printf '%s\n' "$2" | sed -n 's/^opts: //p')
    [[ ",$opts," == *,nosuid,* && ",$opts," == *,nodev,* ]] || fail "bind mount options '$opts' lack nosuid,nodev"
    assert_match "a root-owned 0700 bind is writable by the container's root, as under runc" '^rootowned: written$' "$2"
    assert_eq "the file in the root-owned bind is root's on the host" 0 "$(stat -c %u "$1-root/f" 2>/dev/null || echo missing)"
    assert_match "never set-uid" '^setuid: refused$' "$2"
    [ "$(( 0$(stat -c %a "$1-root/f") & 06000 ))" = 0 ] || fail "a file the container made on a bind is set-id on the host"
}
# the payload for assert_bind_works (the binds are at /data and /rootowned)
RX_BIND_PAYLOAD='echo rxci-bind > /data/f && echo "opts: $(awk '\''$5 == "/data" { o = $6 } END { print o }'\'' /proc/self/mountinfo)"; if echo x > /rootowned/f 2>/dev/null; then echo "rootowned: written"; else echo "rootowned: refused"; fi; if chmod 4755 /rootowned/f 2>/dev/null; then echo "setuid: set"; else echo "setuid: refused"; fi'


# ---------------------------------------------------------------------------------------------------
# leaks: a snapshot of what containers of CLIENT leave on the host (compare before/after)

rx_leak_snapshot() {
    local client=$1 parents roots shim shim2= r p n
    case $client in
        docker) parents=docker; roots="/var/run/docker/runtime-runc/moby /var/run/docker/runtime-rloxsc/moby"; shim="-namespace moby " ;;
        podman) parents=libpod_parent; roots=/run/rloxsc; shim= ;;
        ctr)    parents=$CTR_NS; roots=/run/containerd/runc/$CTR_NS; shim="-namespace $CTR_NS " ;;
        cri)    parents=$CRI_CGROUP_PARENT; roots=$CRI_RUNC_ROOT; shim="-namespace $CRI_NS "; shim2="-address $CRI_SOCK" ;;
    esac
    # cgroups of containers (Podman's own libpod_parent/conmon is not a container's)
    for p in $parents; do
        { find /sys/fs/cgroup/*/"$p" -mindepth 1 -type d 2>/dev/null || true; } | { grep -v "/libpod_parent/conmon" || true; } | sed 's/^/cgroup /'
    done
    # rloxsc state directories
    for r in $roots; do
        [ -d "$r" ] || continue
        { "$RLOXSC" --root "$r" list -q 2>/dev/null || echo "unlistable"; } | sed "s#^#state $r #"
    done
    # mounts: overlay/rootfs/shm/netns mounts of the client, and the total
    echo "mounts-client $(grep -cE '/var/lib/docker/|/run/docker/|/run/containerd/io\.containerd|/var/lib/containers/storage/overlay/|/run/containers/storage/|/run/netns/|/var/lib/containerd/' /proc/self/mountinfo)"
    # (rloxsc's /run/rloxsc-sealed/ copies are one per binary, not per container)
    echo "mounts-total $(grep -vc ' /run/rloxsc-sealed/' /proc/self/mountinfo)"
    if [ "$client" = cri ]; then
        # the CRI's mounts (rootfs, shm, pinned netns), pod netns files, CNI result cache entries
        echo "mounts-cri $(grep -cF -e "$CRI_STATE/" -e "$CRI_WORK/root/" -e ' /run/netns/' /proc/self/mountinfo)"
        echo "netns-files $(find /run/netns -maxdepth 1 -name 'cni-*' 2>/dev/null | wc -l)"
        echo "cni-cache $(find /var/lib/cni/results -maxdepth 1 -name '*loopback-*' 2>/dev/null | wc -l)"
    fi
    # processes: shims/conmons of this client, and processes inside its container cgroups
    # (zombies are not counted: the reaper here is the host's pid 1, on its own schedule)
    case $client in
        podman) n=$(ps -eo stat=,comm= | awk '$1 !~ /^Z/ && $2 == "conmon"' | wc -l) ;;
        *)      n=$(ps -eo stat=,args= | awk -v s="containerd-shim-runc-v2 ${shim}" -v s2="$shim2" '$1 !~ /^Z/ && index($0, s) && (s2 == "" || index($0, s2))' | wc -l) ;;
    esac
    echo "procs-shim $n"
    n=0
    for p in $parents; do
        for f in $(find /sys/fs/cgroup/pids/"$p" -mindepth 2 -name cgroup.procs 2>/dev/null | grep -v /conmon/ || true); do
            n=$(( n + $(wc -l <"$f") ))
        done
    done
    echo "procs-in-containers $n"
}

# rx_leak_same BEFORE AFTER: the snapshots are equal, except that the host-wide mount count may have
# gone down (a mount that went away during the scenario - the host's or an earlier client's lazy
# cleanup - is not something the scenario left behind)
rx_leak_same() {
    local b a
    diff -q <(grep -v '^mounts-total ' "$1") <(grep -v '^mounts-total ' "$2") >/dev/null || return 1
    b=$(sed -n 's/^mounts-total //p' "$1"); a=$(sed -n 's/^mounts-total //p' "$2")
    [ "${a:-0}" -le "${b:-0}" ]
}

# assert_no_leaks CLIENT BEFORE-FILE: poll up to 15 s for the snapshot to equal BEFORE
assert_no_leaks() {
    local client=$1 before=$2 i
    for ((i = 0; i < 30; i++)); do
        rx_leak_snapshot "$client" | sort >"$W/leak-after.$client"
        rx_leak_same "$before" "$W/leak-after.$client" && return 0
        sleep 0.5
    done
    diff "$before" "$W/leak-after.$client" >&2 || true
    fail "$client left something behind: $(diff "$before" "$W/leak-after.$client" | grep '^[<>]' | head -n 8 | tr '\n' ' ')"
}

# ---------------------------------------------------------------------------------------------------
# a listener on the host's loopback for /bin/escape-demo (started and killed by pid)

RX_DEMO_PORT=47123
rx_port_listening() { python3 -c "import socket,sys; s=socket.socket(); s.settimeout(0.5); sys.exit(s.connect_ex(('127.0.0.1', $RX_DEMO_PORT)))"; }

# rx_with_listener CMD...: run CMD with a listener on 127.0.0.1:47123 (ours, unless one is already there)
rx_with_listener() {
    local lp= rc
    if ! rx_port_listening; then
        python3 -m http.server --bind 127.0.0.1 "$RX_DEMO_PORT" >/dev/null 2>&1 &
        lp=$!
        wait_for 10 rx_port_listening || { kill "$lp" 2>/dev/null; fail "could not start a listener on 127.0.0.1:$RX_DEMO_PORT"; }
    fi
    set +e; "$@"; rc=$?; set -e
    if [ -n "$lp" ]; then kill "$lp" 2>/dev/null || true; wait "$lp" 2>/dev/null || true; fi
    return $rc
}

# assert_escape_demo TEXT: the demo's verdict
assert_escape_demo() {
    grep -q '^summary: ' <<<"$1" || fail "escape-demo printed no summary: $(rx_last_line "$1")"
    assert_eq "escape-demo summary" "summary: 6 contained, 0 escaped" "$(printf '%s\n' "$1" | grep '^summary: ' | tail -n 1)"
}

# containerd 2.x for the CRI scenarios (client cri2), rx_cri_select, the nginx-style image
# shellcheck source=tests/clients/containerd2.sh
source "$RX_DIR/containerd2.sh"
