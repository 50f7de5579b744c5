#!/usr/bin/env bash
# bench.sh - per-container cost of rloxsc next to runc and crun, all measured in one run.
#
# This is a BENCHMARK, not a test: it never fails because something is slow. It exits 1 only when a
# runtime could not be benchmarked at all (missing, failing its smoke run, or leaving containers
# behind), 2 on usage/setup errors. docs/benchmarks.md says how to read the output.
#
# Usage: scripts/bench.sh [--runs N] [--containers N] [--soak N] [--rloxsc PATH] [--baseline PATH]
#                         [--json-dir DIR] [--no-steps] [--no-clients] [--record]
#   --runs N        timed runs per runtime and scenario (default 30)
#   --containers N  containers in the throughput scenario, 8 at a time (default 200)
#   --soak N        rloxsc only: N containers (create, start, wait, delete; 8 in parallel) in groups
#                   of 100, each group's time per container and the host's memory after it, to see
#                   that both stay flat from the first hundred to the last (default 1000; 0: none)
#   --rloxsc PATH   rloxsc binary (default <repo>/target/x86_64-unknown-linux-gnu/release/rloxsc)
#   --baseline PATH another rloxsc build (an older commit), measured in the same sessions as
#                   "rloxsc-base" (installed immutable like rloxsc): before/after without the drift
#                   between separate runs
#   --json-dir DIR  also copy hyperfine's JSON exports to DIR (kept)
#   --no-steps      skip the "what each hardening step costs" table (crun variants, rloxsc phases)
#   --no-clients    skip `docker run --rm`, `podman run --rm`, `ctr run --rm` and a CRI pod's life
#                   through rloxsc and through runc (scripts/bench-clients.sh, run last, in the host's
#                   mount namespace: the clients' daemons need the host's mounts as they are)
#   --record        append this run's line to the dated history in docs/benchmarks.md
#
# The runtimes: rloxsc, installed as `make install` does (immutable, so it runs as is); rloxsc-reexec,
# the same binary as built (writable: it re-executes itself from a read-only bind mount before every
# create, src/exeseal.rs); runc; crun given the same `runc spec` bundle; and "crun+h", crun given the
# spec rloxsc hands libcontainer for that bundle (its hardened spec, plus an OCI seccomp profile that
# allows the same syscalls as rloxsc's filter), so the mechanics are compared on equal work.
#
# Needs root. Runs in a private mount namespace of its own, shared by all runtimes: on a cgroup v1
# hybrid host the cgroup2 mount at /sys/fs/cgroup/unified is unmounted there (crun 1.8 refuses the
# hybrid layout), so every runtime sees the same pure v1 view; the host's mounts are not touched.
# Installs missing tools with apt-get. State and bundles live in a mktemp dir under /run, on a tmpfs
# (the bench mounts one there in its namespace when this host's /run is not one), as the state of
# Docker's, containerd's and Podman's runtimes does; the installed binaries in /var/tmp; cgroups are
# /rloxsc-bench/<runtime>-<tag>[-p<slot>]; all removed again on exit.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=30
CONTAINERS=200
PARALLEL=8
RLOXSC="$REPO/target/x86_64-unknown-linux-gnu/release/rloxsc"
BASELINE=""
JSON_DIR=""
STEPS=1
CLIENTS=1
SOAK=1000
RECORD=0
WARMUP=3

usage() { sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

args=("$@")
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS=${2:?--runs needs a value}; shift 2 ;;
        --runs=*) RUNS=${1#*=}; shift ;;
        --containers) CONTAINERS=${2:?--containers needs a value}; shift 2 ;;
        --containers=*) CONTAINERS=${1#*=}; shift ;;
        --rloxsc) RLOXSC=${2:?--rloxsc needs a value}; shift 2 ;;
        --rloxsc=*) RLOXSC=${1#*=}; shift ;;
        --baseline) BASELINE=${2:?--baseline needs a value}; shift 2 ;;
        --baseline=*) BASELINE=${1#*=}; shift ;;
        --json-dir) JSON_DIR=${2:?--json-dir needs a value}; shift 2 ;;
        --json-dir=*) JSON_DIR=${1#*=}; shift ;;
        --no-steps) STEPS=0; shift ;;
        --no-clients) CLIENTS=0; shift ;;
        --soak) SOAK=${2:?--soak needs a value}; shift 2 ;;
        --soak=*) SOAK=${1#*=}; shift ;;
        --record) RECORD=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done
for v in RUNS CONTAINERS SOAK; do
    case "${!v}" in ''|*[!0-9]*) echo "bench.sh: --${v,,} must be a positive integer" >&2; exit 2 ;; esac
