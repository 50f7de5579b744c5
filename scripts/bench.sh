#!/usr/bin/env bash
# bench.sh - compare container start-up cost of rloxsc, runc and crun.
#
# This is a BENCHMARK, not a test: it never fails because something is
# slow. It exits 1 only when a runtime could not be benchmarked at all
# (e.g. rloxsc not built yet or failing its smoke run), 2 on usage/setup
# errors. See docs/benchmarks.md for how to read the output.
#
# Usage: scripts/bench.sh [--runs N] [--rloxsc PATH] [--json-dir DIR]
#   --runs N        timed runs per runtime and scenario (default 30)
#   --rloxsc PATH   rloxsc binary (default <repo>/target/release/rloxsc)
#   --json-dir DIR  also copy hyperfine's JSON exports to DIR (kept)
#
# Needs root (creates namespaces and cgroups). Installs missing tools with
# apt-get. Everything it creates lives in a mktemp dir under /tmp and in
# cgroups /rloxsc-bench/<runtime>-<tag> (tag = this run's temp-dir suffix),
# all removed again on exit.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=30
RLOXSC="$REPO/target/release/rloxsc"
JSON_DIR=""
WARMUP=3

usage() { sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS=${2:?--runs needs a value}; shift 2 ;;
        --runs=*) RUNS=${1#*=}; shift ;;
        --rloxsc) RLOXSC=${2:?--rloxsc needs a value}; shift 2 ;;
        --rloxsc=*) RLOXSC=${1#*=}; shift ;;
        --json-dir) JSON_DIR=${2:?--json-dir needs a value}; shift 2 ;;
        --json-dir=*) JSON_DIR=${1#*=}; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done
case "$RUNS" in ''|*[!0-9]*) echo "bench.sh: --runs must be a positive integer" >&2; exit 2 ;; esac
[ "$RUNS" -ge 2 ] || { echo "bench.sh: --runs must be >= 2 (hyperfine needs 2 for a stddev)" >&2; exit 2; }
case "$RLOXSC" in /*) ;; *) RLOXSC="$PWD/$RLOXSC" ;; esac

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench.sh: %s\n' "$*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "must run as root (containers need namespaces and cgroups)"

# ---------------------------------------------------------------- tools ----
need_pkgs=()
command -v hyperfine >/dev/null 2>&1 || need_pkgs+=(hyperfine)
command -v runc >/dev/null 2>&1 || need_pkgs+=(runc)
[ -x /usr/bin/crun ] || need_pkgs+=(crun)
command -v jq >/dev/null 2>&1 || need_pkgs+=(jq)
[ -x /usr/bin/time ] || need_pkgs+=(time)
command -v unshare >/dev/null 2>&1 || need_pkgs+=(util-linux)
# The rootfs needs a *static* busybox (it is copied into an empty rootfs).
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

CRUN_WRAPPER="$REPO/scripts/crun-hybrid.sh"
[ -f "$CRUN_WRAPPER" ] || die "missing $CRUN_WRAPPER"
[ -x "$CRUN_WRAPPER" ] || chmod +x "$CRUN_WRAPPER" 2>/dev/null || die "$CRUN_WRAPPER is not executable"

# ------------------------------------------------------------ temp dir ----
TMP=$(mktemp -d /tmp/rloxsc-bench.XXXXXX) || die "mktemp failed"
TAG=${TMP##*.}                    # random suffix, makes our cgroups unique
CG_PARENT=rloxsc-bench
RUNTIMES_ALL=(rloxsc runc crun)

# Command prefix (shell-quoted, for hyperfine's sh -c) for runtime $1.
rt_cmd() {
    case "$1" in
        rloxsc) printf '%q --root %q' "$RLOXSC" "$TMP/state-rloxsc" ;;
        runc)   printf '%q --root %q' "$(command -v runc)" "$TMP/state-runc" ;;
        crun)   printf '%q --root %q' "$CRUN_WRAPPER" "$TMP/state-crun" ;;
    esac
}
# Same, as an argv array in RT_ARGV, for direct calls from this script.
rt_argv() {
    case "$1" in
        rloxsc) RT_ARGV=("$RLOXSC" --root "$TMP/state-rloxsc") ;;
        runc)   RT_ARGV=("$(command -v runc)" --root "$TMP/state-runc") ;;
        crun)   RT_ARGV=("$CRUN_WRAPPER" --root "$TMP/state-crun") ;;
    esac
}

# leftovers RUNTIME: ids of the containers the runtime still lists under its --root.
leftovers() {
    local r=$1
    [ -d "$TMP/state-$r" ] || return 0
    [ "$r" = rloxsc ] && [ ! -x "$RLOXSC" ] && return 0
    rt_argv "$r"
    timeout 20 "${RT_ARGV[@]}" list -q 2>/dev/null || true
}

# purge RUNTIME: delete --force every container the runtime still lists.
purge() {
    local r=$1 id
    rt_argv "$r"
    for id in $(leftovers "$r"); do
        timeout 20 "${RT_ARGV[@]}" delete --force "$id" >/dev/null 2>&1 ||
            echo "bench.sh: warning: $r delete --force $id failed" >&2
    done
}

cleanup() {
    local rc=$? r d
    trap - EXIT INT TERM
    for r in "${RUNTIMES_ALL[@]}"; do purge "$r"; done
    # Only the cgroups this run created, deepest first; the shared parent
    # goes too if it is then empty (rmdir fails harmlessly otherwise).
    for d in /sys/fs/cgroup/*/"$CG_PARENT"/*-"$TAG"/*/ /sys/fs/cgroup/*/"$CG_PARENT"/*-"$TAG"/; do
        [ -d "$d" ] && { rmdir "$d" 2>/dev/null || echo "bench.sh: warning: could not rmdir cgroup $d" >&2; }
    done
    for d in /sys/fs/cgroup/*/"$CG_PARENT"/; do
        [ -d "$d" ] && rmdir "$d" 2>/dev/null
    done
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# -------------------------------------------------------------- bundle ----
BASE="$TMP/bundle"
mkdir -p "$BASE"
if [ -f "$REPO/scripts/build-bundle.sh" ]; then
    log "building rootfs with scripts/build-bundle.sh"
    bash "$REPO/scripts/build-bundle.sh" "$BASE" >&2 || die "scripts/build-bundle.sh $BASE failed"
    [ -x "$BASE/rootfs/bin/true" ] || die "scripts/build-bundle.sh made no $BASE/rootfs/bin/true"
