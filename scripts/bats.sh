#!/usr/bin/env bash
# bats.sh - a developer check (`make bats`): runc's own integration suite (tests/integration/*.bats of
# runc 1.1.5, the version Debian 12 ships) against rloxsc and against runc, side by side, in one run.
#
# Nothing fetched here is ever committed. The suite comes from Debian's archive the ordinary way:
# `apt-get source runc` through a private apt configuration under WORK (a deb-src list of its own, so
# the host's sources and lists are left alone), unpacked and built under WORK: runc's helper programs
# (recvtty, sd-helper, seccompagent) with Debian's golang-go and the Go libraries Debian packages
# (the source package's Build-Depends, installed with apt-get). runc itself and bats are Debian's
# `runc` and `bats` packages. The busybox image the suite downloads is built here from Debian's
# busybox-static instead (get-images.sh only downloads what is missing).
#
# Usage (as root):
#   scripts/bats.sh [--rloxsc BIN] [--runc BIN] [--work DIR] [--runtimes "rloxsc runc"]
#                   [--files "exec kill ..."]    (names of tests/integration/*.bats, default: all but
#                                                 hooks, mounts_sshfs and checkpoint)
#                   [--report-only]              (print the comparison of the last run in WORK again)
# Environment: BATS_TEST_TIMEOUT (seconds per test, default 90).
#
# Output: per file and per runtime the TAP results (WORK/results/<runtime>/<file>.tap), then for each
# runtime "N passed, M failed, K skipped", then every test runc passes and rloxsc fails, each marked
# `expected` when tests/bats-expected-failures.txt names it (a hardening rule and its policy key, or
# runc's own debug/version text) or `UNEXPECTED`, and the entries of that list that now pass.
# Exit status: 0 when rloxsc fails nothing beyond the list and every listed test it ran still fails, 1
# otherwise, 2 on a setup error.
#
# Isolation: every test makes its own state root under a temporary directory of this run (the
# suite's ROOT), so /run/runc and /run/rloxsc are never listed or touched; the cgroups the suite makes
# are its own (runc-cgroups-integration-test/...). After each file, containers left in this run's
# state roots are deleted with --force by the runtime that made them.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RLOXSC_BIN="$REPO/target/x86_64-unknown-linux-gnu/release/rloxsc"
RUNC_BIN=/usr/sbin/runc
WORK="$REPO/target/bats"
RUNTIMES="rloxsc runc"
FILES=""
REPORT_ONLY=0
RUNC_DEB_VERSION="1.1.5+ds1"
EXPECTED="$REPO/tests/bats-expected-failures.txt"
while [ $# -gt 0 ]; do
    case "$1" in
        --rloxsc) RLOXSC_BIN=$2; shift 2 ;;
        --runc) RUNC_BIN=$2; shift 2 ;;
        --work) WORK=$2; shift 2 ;;
        --runtimes) RUNTIMES=$2; shift 2 ;;
        --files) FILES=$2; shift 2 ;;
        --report-only) REPORT_ONLY=1; shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
die() { echo "bats.sh: $*" >&2; exit 2; }
# the suite runs from its own directory: a relative binary path (make's) would name nothing there
RLOXSC_BIN=$(readlink -f "$RLOXSC_BIN") || die "no rloxsc binary at $RLOXSC_BIN"
RUNC_BIN=$(readlink -f "$RUNC_BIN") || die "no runc binary at $RUNC_BIN"
[ "$(id -u)" = 0 ] || die "must run as root (the suite creates real containers)"
export DEBIAN_FRONTEND=noninteractive
mkdir -p "$WORK" || die "cannot create $WORK"
WORK=$(cd "$WORK" && pwd)
SRC="$WORK/runc-$RUNC_DEB_VERSION"
IT="$SRC/tests/integration"
RESULTS="$WORK/results"