done
[ "$RUNS" -ge 2 ] || { echo "bench.sh: --runs must be >= 2 (hyperfine needs 2 for a stddev)" >&2; exit 2; }
[ "$CONTAINERS" -ge "$PARALLEL" ] || { echo "bench.sh: --containers must be >= $PARALLEL" >&2; exit 2; }
case "$RLOXSC" in /*) ;; *) RLOXSC="$PWD/$RLOXSC" ;; esac
case "$BASELINE" in ""|/*) ;; *) BASELINE="$PWD/$BASELINE" ;; esac
case "$JSON_DIR" in ''|/*) ;; *) JSON_DIR="$PWD/$JSON_DIR" ;; esac

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench.sh: %s\n' "$*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "must run as root (containers need namespaces and cgroups)"

# ---------------------------------------------------------------- tools ----
need_pkgs=()
command -v hyperfine >/dev/null 2>&1 || need_pkgs+=(hyperfine)
command -v runc >/dev/null 2>&1 || need_pkgs+=(runc)
[ -x /usr/bin/crun ] || need_pkgs+=(crun)
command -v jq >/dev/null 2>&1 || need_pkgs+=(jq)
command -v strace >/dev/null 2>&1 || need_pkgs+=(strace)
[ -x /usr/bin/time ] || need_pkgs+=(time)
command -v unshare >/dev/null 2>&1 || need_pkgs+=(util-linux)
if [ ! -x /bin/busybox ] || ldd /bin/busybox >/dev/null 2>&1; then
    need_pkgs+=(busybox-static)
fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
    log "installing missing packages: ${need_pkgs[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y "${need_pkgs[@]}" >&2 ||
        { apt-get update >&2 && apt-get install -y "${need_pkgs[@]}" >&2; } ||
        die "apt-get install ${need_pkgs[*]} failed"
fi

# --------------------------------------------------- one mount view ----
if [ -z "${RLOXSC_BENCH_IN_NS:-}" ]; then
    unshare -m --propagation private env RLOXSC_BENCH_IN_NS=1 bash "${BASH_SOURCE[0]}" "${args[@]}"
    rc=$?
    # the clients' daemons need the host's mounts as they are: measured here, after the rest
    if [ "$CLIENTS" = 1 ] && [ "$rc" != 2 ]; then
        echo
        echo "through the clients (scripts/bench-clients.sh; the build tree's binary, installed as tests/clients does):"
        bash "$REPO/scripts/bench-clients.sh" --runs "$RUNS" || { echo "WARNING: a client could not be benchmarked"; rc=1; }
    fi
    exit "$rc"
fi
UNMOUNTED_UNIFIED=0
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
    LAYOUT="cgroup v2"
elif [ "$(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then
    umount -l /sys/fs/cgroup/unified || die "cannot unmount /sys/fs/cgroup/unified in the bench's mount namespace"
    UNMOUNTED_UNIFIED=1
    LAYOUT="cgroup v1 (hybrid host; /sys/fs/cgroup/unified unmounted in the bench's own mount namespace)"
else
    LAYOUT="cgroup v1"
fi

# ------------------------------------------------------------ temp dir ----
TMP=$(mktemp -d /run/rloxsc-bench.XXXXXX) || die "mktemp failed"
# a tmpfs of its own in the bench's mount namespace, whatever /run is on this host: the runtimes'
# state goes where Docker's, containerd's and Podman's goes on a systemd host (a VM whose /run is on
# an ext4 mounted with `discard` makes every file a runtime truncates or removes wait for the disk,
# for every runtime alike, and that is the disk measured, not the runtime)
if [ "$(stat -fc %T /run)" != tmpfs ]; then
    mount -t tmpfs -o mode=0711,size=4g rloxsc-bench "$TMP" || die "cannot mount a tmpfs on $TMP"
    STATE_FS="tmpfs (mounted by the bench: this host's /run is $(stat -fc %T /run))"
else
    STATE_FS="tmpfs (/run)"
fi
# the installed binaries stay on disk: tmpfs cannot hold an immutable file
BINDIR=$(mktemp -d /var/tmp/rloxsc-bench-bin.XXXXXX) || die "mktemp failed"
# traversable (not listable) by others: crun+h's user namespace opens the rootfs as the container's
# root, an unprivileged host uid
chmod 0711 "$TMP"
TAG=${TMP##*.}
CG_PARENT=rloxsc-bench
RUNTIMES_ALL=(rloxsc rloxsc-reexec runc crun crun+h)
[ -n "$BASELINE" ] && RUNTIMES_ALL+=(rloxsc-base)

bin_of() {
    case "$1" in
        rloxsc) printf '%s' "$INSTALLED" ;;
        rloxsc-reexec) printf '%s' "$RLOXSC" ;;
        rloxsc-base) printf '%s' "$INSTALLED_BASE" ;;
        runc) command -v runc ;;
        crun|crun+h) printf '/usr/bin/crun' ;;
    esac
}
state_of() { printf '%s/state-%s' "$TMP" "${1//+/}"; }
# Command prefix (shell-quoted) for runtime $1.
rt_cmd() { printf '%q --root %q' "$(bin_of "$1")" "$(state_of "$1")"; }
rt_argv() { RT_ARGV=("$(bin_of "$1")" --root "$(state_of "$1")"); }

leftovers() {
    [ -d "$(state_of "$1")" ] || return 0
    case "$1" in rloxsc*) [ -x "$(bin_of "$1")" ] || return 0 ;; esac
    rt_argv "$1"
    timeout 20 "${RT_ARGV[@]}" list -q 2>/dev/null || true
}
purge() {
    local id
    rt_argv "$1"
    for id in $(leftovers "$1"); do
        timeout 20 "${RT_ARGV[@]}" delete --force "$id" >/dev/null 2>&1 ||
            echo "bench.sh: warning: $1 delete --force $id failed" >&2
    done
}
cleanup() {
    local rc=$? r d
    trap - EXIT INT TERM
    for r in "${RUNTIMES_ALL[@]}"; do purge "$r"; done
    # only this run's cgroups, deepest first; the shared parent only if it is then empty
    for d in /sys/fs/cgroup/*/"$CG_PARENT"/*-"$TAG"*/*/ /sys/fs/cgroup/*/"$CG_PARENT"/*-"$TAG"*/ \
        /sys/fs/cgroup/"$CG_PARENT"/*-"$TAG"*/*/ /sys/fs/cgroup/"$CG_PARENT"/*-"$TAG"*/; do
        [ -d "$d" ] && [ "$(stat -fc %T "$d")" != tmpfs ] || continue
        rmdir "$d" 2>/dev/null || echo "bench.sh: warning: could not rmdir cgroup $d" >&2
    done
    for d in /sys/fs/cgroup/*/"$CG_PARENT"/ /sys/fs/cgroup/"$CG_PARENT"/; do
        [ -d "$d" ] && [ "$(stat -fc %T "$d")" != tmpfs ] && rmdir "$d" 2>/dev/null
    done
    # with the unified mount gone, crun writes its "unified" cgroup files into the plain directory of
    # the host's /sys/fs/cgroup tmpfs (hidden under the host's mount): remove this run's
    if [ "$UNMOUNTED_UNIFIED" = 1 ]; then
        for d in /sys/fs/cgroup/unified/"$CG_PARENT"/*-"$TAG"*/; do
            [ -d "$d" ] && [ "$(stat -fc %T "$d")" = tmpfs ] && rm -rf "$d"
        done
        rmdir /sys/fs/cgroup/unified/"$CG_PARENT" 2>/dev/null
    fi
    [ -n "${INSTALLED:-}" ] && [ -e "$INSTALLED" ] && chattr -i "$INSTALLED" 2>/dev/null
    [ -n "${INSTALLED_BASE:-}" ] && [ -e "$INSTALLED_BASE" ] && chattr -i "$INSTALLED_BASE" 2>/dev/null
    rm -rf "$BINDIR"
    umount "$TMP" 2>/dev/null
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------ binaries ----
# "rloxsc" is the binary as `make install` installs it: immutable (chattr +i), sealed at rest, so it
# runs as is; "rloxsc-reexec" is the same binary as built (writable), which re-executes itself from
# a read-only bind mount before every create (src/exeseal.rs): the difference is that execve
INSTALLED=""
if [ -x "$RLOXSC" ]; then
    INSTALLED="$BINDIR/rloxsc"
    install -m 0755 "$RLOXSC" "$INSTALLED" || die "cannot install $RLOXSC into $BINDIR"
    chattr +i "$INSTALLED" 2>/dev/null || log "warning: $BINDIR cannot hold an immutable file: rloxsc re-executes itself too"