else
    log "building busybox rootfs inline"
    mkdir -p "$BASE"/rootfs/{bin,dev,etc,proc,sys,tmp,root}
    cp /bin/busybox "$BASE/rootfs/bin/busybox"
    for a in $(/bin/busybox --list); do
        [ -e "$BASE/rootfs/bin/$a" ] || ln -s busybox "$BASE/rootfs/bin/$a"
    done
fi
rm -f "$BASE/config.json"
(cd "$BASE" && runc spec) || die "runc spec failed"
ROOTFS="$BASE/rootfs"

# One bundle dir per runtime (and one smoke bundle per runtime); they only
# hold a config.json and all point at the SAME rootfs (absolute root.path),
# so the runtimes differ only in their cgroupsPath.
# mk_bundle DIR CGROUP ARGS_JSON
mk_bundle() {
    mkdir -p "$1"
    jq --arg root "$ROOTFS" --arg cg "$2" --argjson args "$3" \
        '.process.terminal=false | .process.args=$args | .root.path=$root | .linux.cgroupsPath=$cg' \
        "$BASE/config.json" >"$1/config.json" || die "jq failed writing $1/config.json"
}
for r in "${RUNTIMES_ALL[@]}"; do
    mk_bundle "$TMP/b-$r" "/$CG_PARENT/$r-$TAG" '["/bin/true"]'
    mk_bundle "$TMP/smoke-$r" "/$CG_PARENT/$r-smoke-$TAG" '["/bin/sh","-c","exit 42"]'
    mkdir -p "$TMP/state-$r"
done

# --------------------------------------------------------------- smoke ----
# A smoke run must really start the container: the process exits 42 and the
# runtime has to pass that status on (runc/crun semantics), so a stub that
# just exits 0 does not count as working.
declare -A STATUS   # runtime -> ok | why not
RUNTIMES=()
for r in "${RUNTIMES_ALL[@]}"; do
    if [ "$r" = rloxsc ] && [ ! -x "$RLOXSC" ]; then
        STATUS[$r]="missing: $RLOXSC not found (cargo build --release?)"
        continue
    fi
    rt_argv "$r"
    out=$(timeout 60 "${RT_ARGV[@]}" run --bundle "$TMP/smoke-$r" smoke </dev/null 2>&1)
    st=$?
    timeout 20 "${RT_ARGV[@]}" delete --force smoke >/dev/null 2>&1
    if [ "$st" -eq 42 ]; then
        STATUS[$r]=ok
        RUNTIMES+=("$r")
    else
        STATUS[$r]="failing: smoke run exited $st, expected 42${out:+ ($(printf '%s' "$out" | tr '\n' ' ' | cut -c1-200))}"
    fi
    log "smoke $r: ${STATUS[$r]}"
