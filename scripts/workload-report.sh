#!/usr/bin/env bash
# workload-report.sh [--doc] [report.py options...]
#
# Real workloads under rloxsc's strict seccomp allowlist, side by side with runc + Docker's default
# seccomp profile, in the same run (scripts/workload/report.py): CPython's regression tests for 17
# modules, a Node.js check (scripts/workload/node-check.js) and a gcc compile-and-run check
# (scripts/workload/cprog.c), each in its own container, once per runtime.
#
#   --doc      splice the results into docs/workloads.md (make workload-report); without it the
#              table is only printed (make test)
#   --trace    instead: run each item under rloxsc with strace attached from the host and list the
#              syscalls rloxsc's filter answered (make workload-syscalls; with --doc, into the doc)
#
# Needs root, target/x86_64-unknown-linux-gnu/release/rloxsc (make build), runc and strace (installed from Debian's archive
# when missing). Builds bundles/workload/rootfs first (cached; scripts/build-workload-bundle.sh).
# Exit status 1 when a test passes under runc but not under rloxsc and the difference has no
# documented reason in scripts/workload/expected-differences.txt.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { echo "workload-report: $*" >&2; }

[ "$(id -u)" = 0 ] || { log "needs root: it creates containers"; exit 1; }
[ -x target/x86_64-unknown-linux-gnu/release/rloxsc ] || { log "target/x86_64-unknown-linux-gnu/release/rloxsc missing: run make build"; exit 1; }

doc=()
args=()
for a in "$@"; do
    case "$a" in
        --doc) doc=(--md docs/workloads.md) ;;
        *) args+=("$a") ;;
    esac
done

missing=()
for p in runc strace; do
    command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
        { apt-get update -qq && apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
fi

t0=$(date +%s)
bash scripts/build-workload-bundle.sh
t1=$(date +%s)
log "workload bundle: $((t1 - t0)) s"

# the host's python3 (stdlib only); not a pyenv shim that may lack the stdlib modules
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
rc=0
"$PY" scripts/workload/report.py ${doc[@]+"${doc[@]}"} ${args[@]+"${args[@]}"} || rc=$?
t2=$(date +%s)
log "bundle $((t1 - t0)) s, report $((t2 - t1)) s, total $((t2 - t0)) s"
exit $rc
