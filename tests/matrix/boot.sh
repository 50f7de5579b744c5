#!/bin/bash
# tests/matrix/boot.sh SUITE CMD_DIR OUT_DIR - boot a matrix guest on SUITE's kernel (tests/matrix/
# guest.sh built it) with the host's root read-only under a tmpfs overlay, CMD_DIR shared read-write
# at the same path and OUT_DIR as the results share; CMD_DIR/run.sh runs in it as root. Exit status:
# run.sh's; 124 timeout; 125 the guest reported no status (did not boot, panicked).
# Adapted from tests/v2guest/boot.sh (and the reference's root=host mode).
# Env: MATRIX_CACHE, MATRIX_TIMEOUT (s, default 900), MATRIX_INIT (busybox|systemd), MATRIX_CGROUP
# (v2|hybrid), MATRIX_MEM (MiB, 3072), MATRIX_SMP (default min(nproc,4)), MATRIX_ACCEL (auto|kvm|tcg).
# shellcheck disable=SC2054
set -uo pipefail
[ $# = 3 ] || { echo "usage: $0 SUITE CMD_DIR OUT_DIR" >&2; exit 2; }
SUITE=$1
CMD_DIR=$(readlink -f "$2") || exit 2
OUT=$(mkdir -p "$3" && readlink -f "$3") || exit 2
case $CMD_DIR$OUT in *[[:space:],]*) echo "matrix-boot: paths may not contain blanks or commas" >&2; exit 2 ;; esac
D=${MATRIX_CACHE:-/var/tmp/rloxsc-matrix}/$SUITE
KVER=$(cat "$D/kver" 2>/dev/null) || { echo "matrix-boot: no guest in $D (tests/matrix/guest.sh $SUITE)" >&2; exit 125; }
TIMEOUT=${MATRIX_TIMEOUT:-900}
SMP=${MATRIX_SMP:-$(n=$(nproc); [ "$n" -gt 4 ] && n=4; echo "$n")}
rm -f "$OUT"/{exit_status,booted,output.log,console.log}
# a scratch disk for /var/lib/docker and /var/lib/containerd: ext4, as on a real host (on the overlay
# root overlay2 cannot stack, and a tmpfs there would make Docker's resolv.conf/hosts binds tmpfs
# files, which no real host has); made new for every boot, with project quotas (init.sh mounts it
# with prjquota: what Docker's --storage-opt size and rloxsc's limits.disk use)
DISK=${MATRIX_CACHE:-/var/tmp/rloxsc-matrix}/disk-$$.img
rm -f "$DISK"; truncate -s 8G "$DISK" && mkfs.ext4 -q -F -L rxmstate -O quota,project "$DISK" || { echo "matrix-boot: cannot make $DISK" >&2; exit 125; }
trap 'rm -f "$DISK"' EXIT
ACCEL=${MATRIX_ACCEL:-auto}
if [ "$ACCEL" = auto ]; then
    # /dev/kvm of kvm_pvm runs only PVM guest kernels: Debian's run under TCG there
    if [ -r /dev/kvm ] && [ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ]; then ACCEL=kvm; else ACCEL=tcg; fi
fi
case $ACCEL in
    kvm) accel=(-enable-kvm -cpu host,-arch-capabilities) ;;
    tcg) accel=(-accel tcg,thread=multi -cpu max) ;;
    *) echo "matrix-boot: MATRIX_ACCEL must be auto, kvm or tcg" >&2; exit 2 ;;
esac
cg=${MATRIX_CGROUP:-v2}
append="console=ttyS0 quiet loglevel=3 panic=-1 oops=panic cryptomgr.notests no_timer_check"
if [ "$cg" = v2 ]; then append+=" cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1"; fi
append+=" matrix.cmddir=$CMD_DIR matrix.timeout=$TIMEOUT matrix.kver=$KVER matrix.modules=$D/kroot/lib/modules/$KVER"
append+=" matrix.init=${MATRIX_INIT:-busybox} matrix.cgroup=$cg ${MATRIX_APPEND:-}"
qemu=(qemu-system-x86_64 "${accel[@]}" -m "${MATRIX_MEM:-3072}" -smp "$SMP"
      -nodefaults -no-user-config -display none -nic none -no-reboot
      -chardev "stdio,id=ser0,logfile=$OUT/console.log" -serial chardev:ser0
      -kernel "$D/vmlinux" -initrd "$D/initramfs.cpio" -append "$append"
      -drive "file=$DISK,if=virtio,format=raw,cache=unsafe"
      -virtfs "local,path=$CMD_DIR,mount_tag=v2cmd,security_model=passthrough,id=v2cmd"
      -virtfs "local,path=$OUT,mount_tag=v2out,security_model=passthrough,id=v2out"
      -virtfs "local,path=/,mount_tag=hostroot,security_model=passthrough,readonly=on,multidevs=remap,id=hostroot")
if [ "${MATRIX_QUIET:-1}" = 1 ]; then exec 3>/dev/null; else exec 3>&1; fi
timeout --foreground -k 10 $((TIMEOUT + 90)) "${qemu[@]}" </dev/null >&3 2>&1 &
qpid=$!
interrupted=
trap 'interrupted=130; kill -TERM $qpid 2>/dev/null' INT
trap 'interrupted=143; kill -TERM $qpid 2>/dev/null' TERM HUP
qrc=
while [ -z "$qrc" ] || kill -0 $qpid 2>/dev/null; do wait $qpid; qrc=$?; done
trap - INT; trap - TERM; trap - HUP
if [ -n "$interrupted" ]; then rc=$interrupted
elif [ -s "$OUT/exit_status" ]; then rc=$(cat "$OUT/exit_status")
elif [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then echo "matrix-boot: qemu killed at the hard timeout" >&2; rc=124
else
    echo "matrix-boot: the guest reported no exit status (qemu rc=$qrc, booted=$([ -e "$OUT/booted" ] && echo yes || echo no)); console tail:" >&2
    tail -n 30 "$OUT/console.log" >&2; rc=125
fi
exit "$rc"
