#!/bin/bash
# tests/v2guest/run.sh -- the one entry point of rloxsc's cgroup-v2 suite.
#
# This machine (and many CI runners) are cgroup v1/hybrid; most users run pure cgroup v2. This script:
#   1. builds rloxsc and the demo rootfs (`make build bundles`), unless RLOXSC_BIN is set;
#   2. builds the QEMU guest (build-guest.sh: Debian's 6.1 kernel unpacked, a busybox initramfs with
#      rloxsc's shared libraries) into $V2VM_DIR (default /var/tmp/rloxsc-v2guest, outside the checkout),
#      or reuses it when its stamp (guest-stamp.sh) still matches;
#   3. fills a share directory with suite/prepare.sh (rloxsc, rootfs, bundles, suite/run.sh);
#   4. boots the guest (boot.sh), which runs suite/run.sh as root on pure cgroup v2 and powers off;
#   5. prints the guest's output, the timings and, last, the suite's `N passed, M failed` line, and exits
#      with the suite's status (124: guest timeout, 125: the guest reported no status).
# Installs what it needs with apt-get (qemu-system-x86, busybox-static, python3); must run as root.
# Environment: RLOXSC_BIN (skip `make build`, test this binary), RLOXSC_TEST_ROOTFS (default
# bundles/demo/rootfs), V2VM_DIR, V2VM_TIMEOUT (default 600), V2VM_REBUILD=1 (force a guest rebuild),
# V2GUEST_KEEP=1 (keep the share directory), plus boot.sh's V2VM_* variables.
# The guest's console.log/output.log/exit_status and rloxsc's log are kept in $V2VM_DIR/last-run/.
set -uo pipefail
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
repo=$(cd "$here/../.." && pwd)
export V2VM_DIR=${V2VM_DIR:-/var/tmp/rloxsc-v2guest}
[ "$(id -u)" = 0 ] || { echo "v2guest: must run as root (apt-get, qemu 9p passthrough)" >&2; exit 2; }
case $V2VM_DIR in *[[:space:],]*) echo "v2guest: V2VM_DIR may not contain blanks or commas" >&2; exit 2 ;; esac
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b - a}'; }
T0=$(now)

# ---- 1. rloxsc and the rootfs -----------------------------------------------------------------------
if [ -n "${RLOXSC_BIN:-}" ]; then
  BIN=$(readlink -f "$RLOXSC_BIN")
  [ -n "${RLOXSC_TEST_ROOTFS:-}" ] || (cd "$repo" && make --no-print-directory bundles) || exit 1
else
  (cd "$repo" && make --no-print-directory build bundles) || { echo "v2guest: make build bundles failed" >&2; exit 1; }
  BIN=$repo/target/x86_64-unknown-linux-gnu/release/rloxsc
fi
ROOTFS=$(readlink -f "${RLOXSC_TEST_ROOTFS:-$repo/bundles/demo/rootfs}")
[ -x "$BIN" ] || { echo "v2guest: $BIN is not an executable" >&2; exit 1; }
T1=$(now)

# ---- 2. the guest (cached) --------------------------------------------------------------------------
export V2VM_LIBS_OF=$BIN
mkdir -p "$V2VM_DIR"
want=$("$here/guest-stamp.sh")
have=$(cat "$V2VM_DIR/stamp" 2>/dev/null || true)
if [ "${V2VM_REBUILD:-0}" = 1 ] || [ "$want" != "$have" ] || [ ! -s "$V2VM_DIR/vmlinux" ] \
   || [ ! -s "$V2VM_DIR/initramfs.cpio" ] || ! command -v qemu-system-x86_64 >/dev/null; then
  echo "v2guest: building the guest in $V2VM_DIR" >&2
  "$here/build-guest.sh" || { echo "v2guest: guest build failed" >&2; exit 125; }
  guest="built"
else
  guest="cached"
fi
T2=$(now)

# ---- 3. the share --------------------------------------------------------------------------------------
SHARE=$(mktemp -d "$V2VM_DIR/share.XXXXXX")
[ "${V2GUEST_KEEP:-0}" = 1 ] || trap 'rm -rf "$SHARE"' EXIT
"$here/suite/prepare.sh" "$SHARE" "$BIN" "$ROOTFS" "$repo/bundles/demo/config.careless.json" || exit 1
T3=$(now)

# ---- 4. boot + suite ---------------------------------------------------------------------------------
OUT=$V2VM_DIR/last-run
export V2VM_OUT=$OUT V2VM_TIMEOUT=${V2VM_TIMEOUT:-600}
echo "== booting the cgroup-v2 guest ($(basename "$(readlink -f "$V2VM_DIR/kroot/boot/"vmlinuz-* 2>/dev/null)" 2>/dev/null))" >&2
"$here/boot.sh" "$SHARE"
rc=$?
T4=$(now)
cp "$SHARE/rloxsc.log" "$OUT/rloxsc.log" 2>/dev/null

# ---- 5. summary ----------------------------------------------------------------------------------------
up=$(sed -n 's/.*v2vm-init: up \([0-9.]*\)s.*/\1/p' "$OUT/console.log" 2>/dev/null | head -n1)
inguest=$(sed -n 's/^# suite wall time in the guest: \([0-9.]*\) s.*/\1/p' "$OUT/output.log" 2>/dev/null | tail -n1)
echo "== v2guest timings: rloxsc build $(secs "$T0" "$T1")s, guest $guest $(secs "$T1" "$T2")s," \
     "prepare $(secs "$T2" "$T3")s, boot+suite+poweroff $(secs "$T3" "$T4")s (guest up after ${up:-?}s," \
     "suite ${inguest:-?}s), total $(secs "$T0" "$T4")s; logs in $OUT"
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$OUT/output.log" 2>/dev/null | tail -n1)
if [ -z "$summary" ]; then
  echo "v2guest: the suite printed no summary (guest status $rc)"
  echo "0 passed, 1 failed"
  [ "$rc" = 0 ] && rc=1
else
  grep '^FAIL ' "$OUT/output.log" | sed 's/^/== /'
  echo "$summary"
fi
exit "$rc"