fi
INSTALLED_BASE=""
if [ -n "$BASELINE" ] && [ -x "$BASELINE" ]; then
    mkdir -p "$BINDIR/base"
    INSTALLED_BASE="$BINDIR/base/rloxsc"
    install -m 0755 "$BASELINE" "$INSTALLED_BASE" || die "cannot install $BASELINE into $BINDIR/base"
    chattr +i "$INSTALLED_BASE" 2>/dev/null || true
fi

# -------------------------------------------------------------- bundles ----
BASE="$TMP/bundle"
mkdir -p "$BASE"
log "building the busybox rootfs with scripts/build-bundle.sh"
bash "$REPO/scripts/build-bundle.sh" "$BASE" >&2 || die "scripts/build-bundle.sh $BASE failed"
[ -x "$BASE/rootfs/bin/true" ] || die "scripts/build-bundle.sh made no $BASE/rootfs/bin/true"
(cd "$BASE" && rm -f config.json && runc spec) || die "runc spec failed"
jq --arg root "$BASE/rootfs" '.process.terminal=false | .root.path=$root' "$BASE/config.json" >"$BASE/runc-spec.json"

# mk_bundle DIR SPEC CGROUP ARGS_JSON: a bundle dir holding only a config.json (absolute root.path)
mk_bundle() {
    mkdir -p "$1"
    jq --arg cg "$3" --argjson args "$4" '.process.args=$args | .linux.cgroupsPath=$cg' "$2" >"$1/config.json" ||
        die "jq failed writing $1/config.json"
}
# mk_bundles RUNTIME SPEC: the timed, smoke and per-slot throughput bundles of RUNTIME
mk_bundles() {
    local n=${1//+/} slot
    mk_bundle "$TMP/b-$n" "$2" "/$CG_PARENT/$n-$TAG" '["/bin/true"]'
    mk_bundle "$TMP/smoke-$n" "$2" "/$CG_PARENT/$n-$TAG-smoke" '["/bin/sh","-c","exit 42"]'
    for slot in $(seq 0 $((PARALLEL - 1))); do
        mk_bundle "$TMP/tp-$n-$slot" "$2" "/$CG_PARENT/$n-$TAG-p$slot" '["/bin/true"]'
    done
    mkdir -p "$(state_of "$1")"
}
for r in rloxsc rloxsc-reexec runc crun; do mk_bundles "$r" "$BASE/runc-spec.json"; done
[ -n "$BASELINE" ] && mk_bundles rloxsc-base "$BASE/runc-spec.json"

# crun+h: the spec rloxsc's create hands libcontainer for the same bundle (read back from its
# private bundle), plus an OCI seccomp profile allowing the syscalls of rloxsc's allowlist (names
# only: its argument conditions are left out). rloxsc's writable paths (binds of its root overlay,
# marked, whose views exist only inside an rloxsc create) become scratch tmpfs of the store's size:
# crun+h gets the same bounded scratch, not rloxsc's overlay and idmapped layers (crun cannot
# idmap a root); a spec crun cannot run fails the bench (below), never silently drops the anchor
make_hardened_spec() {
    local st prof
    st=$(state_of rloxsc)
    "$RLOXSC" --root "$st" create --bundle "$TMP/b-rloxsc" hspec >/dev/null 2>"$TMP/hspec.err" || return 1
    cp "$st/bundles/hspec/config.json" "$TMP/hardened-raw.json"
    "$RLOXSC" --root "$st" delete --force hspec >/dev/null 2>&1
    prof=$(awk '
        /^pub const UNCONDITIONAL: &\[&str\] = &\[/ { u = 1; next }
        u && /^\];/ { u = 0 }
        u { gsub(/[ ",]/, ""); if ($0 != "") print }
        /^pub const CONDITIONAL: &\[Rule\] = &\[/ { c = 1; next }
        c && /^\];/ { c = 0 }
        c && /name: "/ { sub(/.*name: "/, ""); sub(/".*/, ""); print }
    ' "$REPO/src/seccomp/allowlist.rs" | sort -u | jq -R . | jq -s \
        '{defaultAction: "SCMP_ACT_ERRNO", defaultErrnoRet: 1, architectures: ["SCMP_ARCH_X86_64"],
          syscalls: [{names: ., action: "SCMP_ACT_ALLOW"}]}')
    [ "$(jq '.syscalls[0].names | length' <<<"$prof")" -gt 100 ] || return 1
    jq --argjson prof "$prof" \
        '.mounts |= map(if ((.options // []) | index("x-rloxsc-writable"))
                then {destination: .destination, type: "tmpfs", source: "tmpfs",
                      options: ["nosuid", "nodev", "mode=1777", "size=256m"]}
                else . end)
         | .linux.seccomp = $prof' "$TMP/hardened-raw.json" >"$TMP/hardened-spec.json"
}

# --------------------------------------------------------------- smoke ----
# a smoke run must really start the container: its process exits 42 and the runtime passes that on
declare -A STATUS
RUNTIMES=()
smoke() {
    local r=$1 n=${1//+/} out st
    rt_argv "$r"
    out=$(timeout 60 "${RT_ARGV[@]}" run --bundle "$TMP/smoke-$n" smoke </dev/null 2>&1)
    st=$?
    timeout 20 "${RT_ARGV[@]}" delete --force smoke >/dev/null 2>&1
    if [ "$st" -eq 42 ]; then
        STATUS[$r]=ok
        RUNTIMES+=("$r")
    else
        STATUS[$r]="failing: smoke run exited $st, expected 42${out:+ ($(printf '%s' "$out" | tr '\n' ' ' | cut -c1-200))}"
    fi
    log "smoke $r: ${STATUS[$r]}"
}
if [ -x "$RLOXSC" ]; then
    smoke rloxsc
    smoke rloxsc-reexec
else
    STATUS[rloxsc]="missing: $RLOXSC (cargo build --release?)"
    STATUS[rloxsc-reexec]=${STATUS[rloxsc]}
fi
smoke runc
smoke crun
if [ -n "$BASELINE" ]; then
    if [ -n "$INSTALLED_BASE" ]; then smoke rloxsc-base; else STATUS[rloxsc-base]="missing: $BASELINE"; fi
fi
if [ "${STATUS[rloxsc]}" = ok ] && make_hardened_spec; then
    mk_bundles crun+h "$TMP/hardened-spec.json"
    smoke crun+h
else
    STATUS[crun+h]="not built: rloxsc's hardened spec could not be read back ($(tr '\n' ' ' <"$TMP/hspec.err" 2>/dev/null | cut -c1-200))"
fi
[ ${#RUNTIMES[@]} -gt 0 ] || die "no runtime passed the smoke run"

# ----------------------------------------------------------- scenarios ----
# run:       one foreground `run` of /bin/true (run deletes the container); $$ is hyperfine's
#            per-iteration shell, so each iteration has a fresh id
# lifecycle: create; start; delete (delete --force if /bin/true is still running, counted)
scen_cmd() {
    local c b="$TMP/b-${2//+/}"
    c=$(rt_cmd "$2")
    case "$1" in
        run) printf '%s run --bundle %q r$$' "$c" "$b" ;;
        lifecycle)
            printf '%s create --bundle %q l$$ && %s start l$$ && { %s delete l$$ 2>/dev/null || { echo f >>%q; %s delete --force l$$; }; }' \
                "$c" "$b" "$c" "$c" "$TMP/forced-${2//+/}" "$c" ;;
    esac
}
declare -A MED P95 USR SYS LEFT FORCED
SCENARIOS=(run lifecycle)
for s in "${SCENARIOS[@]}"; do
    todo=("${RUNTIMES[@]}")
    hf=()
    for r in "${todo[@]}"; do hf+=(-n "$r" "$(scen_cmd "$s" "$r")"); : >"$TMP/forced-${r//+/}"; done
    log "scenario $s: ${todo[*]} (warmup $WARMUP, runs $RUNS)"
    if ! hyperfine --style basic --warmup "$WARMUP" --runs "$RUNS" --export-json "$TMP/$s.json" "${hf[@]}" >&2; then
        log "scenario $s failed under hyperfine (one of ${todo[*]} failed an iteration)"
        for r in "${todo[@]}"; do STATUS[$r]="failing: an iteration of '$s' failed under hyperfine"; purge "$r"; done
        continue
    fi
    [ -n "$JSON_DIR" ] && { mkdir -p "$JSON_DIR" && cp "$TMP/$s.json" "$JSON_DIR/$s.json"; }
    for r in "${todo[@]}"; do
        read -r med p95 usr sys < <(jq -r --arg n "$r" '.results[] | select(.command==$n)
            | (.times | sort) as $t
            | [.median*1000, $t[(($t|length)*0.95|floor) - (if ($t|length)*0.95 == (($t|length)*0.95|floor) then 1 else 0 end)]*1000,
               .user*1000, .system*1000] | @tsv' "$TMP/$s.json")
        MED[$s,$r]=$med; P95[$s,$r]=$p95; USR[$s,$r]=$usr; SYS[$s,$r]=$sys
        LEFT[$s,$r]=$(leftovers "$r" | grep -c . || true)
        [ "${LEFT[$s,$r]}" -gt 0 ] && purge "$r"
        [ "$s" = lifecycle ] && FORCED[$r]=$(wc -l <"$TMP/forced-${r//+/}")
    done
done

# ----------------------------------------------------------- throughput ----
# CONTAINERS runs of /bin/true, PARALLEL at a time (xargs slot N uses bundle tp-<runtime>-N, whose
# cgroup no other running container has); wall time and the CPU of everything waited for
declare -A TPUT TPCPU TPFAIL
for r in "${RUNTIMES[@]}"; do
    n=${r//+/}
    c=$(rt_cmd "$r")
    : >"$TMP/tpfail-$n"
    log "throughput $r: $CONTAINERS containers, $PARALLEL in parallel"
    s0=$(date +%s%N)
    /usr/bin/time -f '%U %S' -o "$TMP/tptime-$n" \
        xargs -P "$PARALLEL" --process-slot-var=SLOT -I{} sh -c \
        "$c run --bundle $TMP/tp-$n-\$SLOT t{} >/dev/null 2>&1 </dev/null || echo {} >>$TMP/tpfail-$n" \
        < <(seq 1 "$CONTAINERS")
    s1=$(date +%s%N)
    TPUT[$r]=$(awk -v n="$CONTAINERS" -v ns=$((s1 - s0)) 'BEGIN { printf "%.1f", n / (ns / 1e9) }')
    TPCPU[$r]=$(awk -v n="$CONTAINERS" '{ printf "%.2f", ($1 + $2) * 1000 / n }' "$TMP/tptime-$n")
    TPFAIL[$r]=$(wc -l <"$TMP/tpfail-$n")
    purge "$r"
done

# ----------------------------------------------------------------- soak ----
# SOAK containers through rloxsc's whole lifecycle (create, start, wait for the exit, delete), PARALLEL
# at a time, in groups of 100: each group's wall time per container, and the host's available memory
# and slab after it. Flat means the hundredth container costs what the first did: nothing accumulates
# per container (state, mounts, id blocks, cgroups, kernel objects).
SOAK_OUT=""
if [ "$SOAK" -gt 0 ] && [ "${STATUS[rloxsc]:-}" = ok ]; then
    log "soak: $SOAK containers through rloxsc, $PARALLEL in parallel, in groups of 100"
    c=$(rt_cmd rloxsc)
    : >"$TMP/soakfail"
    mem() { awk '/^MemAvailable:/ { a = $2 } /^Slab:/ { s = $2 } END { printf "%d %d", a / 1024, s / 1024 }' /proc/meminfo; }
    read -r mem0 slab0 < <(mem)
    g=0
    SOAK_OUT=$(printf '  %-10s %12s %14s %10s\n' containers "ms/container" "MemAvail MiB" "Slab MiB")
    while [ $((g * 100)) -lt "$SOAK" ]; do
        from=$((g * 100 + 1)); to=$(( (g + 1) * 100 )); [ "$to" -gt "$SOAK" ] && to=$SOAK
        s0=$(date +%s%N)
        xargs -P "$PARALLEL" --process-slot-var=SLOT -I{} sh -c \
            "$c create --bundle $TMP/tp-rloxsc-\$SLOT s{} >/dev/null 2>&1 </dev/null && $c start s{} >/dev/null 2>&1 && { $c delete s{} >/dev/null 2>&1 || $c delete --force s{} >/dev/null 2>&1; } || { echo {} >>$TMP/soakfail; $c delete --force s{} >/dev/null 2>&1; }" \
            < <(seq "$from" "$to")
        s1=$(date +%s%N)
        read -r m s < <(mem)
        SOAK_OUT+=$(printf '\n  %4d-%-5d %12.2f %14d %10d' "$from" "$to" \
            "$(awk -v ns=$((s1 - s0)) -v n=$((to - from + 1)) 'BEGIN { print ns / 1e6 / n }')" "$m" "$s")
        g=$((g + 1))
    done
    SOAK_FAIL=$(wc -l <"$TMP/soakfail")
    SOAK_OUT+=$(printf '\n  (before: MemAvail %d MiB, Slab %d MiB; %d of %d failed; a create takes the cgroup of its xargs slot,' \
        "$mem0" "$slab0" "$SOAK_FAIL" "$SOAK")
    SOAK_OUT+=$'\n   so a group waits for each container to end: the time is the lifecycle under load, not one run)'
    purge rloxsc
fi

# ------------------------------------------------- syscalls and peak RSS ----
declare -A CALLS RSS
for r in "${RUNTIMES[@]}"; do
    n=${r//+/}
    rt_argv "$r"
    if strace -f -c -o "$TMP/strace-$n" "${RT_ARGV[@]}" run --bundle "$TMP/b-$n" sc </dev/null >/dev/null 2>&1; then
        CALLS[$r]=$(awk '$NF == "total" { print $4 }' "$TMP/strace-$n")
    else
        CALLS[$r]=fail
    fi
    timeout 20 "${RT_ARGV[@]}" delete --force sc >/dev/null 2>&1
    # max RSS (KiB) of the largest single process of the runtime's tree (reaped children fold in)
    if /usr/bin/time -f %M -o "$TMP/rss-$n" "${RT_ARGV[@]}" run --bundle "$TMP/b-$n" rss </dev/null >/dev/null 2>&1; then
        RSS[$r]=$(tail -n1 "$TMP/rss-$n")
    else
        RSS[$r]=fail
    fi
    timeout 20 "${RT_ARGV[@]}" delete --force rss >/dev/null 2>&1
done

# ------------------------------------------------ what each step costs ----
# crun given the hardened spec with one step taken out at a time: the difference to crun+h is what
# that step costs in the mechanics; and rloxsc's own phases, from its --debug timestamps
declare -A STEP_MED
STEP_NAMES=()
PHASES=""
if [ "$STEPS" = 1 ] && [ "${STATUS[crun+h]}" = ok ]; then
    declare -A STEP_JQ=(
        ["user namespace"]='.linux.namespaces |= map(select(.type != "user")) | del(.linux.uidMappings, .linux.gidMappings)'
        ["seccomp filter"]='del(.linux.seccomp)'
        ["masked and read-only paths"]='del(.linux.maskedPaths, .linux.readonlyPaths)'
        ["writable tmpfs paths"]='.mounts |= map(select((.options // []) | index("tmpcopyup") | not))'
        ["pids and memory limits"]='del(.linux.resources.pids, .linux.resources.memory)'
        ["cgroup namespace"]='.linux.namespaces |= map(select(.type != "cgroup"))'
    )
    STEP_NAMES=("user namespace" "cgroup namespace" "seccomp filter" "masked and read-only paths" "writable tmpfs paths" "pids and memory limits")
    hf=(-n "crun+h" "$(scen_cmd run crun+h)")
    i=0
    for st in "${STEP_NAMES[@]}"; do
        i=$((i + 1))
        jq "${STEP_JQ[$st]}" "$TMP/hardened-spec.json" >"$TMP/step$i.json" || continue
        mk_bundle "$TMP/step$i" "$TMP/step$i.json" "/$CG_PARENT/crunh-$TAG-s$i" '["/bin/true"]'
        hf+=(-n "step$i" "$(rt_cmd crun+h) run --bundle $TMP/step$i s\$\$")
    done
    # in ROUNDS rounds of RUNS/ROUNDS runs each, so that a drift of the machine during the
    # scenario falls on every variant alike; the median of all of a variant's runs
    ROUNDS=5
    per=$(( (RUNS + ROUNDS - 1) / ROUNDS )); [ "$per" -ge 2 ] || per=2
    log "hardening steps: crun+h with one step taken out at a time ($ROUNDS rounds of $per runs)"
    ok=1
    for round in $(seq 1 "$ROUNDS"); do
        hyperfine --style basic --warmup 1 --runs "$per" --export-json "$TMP/steps-$round.json" "${hf[@]}" >&2 ||
            { ok=0; break; }
    done
    if [ "$ok" = 1 ]; then
        jq -s '{results: (map(.results) | transpose | map({command: .[0].command, times: (map(.times) | add)}))}' \
            "$TMP"/steps-*.json >"$TMP/steps.json"
        [ -n "$JSON_DIR" ] && cp "$TMP/steps.json" "$JSON_DIR/steps.json"
        med_of() {
            jq -r --arg n "$1" '.results[] | select(.command==$n) | .times | sort
                | (if length % 2 == 1 then .[length/2|floor] else (.[length/2 - 1] + .[length/2]) / 2 end) * 1000' \
                "$TMP/steps.json"
        }
        STEP_MED[all]=$(med_of crun+h)
        i=0
        for st in "${STEP_NAMES[@]}"; do
            i=$((i + 1))
            STEP_MED[$st]=$(med_of "step$i")
        done
    fi
    purge crun+h
fi
if [ "$STEPS" = 1 ] && [ "${STATUS[rloxsc]}" = ok ]; then
    log "rloxsc phases: $RUNS runs with --debug"
    for i in $(seq 1 "$RUNS"); do
        "$(bin_of rloxsc)" --root "$(state_of rloxsc)" --debug --log "$TMP/phases.log" run --bundle "$TMP/b-rloxsc" ph$i \
            >/dev/null 2>&1 </dev/null
    done
    # each run's marks are "<verb> <id>: <phase> at <duration>": per phase, the median increment
    awk '
        function ms(d) { if (d ~ /µs$/) return d / 1000; if (d ~ /ms$/) return d + 0; if (d ~ /s$/) return d * 1000; return d }
        match($0, /msg="(create|run) ph[0-9]+: [^"]* at [0-9.]+[^"0-9]*"/) {
            m = substr($0, RSTART + 5, RLENGTH - 6)
            id = m; sub(/: .*/, "", id); sub(/^(create|run) /, "", id)
            ph = m; sub(/^[^:]*: /, "", ph); t = ph; sub(/.* at /, "", t); sub(/ at [^ ]*$/, "", ph)
            sub(/ \(rootfs [^)]*\)/, "", ph)
            v = ms(t); d = v - last[id]; last[id] = v
            if (!(ph in seen)) { seen[ph] = ++np }
            printf "%d\t%s\t%.3f\n", seen[ph], ph, d
        }' "$TMP/phases.log" >"$TMP/phases.tsv"
    for k in $(cut -f1 "$TMP/phases.tsv" | sort -un); do
        ph=$(awk -F'\t' -v k="$k" '$1 == k { print $2; exit }' "$TMP/phases.tsv")
        med=$(awk -F'\t' -v k="$k" '$1 == k { print $3 }' "$TMP/phases.tsv" | sort -n |
            awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
        PHASES+=$(printf '  %-42s %7.2f ms' "$ph" "$med")$'\n'
    done
    purge rloxsc
fi

# --------------------------------------------------------------- report ----
ratio() { # a b -> a/b, 2 decimals, or n/a
    if [ -n "${1:-}" ] && [ -n "${2:-}" ] && [ "$1" != fail ] && [ "$2" != fail ]; then
        awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "n/a" }'
    else
        printf 'n/a'
    fi
}
fmt() { if [ -n "${1:-}" ] && [ "$1" != fail ]; then printf '%.2f' "$1"; else printf -- '-'; fi }
cpu() { [ -n "${USR[run,$1]:-}" ] && awk -v u="${USR[run,$1]}" -v s="${SYS[run,$1]}" 'BEGIN { printf "%.2f", u + s }'; }

echo
echo "rloxsc benchmark - $(date -u '+%Y-%m-%d %H:%M:%SZ'), $(nproc) CPUs, kernel $(uname -r), $LAYOUT; state on $STATE_FS"
echo "runs=$RUNS warmup=$WARMUP, throughput $CONTAINERS containers x $PARALLEL parallel; runc $(runc --version | awk 'NR==1{print $3}'), crun $(/usr/bin/crun --version | awk 'NR==1{print $3}'), hyperfine $(hyperfine --version | awk '{print $2}'), rloxsc $("$RLOXSC" --version 2>/dev/null | awk 'NR==2{print $2}')${BASELINE:+, rloxsc-base $("$BASELINE" --version 2>/dev/null | awk 'NR==2{print $2}')}"
echo
printf '%-14s %9s %9s %11s %12s %10s %10s %9s %9s %5s\n' runtime "run med" "run p95" "lifecycle" "CPU/run" "cont/s" "CPU/cont" syscalls "RSS KiB" left
printf '%-14s %9s %9s %11s %12s %10s %10s %9s %9s %5s\n' "" ms ms "med ms" "u+s ms" "(x$PARALLEL)" "(x$PARALLEL) ms" "per run" "peak" ""
for r in "${RUNTIMES_ALL[@]}"; do
    [ "${STATUS[$r]:-}" = ok ] || [ -n "${MED[run,$r]:-}" ] || continue
    printf '%-14s %9s %9s %11s %12s %10s %10s %9s %9s %5s\n' "$r" "$(fmt "${MED[run,$r]:-}")" "$(fmt "${P95[run,$r]:-}")" \
        "$(fmt "${MED[lifecycle,$r]:-}")" "$(fmt "$(cpu "$r")")" "${TPUT[$r]:--}" "${TPCPU[$r]:--}" \
        "${CALLS[$r]:--}" "${RSS[$r]:--}" "$(( ${LEFT[run,$r]:-0} + ${LEFT[lifecycle,$r]:-0} ))"
done
echo
echo "ratios to crun (same run):"
printf '%-14s %9s %9s %11s %12s %10s %10s %9s %9s\n' runtime "run med" "run p95" lifecycle "CPU/run" "cont/s" "CPU/cont" syscalls "RSS"
for r in rloxsc rloxsc-reexec rloxsc-base runc crun+h; do
    [ -n "${MED[run,$r]:-}" ] || continue
    printf '%-14s %9s %9s %11s %12s %10s %10s %9s %9s\n' "$r" \
        "$(ratio "${MED[run,$r]:-}" "${MED[run,crun]:-}")" "$(ratio "${P95[run,$r]:-}" "${P95[run,crun]:-}")" \
        "$(ratio "${MED[lifecycle,$r]:-}" "${MED[lifecycle,crun]:-}")" "$(ratio "$(cpu "$r")" "$(cpu crun)")" \
        "$(ratio "${TPUT[$r]:-}" "${TPUT[crun]:-}")" "$(ratio "${TPCPU[$r]:-}" "${TPCPU[crun]:-}")" \
        "$(ratio "${CALLS[$r]:-}" "${CALLS[crun]:-}")" "$(ratio "${RSS[$r]:-}" "${RSS[crun]:-}")"
done
if [ -n "${MED[run,rloxsc]:-}" ] && [ -n "${MED[run,crun]:-}" ]; then
    echo
    echo "issue #14 targets (informational; this script never fails on them):"
    printf '  run median <= 1.0 x crun:     %s\n' "$(ratio "${MED[run,rloxsc]}" "${MED[run,crun]}")"
    printf '  throughput >= 1.0 x crun:     %s\n' "$(ratio "${TPUT[rloxsc]:-}" "${TPUT[crun]:-}")"
    printf '  CPU/container <= 1.2 x crun:  %s (run), %s (x%s)\n' "$(ratio "$(cpu rloxsc)" "$(cpu crun)")" \
        "$(ratio "${TPCPU[rloxsc]:-}" "${TPCPU[crun]:-}")" "$PARALLEL"
    printf '  peak RSS <= runc:             %s x runc\n' "$(ratio "${RSS[rloxsc]:-}" "${RSS[runc]:-}")"
fi
if [ -n "${MED[run,rloxsc]:-}" ] && [ -n "${MED[run,crun+h]:-}" ]; then
    echo
    echo "issue #31 targets (informational): rloxsc against crun+h (the same hardened work) and crun"
    printf '  run median  <= 1.15 x crun+h: %s    <= 1.5 x crun: %s\n' \
        "$(ratio "${MED[run,rloxsc]}" "${MED[run,crun+h]}")" "$(ratio "${MED[run,rloxsc]}" "${MED[run,crun]:-}")"
    printf '  CPU/run     <= 1.15 x crun+h: %s\n' "$(ratio "$(cpu rloxsc)" "$(cpu crun+h)")"
    printf '  throughput  >= 0.9 x crun+h:  %s\n' "$(ratio "${TPUT[rloxsc]:-}" "${TPUT[crun+h]:-}")"
    printf '  syscalls    <= 1.3 x crun+h:  %s\n' "$(ratio "${CALLS[rloxsc]:-}" "${CALLS[crun+h]:-}")"
fi
if [ -n "$SOAK_OUT" ]; then
    echo
    echo "soak: $SOAK containers through rloxsc (create, start, delete; $PARALLEL in parallel), per group of 100:"
    printf '%s\n' "$SOAK_OUT"
fi
forced=""
for r in "${RUNTIMES_ALL[@]}"; do [ -n "${FORCED[$r]:-}" ] && forced+=" $r ${FORCED[$r]},"; done
[ -n "$forced" ] && echo "lifecycle: delete --force needed (still running) in N of $((WARMUP + RUNS)) iterations:${forced%,}"
if [ -n "${STEP_MED[all]:-}" ]; then
    echo
    echo "what each hardening step costs in the mechanics: crun+h's run median with the step taken out"
    echo "(interleaved rounds; differences below ~0.3 ms are within this machine's noise)"
    printf '  %-34s %9s ms\n' "crun+h (all steps)" "$(fmt "${STEP_MED[all]}")"
    for st in "${STEP_NAMES[@]}"; do
        [ -n "${STEP_MED[$st]:-}" ] || continue
        printf '  %-34s %9s ms   (the step costs %s ms)\n' "without $st" "$(fmt "${STEP_MED[$st]}")" \
            "$(awk -v a="${STEP_MED[all]}" -v b="${STEP_MED[$st]}" 'BEGIN { printf "%.2f", a - b }')"
    done
    printf '  %-34s %9s ms\n' "crun, runc spec (no hardening)" "$(fmt "${MED[run,crun]:-}")"
fi
if [ -n "$PHASES" ]; then
    echo
    echo "rloxsc's own phases (median increments of its --debug marks; --debug logging inflates the libcontainer phases):"
    printf "%s" "$PHASES"
fi

if [ "$RECORD" = 1 ] && [ -n "${MED[run,rloxsc]:-}" ] && [ -n "${MED[run,crun+h]:-}" ]; then
    printf '| %s | `%s` | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(date -u +%Y-%m-%d)" \
        "$("$RLOXSC" --version 2>/dev/null | awk 'NR==2{print substr($2, 1, 7)}')" \
        "$(fmt "${MED[run,rloxsc]}")" "$(fmt "${MED[run,crun+h]}")" "$(fmt "${MED[run,crun]:-}")" \
        "$(ratio "${MED[run,rloxsc]}" "${MED[run,crun+h]}")" "$(ratio "$(cpu rloxsc)" "$(cpu crun+h)")" \
        "$(ratio "${TPUT[rloxsc]:-}" "${TPUT[crun+h]:-}")" "$(ratio "${CALLS[rloxsc]:-}" "${CALLS[crun+h]:-}")" \
        "$STATE_FS" >>"$REPO/docs/benchmarks.md"
    log "recorded in docs/benchmarks.md"
fi

rc=0
[ "${SOAK_FAIL:-0}" -gt 0 ] && { echo "WARNING: $SOAK_FAIL of $SOAK soak containers failed"; rc=1; }
for r in "${RUNTIMES_ALL[@]}"; do
    left=$(( ${LEFT[run,$r]:-0} + ${LEFT[lifecycle,$r]:-0} ))
    [ "$left" -gt 0 ] && { echo "WARNING: $r left $left container(s) behind (run/delete leaks state)"; rc=1; }
    [ "${TPFAIL[$r]:-0}" -gt 0 ] && { echo "WARNING: $r failed ${TPFAIL[$r]} of $CONTAINERS throughput runs"; rc=1; }
    [ "${STATUS[$r]:-}" = ok ] || { echo "WARNING: $r was not benchmarked: ${STATUS[$r]:-unknown}"; rc=1; }
done
exit "$rc"