done
[ ${#RUNTIMES[@]} -gt 0 ] || die "no runtime passed the smoke run"

# ----------------------------------------------------------- scenarios ----
# run:       one foreground `run` of /bin/true; run deletes the container
#            itself when the process exits. $$ is the PID of hyperfine's
#            per-iteration shell, so every iteration gets a fresh id.
# lifecycle: create; start; delete. start returns at once, so /bin/true may
#            still be running when delete comes; then a plain delete fails
#            and we fall back to delete --force (counted per runtime).
scen_cmd() { # scenario runtime
    local c b="$TMP/b-$2"
    c=$(rt_cmd "$2")
    case "$1" in
        run) printf '%s run --bundle %q r$$' "$c" "$b" ;;
        lifecycle)
            printf '%s create --bundle %q l$$ && %s start l$$ && { %s delete l$$ 2>/dev/null || { echo f >>%q; %s delete --force l$$; }; }' \
                "$c" "$b" "$c" "$c" "$TMP/forced-$2" "$c" ;;
    esac
}

declare -A MED MEAN SD RSS LEFT FORCED
SCENARIOS=(run lifecycle)
for s in "${SCENARIOS[@]}"; do
    todo=("${RUNTIMES[@]}")
    for attempt in 1 2; do
        args=()
        for r in "${todo[@]}"; do args+=(-n "$r" "$(scen_cmd "$s" "$r")"); done
        for r in "${todo[@]}"; do : >"$TMP/forced-$r"; done
        log "scenario $s: ${todo[*]} (warmup $WARMUP, runs $RUNS)"
        if hyperfine --style basic --warmup "$WARMUP" --runs "$RUNS" \
            --export-json "$TMP/$s.json" "${args[@]}" >&2; then
            break
        fi
        # hyperfine aborts the whole invocation if any command fails. If
        # rloxsc was part of it, retry without it so runc vs crun still runs.
        if [ "$attempt" -eq 1 ] && [[ " ${todo[*]} " == *" rloxsc "* ]]; then
            STATUS[rloxsc]="failing: a '$s' iteration failed under hyperfine"
            log "scenario $s failed with rloxsc included; retrying without it"
            new=(); for r in "${todo[@]}"; do [ "$r" = rloxsc ] || new+=("$r"); done
            todo=("${new[@]}")
            purge rloxsc   # whatever the failed attempt left behind
            [ ${#todo[@]} -gt 0 ] && continue
        fi
        log "scenario $s failed"; rm -f "$TMP/$s.json"
        for r in "${todo[@]}"; do
            [ "${STATUS[$r]}" = ok ] && STATUS[$r]="failing: the '$s' scenario failed under hyperfine"
        done
        break
    done
    [ -f "$TMP/$s.json" ] || continue
    [ -n "$JSON_DIR" ] && { mkdir -p "$JSON_DIR" && cp "$TMP/$s.json" "$JSON_DIR/$s.json"; }
    for r in "${todo[@]}"; do
        read -r med mean sd < <(jq -r --arg n "$r" \
            '.results[] | select(.command==$n) | [.median*1000, .mean*1000, .stddev*1000] | @tsv' \
            "$TMP/$s.json")
        MED[$s,$r]=$med; MEAN[$s,$r]=$mean; SD[$s,$r]=$sd
        # Containers that should be gone after every iteration.
        # ask the runtime itself: its state dir layout is its own business
        LEFT[$s,$r]=$(leftovers "$r" | grep -c . || true)
        [ "${LEFT[$s,$r]}" -gt 0 ] && purge "$r"
        if [ "$s" = lifecycle ]; then
            FORCED[$r]=$(wc -l <"$TMP/forced-$r")
        fi
    done
done

# ------------------------------------------------------ wrapper overhead ----
# crun only works here through scripts/crun-hybrid.sh (unshare + sh + umount
# before exec'ing crun), so every crun call above paid that cost too. Measure
# it (median of `wrapper --version` minus `crun --version`) so the report can
# show crun with the wrapper's cost taken out (x1 for run, x3 for lifecycle).
OVH=""
if [[ " ${RUNTIMES[*]} " == *" crun "* ]]; then
    log "measuring crun-hybrid.sh wrapper overhead"
    if hyperfine -N --style basic --warmup "$WARMUP" --runs "$RUNS" --export-json "$TMP/wrapper.json" \
        -n crun "/usr/bin/crun --version" -n wrapper "$(printf %q "$CRUN_WRAPPER") --version" >&2; then
        OVH=$(jq -r '(.results[] | select(.command=="wrapper") | .median)
                     - (.results[] | select(.command=="crun") | .median) | . * 1000' "$TMP/wrapper.json")
        [ -n "$JSON_DIR" ] && cp "$TMP/wrapper.json" "$JSON_DIR/wrapper.json"
    fi
fi

# ------------------------------------------------------------- peak RSS ----
# Max RSS (KiB) of one foreground run, as reported by GNU time: the peak of
# the largest single process in the runtime's own process tree (the kernel
# folds reaped children into ru_maxrss), including the container's init
# before it execs /bin/true. For crun it includes the wrapper's unshare/sh.
for r in "${RUNTIMES[@]}"; do
    rt_argv "$r"
    if /usr/bin/time -f %M -o "$TMP/rss-$r" "${RT_ARGV[@]}" run --bundle "$TMP/b-$r" rss </dev/null >/dev/null 2>&1; then
        RSS[$r]=$(tail -n1 "$TMP/rss-$r")
    else
        RSS[$r]="fail"
    fi
    timeout 20 "${RT_ARGV[@]}" delete --force rss >/dev/null 2>&1
done

# --------------------------------------------------------------- report ----
ratio() { # a b -> a/b with 2 decimals, or n/a
    if [ -n "${1:-}" ] && [ -n "${2:-}" ]; then
        awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "n/a" }'
    else
        printf 'n/a'
    fi
}
fmt() { [ -n "${1:-}" ] && printf '%.2f' "$1" || printf -- '-'; }

echo
echo "rloxsc benchmark - $(date -u '+%Y-%m-%d %H:%M:%SZ'), $(nproc) CPUs, kernel $(uname -r), runs=$RUNS warmup=$WARMUP"
echo "versions: runc $(runc --version | awk 'NR==1{print $3}'), crun $(/usr/bin/crun --version | awk 'NR==1{print $3}') (via scripts/crun-hybrid.sh), hyperfine $(hyperfine --version | awk '{print $2}')"
echo
printf '%-10s %-7s %11s %22s %14s %9s\n' scenario runtime "median ms" "mean ± stddev ms" "peak RSS KiB" leftover
printf '%-10s %-7s %11s %21s %14s %9s\n' ---------- ------- ----------- --------------------- -------------- ---------
for s in "${SCENARIOS[@]}"; do
    for r in "${RUNTIMES_ALL[@]}"; do
        if [ -n "${MED[$s,$r]:-}" ]; then
            rss=-; [ "$s" = run ] && rss=${RSS[$r]:--}
            ms="$(fmt "${MEAN[$s,$r]}") ± $(fmt "${SD[$s,$r]}")"
            printf '%-10s %-7s %11s %22s %14s %9s\n' "$s" "$r" "$(fmt "${MED[$s,$r]}")" "$ms" "$rss" "${LEFT[$s,$r]}"
        else
            printf '%-10s %-7s %11s %21s %14s %9s\n' "$s" "$r" "-" "-" "-" "-"
        fi
    done
done
echo
for s in "${SCENARIOS[@]}"; do
    printf '%-10s rloxsc/runc = %s   rloxsc/crun = %s   (crun/runc = %s)   [ratios of medians]\n' "$s" \
        "$(ratio "${MED[$s,rloxsc]:-}" "${MED[$s,runc]:-}")" \
        "$(ratio "${MED[$s,rloxsc]:-}" "${MED[$s,crun]:-}")" \
        "$(ratio "${MED[$s,crun]:-}" "${MED[$s,runc]:-}")"
done
forced=""
for r in "${RUNTIMES_ALL[@]}"; do
    [ -n "${FORCED[$r]:-}" ] && [ -n "${MED[lifecycle,$r]:-}" ] && forced+=" $r ${FORCED[$r]},"
done
[ -n "$forced" ] && echo "lifecycle: plain delete refused (still running), delete --force used, in N of $((WARMUP + RUNS)) iterations:${forced%,}"
if [ -n "$OVH" ]; then
    echo
    echo "crun-hybrid.sh wrapper overhead: $(fmt "$OVH") ms per crun call (included in the crun rows above)."
    for s in "${SCENARIOS[@]}"; do
        [ -n "${MED[$s,crun]:-}" ] || continue
        calls=1; [ "$s" = lifecycle ] && calls=3
        adj=$(awk -v m="${MED[$s,crun]}" -v o="$OVH" -v c="$calls" 'BEGIN { printf "%.4f", m - c * o }')
        printf '%-10s crun without wrapper ~ %s ms   rloxsc/crun(no wrapper) = %s\n' "$s" \
            "$(fmt "$adj")" "$(ratio "${MED[$s,rloxsc]:-}" "$adj")"
    done
fi
echo
echo "issue target: rloxsc run median <= runc's; project goal 0.8 x crun"
echo "(leftover = containers still in the runtime's state dir after the scenario; should be 0)"

rc=0
for s in "${SCENARIOS[@]}"; do
    for r in "${RUNTIMES_ALL[@]}"; do
        if [ "${LEFT[$s,$r]:-0}" -gt 0 ]; then
            echo "WARNING: $r left ${LEFT[$s,$r]} container(s) behind in the '$s' scenario (run/delete leaks state)"
            rc=1
        fi
    done
done
for r in "${RUNTIMES_ALL[@]}"; do
    if [ "${STATUS[$r]}" != ok ]; then
        echo "WARNING: $r was not benchmarked (or only partly): ${STATUS[$r]}"
        rc=1
    fi
done
exit "$rc"