setup() {
    # Debian's runc and bats, Go, and what the helpers and the suite use
    local pkgs=(runc bats golang-go dpkg-dev jq gawk busybox-static xz-utils iproute2 procps bsdutils) missing=()
    local p
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "bats: installing ${missing[*]}"
        apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
            die "cannot install ${missing[*]}"
    fi
    [ -x "$RUNC_BIN" ] || die "no runc at $RUNC_BIN"

    # the source package, through a private apt configuration (deb-src only, lists under WORK)
    if [ ! -f "$SRC/tests/integration/helpers.bash" ]; then
        local apt="$WORK/apt"
        mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$WORK/dl"
        cat >"$apt/sources.list" <<'EOF'
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian-security bookworm-security main
EOF
        local o=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
            -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache")
        echo "bats: apt-get source runc ($RUNC_DEB_VERSION, Debian's archive)"
        apt-get "${o[@]}" update -qq || die "apt-get update of the deb-src list failed"
        (cd "$WORK/dl" && apt-get "${o[@]}" source --download-only "runc=$(apt-cache "${o[@]}" showsrc runc |
            awk '/^Version: '"${RUNC_DEB_VERSION//+/\\+}"'/ {print $2; exit}')") >/dev/null 2>&1 ||
            die "apt-get source runc failed"
        local dsc
        dsc=$(ls "$WORK"/dl/runc_"$RUNC_DEB_VERSION"-*.dsc 2>/dev/null | tail -n 1)
        [ -n "$dsc" ] || die "no runc $RUNC_DEB_VERSION .dsc was downloaded"
        rm -rf "$SRC.tmp" && dpkg-source -x "$dsc" "$SRC.tmp" >/dev/null || die "dpkg-source -x $dsc failed"
        mv "$SRC.tmp" "$SRC"
    fi

    # events.bats waits (`wait` without arguments) for its two subshells, and so also for the recvtty
    # its setup started in the background: with Debian's bats 1.8 each of its tests then hangs until
    # BATS_TEST_TIMEOUT under runc as under rloxsc (6 min per runtime, nothing tested). Each `wait`
    # is made to wait for the two subshells only; nothing else in the suite is changed.
    if [ ! -f "$IT/.rloxsc-events-wait" ]; then
        python3 - "$IT/events.bats" <<'PY' || die "cannot adjust events.bats"
import re, sys
p = sys.argv[1]
s = open(p).read()
s, n1 = re.subn(r"^(\t\(__runc events [^\n]*\) &)$", r"\1\n\tsubshells=($!)", s, flags=re.M)
s, n2 = re.subn(r"^(\t\) &)$", r"\1\n\tsubshells+=($!)", s, flags=re.M)
s, n3 = re.subn(r"^\twait # .*$", '\twait "${subshells[@]}"', s, flags=re.M)
if not (n1 == n2 == n3 == 2):
    sys.exit(f"events.bats is not the one expected ({n1}, {n2}, {n3})")
open(p, "w").write(s)
PY
        touch "$IT/.rloxsc-events-wait"
    fi

    # the helpers' Go libraries: the source package's own Build-Depends (golang-*-dev, libseccomp-dev)
    local deps
    deps=$(sed -n '/^Build-Depends:/,/^[A-Z][A-Za-z-]*:/p' "$SRC/debian/control" |
        grep -o 'golang-[a-z0-9.-]*-dev\|libseccomp-dev\|pkg-config' | sort -u)
    missing=()
    for p in $deps; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "bats: installing the helpers' Build-Depends: ${missing[*]}"
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
            { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } ||
            die "cannot install ${missing[*]}"
    fi

    # recvtty, sd-helper, seccompagent (tag seccomp, as runc's Makefile builds it), GOPATH mode
    local gopath="$WORK/gopath" h
    mkdir -p "$gopath/src/github.com/opencontainers"
    ln -sfn "$SRC" "$gopath/src/github.com/opencontainers/runc"
    for h in recvtty sd-helper seccompagent; do
        [ -x "$SRC/contrib/cmd/$h/$h" ] && continue
        echo "bats: building $h"
        (cd "$gopath/src/github.com/opencontainers/runc/contrib/cmd/$h" &&
            GOPATH="$gopath:/usr/share/gocode" GO111MODULE=off GOCACHE="$WORK/gocache" GOFLAGS= \
                nice -n 19 go build -tags seccomp -o "$h" .) || die "building $h failed"
    done

    # the suite's images, made here: busybox from busybox-static; the Debian image only hooks.bats
    # uses (left out) gets the same tarball so nothing is downloaded
    local td="$IT/testdata"
    if [ ! -f "$td/busybox-amd64.tar.xz" ]; then
        local r="$WORK/busybox-rootfs"
        rm -rf "$r" && mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,etc,dev,proc,sys,tmp,root,home,var,run}
        cp /bin/busybox "$r/bin/busybox"
        local a
        for a in $("$r/bin/busybox" --list-full); do
            [ -e "$r/$a" ] || ln -s /bin/busybox "$r/$a"
        done
        chmod 1777 "$r/tmp"
        printf 'root:x:0:0:root:/root:/bin/sh\ndaemon:x:1:1:daemon:/usr/sbin:/bin/false\nnobody:x:65534:65534:nobody:/home:/bin/false\n' >"$r/etc/passwd"
        printf 'root:x:0:\ndaemon:x:1:\ntty:x:5:\nnogroup:x:65534:\n' >"$r/etc/group"
        tar -C "$r" -cJf "$td/busybox-amd64.tar.xz" . || die "cannot build the busybox image"
    fi
    [ -f "$td/debian-amd64.tar.xz" ] || cp "$td/busybox-amd64.tar.xz" "$td/debian-amd64.tar.xz"
}

