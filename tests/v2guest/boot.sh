#!/bin/bash
# tests/v2guest/boot.sh CMD_DIR -- boot rloxsc's pure-cgroup-v2 test guest and run CMD_DIR/run.sh in it.
# Adapted from the project's reference scripts (shared/reference/v2guest/run-in-v2-guest.sh).
#
# Boots a throw-away QEMU guest (Debian 6.1 kernel; KVM if usable, else TCG) that is pure cgroup v2 --
# cgroup_no_v1=all, cgroup2 on /sys/fs/cgroup (nsdelegate,memory_recursiveprot) with every controller
# enabled in the root's subtree_control -- shares CMD_DIR into it read-write over virtio-9p at the *same
# path*, runs CMD_DIR/run.sh there as root (cwd = CMD_DIR, stdin = /dev/null, in the root cgroup),
# streams the guest console to our stdout and exits with run.sh's exit status. No network device.
# The guest (vmlinux + initramfs.cpio in $V2VM_DIR) is built by build-guest.sh; run.sh (next to this
# script) builds it when it is missing or stale.
#
# Exit status: that of run.sh; 124 if it timed out; 125 if the guest never reported a status (boot
# failure, crash, qemu error); 130/143 if interrupted; 2 usage.
#
# Environment:
#   V2VM_DIR      where build-guest.sh put vmlinux + initramfs.cpio (default /var/tmp/rloxsc-v2guest)
#   V2VM_TIMEOUT  seconds for run.sh (default 600), enforced in the guest (-> 124)
#   V2VM_GRACE    extra seconds before qemu itself is killed (default 60)
#   V2VM_MEM      guest MiB (default 2048)      V2VM_SMP  vCPUs (default: min(nproc, 4))
#   V2VM_OUT      keep the guest results here (console.log, output.log, exit_status); default: a temp
#                 dir, removed afterwards
#   V2VM_APPEND   extra kernel command-line words
#   V2VM_ACCEL    auto (default) | kvm | tcg
#   V2VM_QUIET=1  don't echo the guest console (only run.sh's output is printed, after the guest is done)
# shellcheck disable=SC2054  # the commas below are qemu option syntax
set -uo pipefail

usage() { echo "usage: $0 CMD_DIR   (CMD_DIR/run.sh is run in the guest)" >&2; exit 2; }
[ $# -eq 1 ] || usage
CMD_DIR=$(readlink -f "$1") || usage
[ -f "$CMD_DIR/run.sh" ] || { echo "v2vm: $CMD_DIR/run.sh not found" >&2; exit 2; }
case $CMD_DIR in *[[:space:],]*) echo "v2vm: CMD_DIR may not contain blanks or commas" >&2; exit 2 ;; esac

V2VM_DIR=${V2VM_DIR:-/var/tmp/rloxsc-v2guest}
KERNEL=$V2VM_DIR/vmlinux
INITRD=$V2VM_DIR/initramfs.cpio
if [ ! -f "$KERNEL" ] || [ ! -f "$INITRD" ] || ! command -v qemu-system-x86_64 >/dev/null; then
  echo "v2vm: guest not built in $V2VM_DIR: run $(dirname "$0")/build-guest.sh (or $(dirname "$0")/run.sh)" >&2
  exit 125
fi
TIMEOUT=${V2VM_TIMEOUT:-600}
GRACE=${V2VM_GRACE:-60}   # boot + shutdown allowance on top of TIMEOUT
SMP=${V2VM_SMP:-$(n=$(nproc); [ "$n" -gt 4 ] && n=4; echo "$n")}

if [ -n "${V2VM_OUT:-}" ]; then
  OUT=$(mkdir -p "$V2VM_OUT" && readlink -f "$V2VM_OUT"); rm -f "$OUT"/{exit_status,booted,output.log,console.log}
else
  OUT=$(mktemp -d /tmp/v2vm-out.XXXXXX); trap 'rm -rf "$OUT"' EXIT
fi

# Accelerator: KVM when it can run a stock kernel; TCG otherwise. Where /dev/kvm is provided by kvm_pvm
# (PVM, no VMX/SVM) only PVM-enabled guest kernels run at speed; a stock Debian kernel was still in early
# boot after 90 s there, so TCG (~7 s round trip) is used.
ACCEL=${V2VM_ACCEL:-auto}
if [ "$ACCEL" = auto ]; then
  if [ -r /dev/kvm ] && [ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ]; then ACCEL=kvm; else ACCEL=tcg; fi
fi
case $ACCEL in
  # -arch-capabilities: nested KVM may refuse MSR 0x10a ("failed to set MSR 0x10a")
  kvm) accel=(-enable-kvm -cpu host,-arch-capabilities) ;;
  tcg) accel=(-accel tcg,thread=multi -cpu max) ;;
  *) echo "v2vm: V2VM_ACCEL must be auto, kvm or tcg" >&2; exit 2 ;;
esac

fs=(-virtfs "local,path=$CMD_DIR,mount_tag=v2cmd,security_model=passthrough,id=v2cmd"
    -virtfs "local,path=$OUT,mount_tag=v2out,security_model=passthrough,id=v2out")

append="console=ttyS0 quiet loglevel=3 panic=-1 oops=panic cryptomgr.notests no_timer_check cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1"
append+=" v2vm.cmddir=$CMD_DIR v2vm.timeout=$TIMEOUT ${V2VM_APPEND:-}"

qemu=(qemu-system-x86_64 "${accel[@]}" -m "${V2VM_MEM:-2048}" -smp "$SMP"
      -nodefaults -no-user-config -display none -nic none -no-reboot
      -chardev "stdio,id=ser0,logfile=$OUT/console.log" -serial chardev:ser0
      -kernel "$KERNEL" -initrd "$INITRD" -append "$append" "${fs[@]}")

t0=$(date +%s.%N)
# qemu runs in the background so that INT/TERM sent to this script (Ctrl-C, a CI job timeout) can be
# forwarded to it; its own hard timeout is TIMEOUT+GRACE, then KILL 10 s later.
if [ "${V2VM_QUIET:-0}" = 1 ]; then exec 3>/dev/null; else exec 3>&1; fi
timeout --foreground -k 10 $((TIMEOUT + GRACE)) "${qemu[@]}" </dev/null >&3 2>&1 &
qpid=$!
interrupted=
trap 'interrupted=130; kill -TERM $qpid 2>/dev/null' INT
trap 'interrupted=143; kill -TERM $qpid 2>/dev/null' TERM HUP
qrc=
while [ -z "$qrc" ] || kill -0 $qpid 2>/dev/null; do wait $qpid; qrc=$?; done
trap - INT TERM HUP
[ "${V2VM_QUIET:-0}" = 1 ] && cat "$OUT/output.log" 2>/dev/null
t1=$(date +%s.%N)

if [ -n "$interrupted" ]; then
  echo "v2vm: interrupted" >&2; rc=$interrupted
elif [ -s "$OUT/exit_status" ]; then
  rc=$(cat "$OUT/exit_status")
elif [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
  echo "v2vm: qemu killed after $((TIMEOUT + GRACE))s (hard timeout)" >&2; rc=124
else
  echo "v2vm: guest reported no exit status (qemu rc=$qrc, booted=$([ -e "$OUT/booted" ] && echo yes || echo no)); console tail:" >&2
  tail -n 30 "$OUT/console.log" >&2; rc=125
fi
printf 'v2vm: run.sh exit status %s, qemu rc %s, %.1fs wall\n' "$rc" "$qrc" "$(awk "BEGIN{print $t1 - $t0}")" >&2
exit "$rc"