runtime_bin() { case "$1" in rloxsc) echo "$RLOXSC_BIN" ;; runc) echo "$RUNC_BIN" ;; *) echo "$1" ;; esac; }

run_suite() {
    local rt=$1 bin files f tmp
    bin=$(runtime_bin "$rt")
    [ -x "$bin" ] || die "no $rt binary at $bin"
    rm -rf "${RESULTS:?}/$rt" && mkdir -p "$RESULTS/$rt"
    if [ -n "$FILES" ]; then
        files=$FILES
    else
        files=$(cd "$IT" && ls ./*.bats | sed 's|^\./||; s|\.bats$||' | grep -vx 'hooks\|mounts_sshfs\|checkpoint')
    fi
    for f in $files; do
        [ -f "$IT/$f.bats" ] || die "no $IT/$f.bats"
        tmp=$(mktemp -d "/tmp/rloxsc-bats-$rt.XXXXXX")
        echo "bats: $rt $f.bats"
        # under a terminal of its own (script(1)), as the suite is run by hand or in runc's CI: a
        # foreground `run` of the default spec (`terminal: true`, no console socket) uses it
        (cd "$IT" && TMPDIR="$tmp" RUNC="$bin" BATS_TEST_TIMEOUT="${BATS_TEST_TIMEOUT:-90}" \
            TAP="$RESULTS/$rt/$f.tap" ERR="$RESULTS/$rt/$f.err" F="$f.bats" \
            exec script -qec 'exec timeout -k 10 1800 bats --tap "$F" >"$TAP" 2>"$ERR"' /dev/null) \
            >/dev/null 2>&1 </dev/null &
        local bats_pid=$! plan done_at=""
        # bats ends only when every holder of its output has closed it: a test that fails before it
        # kills the helper it started (update.bats's recvtty) would hold it forever. Once every test
        # has reported, whatever this run started under its own temporary directory is ended by pid.
        while kill -0 "$bats_pid" 2>/dev/null; do
            sleep 1
            plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$RESULTS/$rt/$f.tap" | head -n 1)
            [ -n "$plan" ] && [ "$(grep -c '^ok \|^not ok ' "$RESULTS/$rt/$f.tap")" -ge "$plan" ] || continue
            [ -n "$done_at" ] || done_at=$SECONDS
            [ $((SECONDS - done_at)) -ge 5 ] || continue
            local p
            for p in $(grep -l -- "$tmp" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
                [ "$p" != "$bats_pid" ] && grep -q "recvtty\|seccompagent\|sleep" "/proc/$p/cmdline" 2>/dev/null &&
                    kill "$p" 2>/dev/null
            done
        done
        wait "$bats_pid"
        # whatever a failed or timed-out test left behind in this run's state roots
        local st ct
        for st in "$tmp"/*/runc.*/state; do
            [ -d "$st" ] || continue
            for ct in $("$bin" --root "$st" list -q 2>/dev/null); do
                "$bin" --root "$st" delete --force "$ct" >/dev/null 2>&1
            done
        done
        grep -q ' /tmp/rloxsc-bats-' /proc/self/mountinfo &&
            awk '$5 ~ "^'"$tmp"'" {print $5}' /proc/self/mountinfo | sort -r | xargs -r -n1 umount -l 2>/dev/null
        rm -rf "$tmp"
    done
}

# every test of a runtime's results as "file<TAB>status<TAB>name", status ok|fail|skip
results() {
    local rt=$1 t
    for t in "$RESULTS/$rt"/*.tap; do
        [ -f "$t" ] || continue
        awk -v f="$(basename "$t" .tap).bats" '
            /^ok [0-9]+ / { s = "ok"; sub(/^ok [0-9]+ /, ""); if ($0 ~ / # skip/) { s = "skip"; sub(/ # skip.*$/, "") } print f "\t" s "\t" $0 }
            /^not ok [0-9]+ / { sub(/^not ok [0-9]+ /, ""); sub(/ # timeout.*$/, ""); print f "\tfail\t" $0 }' "$t"
    done
}

report() {
    local rt out
    echo
    echo "== runc 1.1.5 integration suite ($(date -u +%F), kernel $(uname -r))"
    for rt in $RUNTIMES; do
        [ -d "$RESULTS/$rt" ] || continue
        out=$(results "$rt")
        printf '%s: %d passed, %d failed, %d skipped\n' "$rt" \
            "$(grep -c $'\tok\t' <<<"$out")" "$(grep -c $'\tfail\t' <<<"$out")" "$(grep -c $'\tskip\t' <<<"$out")"
    done
    [ -d "$RESULTS/rloxsc" ] && [ -d "$RESULTS/runc" ] || return 0
    local expected unexpected=0 stale=0 line file name
    expected=$(grep -v '^\s*#' "$EXPECTED" 2>/dev/null | grep -v '^\s*$' | awk -F ' :: ' '{print $1 "\t" $2}')
    echo
    echo "== runc passes, rloxsc fails:"
    while IFS=$'\t' read -r file name; do
        if grep -qxF "$file"$'\t'"$name" <<<"$expected"; then
            echo "  expected    $file: $name"
        else
            echo "  UNEXPECTED  $file: $name"
            unexpected=$((unexpected + 1))
        fi
    done < <(comm -12 <(results runc | awk -F '\t' '$2 == "ok" {print $1 "\t" $3}' | sort) \
        <(results rloxsc | awk -F '\t' '$2 == "fail" {print $1 "\t" $3}' | sort))
    echo
    echo "== on tests/bats-expected-failures.txt but passing under rloxsc (remove them from the list):"
    while IFS=$'\t' read -r file name; do
        line=$(results rloxsc | awk -F '\t' -v f="$file" -v n="$name" '$1 == f && $3 == n {print $2}')
        if [ "$line" = ok ]; then
            echo "  $file: $name"
            stale=$((stale + 1))
        fi
    done <<<"$expected"
    echo
    if [ "$unexpected" -gt 0 ]; then
        echo "bats: $unexpected test(s) runc passes fail under rloxsc and are not on the list"
        return 1
    fi
    # an entry whose reason no longer holds is a list that lies: it fails the step too
    if [ "$stale" -gt 0 ]; then
        echo "bats: $stale test(s) on tests/bats-expected-failures.txt pass under rloxsc: remove them"
        return 1
    fi
    echo "bats: rloxsc fails nothing runc passes beyond the list"
}

if [ "$REPORT_ONLY" = 0 ]; then
    setup
    for rt in $RUNTIMES; do run_suite "$rt"; done
fi
report
