#!/bin/busybox sh
# tests/v2guest/init.sh -- PID 1 of rloxsc's pure-cgroup-v2 test guest (busybox ash).
# Adapted from the project's reference scripts (shared/reference/v2guest/init.sh); the root=host mode
# of the reference is left out.
#
# stage 1 (runs from the initramfs = rootfs, on which pivot_root(2) -- which rloxsc/libcontainer uses --
#          fails with EINVAL): load the virtio/9p/overlay modules, bind-mount / onto itself, move it
#          onto / and chroot into it (not switch_root: that would delete the initramfs contents).
# stage 2: mount proc/sys/dev/run/tmp, cgroup2 on /sys/fs/cgroup (nsdelegate,memory_recursiveprot,
#          every controller enabled in the root's subtree_control; the kernel is booted with
#          cgroup_no_v1=all so no v1 hierarchy can exist), the 9p shares, run $CMDDIR/run.sh with a
#          timeout, stream its output to the console and $OUT/output.log, write its exit status to
#          $OUT/exit_status, power off.
#
# Parameters come from the kernel command line: v2vm.cmddir=DIR v2vm.timeout=SECONDS v2vm.trace=1.
# shellcheck disable=SC3043  # busybox ash has local

B=/bin/busybox
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=${TERM:-dumb} LANG=C.UTF-8

say() { echo "v2vm-init: $*" >&2; }
trace() { [ -n "$TRACE" ] && say "[$($B cut -d' ' -f1 /proc/uptime)s] $*"; }
die() {
  say "FATAL: $*"
  $B sync
  $B poweroff -f
  echo o > /proc/sysrq-trigger
  $B sleep 5
}

param() { # param NAME DEFAULT   (reads v2vm.NAME=VALUE from /proc/cmdline)
  local w v=$2
  for w in $($B cat /proc/cmdline); do
    case $w in v2vm.$1=*) v=${w#v2vm.$1=} ;; esac
  done
  echo "$v"
}

stage1() {
  $B mount -t proc -o nosuid,nodev,noexec proc /proc
  $B mount -t devtmpfs -o nosuid devtmpfs /dev 2>/dev/null
  TRACE=$(param trace "")
  trace "stage1 start"
  while read -r m; do
    $B insmod "$m" 2>/dev/null || say "insmod $m failed"
  done < /etc/modules.order
  trace "modules loaded"
  $B mkdir -p /newroot
  # pivot_root(2) refuses to run while / is the initial rootfs; a bind mount of it onto itself is enough.
  $B mount --bind / /newroot || die "bind mount /"
  $B umount /dev 2>/dev/null
  $B umount /proc
  cd /newroot && $B mount --move . / && exec $B chroot . /init stage2
  die "cannot enter the new root"
}

stage2() {
  $B mount -t proc -o nosuid,nodev,noexec proc /proc
  $B mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
  TRACE=$(param trace "")
  trace "stage2 start"
  $B mount -t devtmpfs -o nosuid,mode=755 devtmpfs /dev
  $B mkdir -p /dev/pts /dev/shm /dev/mqueue
  $B mount -t devpts -o nosuid,noexec,gid=5,mode=620,ptmxmode=666 devpts /dev/pts
  $B mount -t tmpfs -o nosuid,nodev shm /dev/shm
  $B mount -t mqueue mqueue /dev/mqueue 2>/dev/null
  [ -e /dev/ptmx ] || $B ln -s pts/ptmx /dev/ptmx
  $B ln -sf /proc/self/fd /dev/fd; $B ln -sf /proc/self/fd/0 /dev/stdin
  $B ln -sf /proc/self/fd/1 /dev/stdout; $B ln -sf /proc/self/fd/2 /dev/stderr
  $B mkdir -p /run /tmp /var/tmp
  $B mount -t tmpfs -o mode=755,nosuid,nodev run /run
  $B mount -t tmpfs -o mode=1777,nosuid,nodev tmp /tmp
  # cgroup v2, mounted like systemd does (nsdelegate, memory_recursiveprot)
  $B mount -t cgroup2 -o nosuid,nodev,noexec,nsdelegate,memory_recursiveprot cgroup2 /sys/fs/cgroup \
    || $B mount -t cgroup2 cgroup2 /sys/fs/cgroup || die "cannot mount cgroup2"
  for c in $($B cat /sys/fs/cgroup/cgroup.controllers); do
    echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control || say "cannot enable controller $c"
  done
  $B mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
  $B mount -t bpf bpf /sys/fs/bpf 2>/dev/null
  $B hostname v2vm
  $B ip link set lo up 2>/dev/null
  [ -s /etc/hosts ] || echo "127.0.0.1 localhost v2vm" > /etc/hosts

  CMDDIR=$(param cmddir /v2vm/cmd)
  TIMEOUT=$(param timeout 0)
  OUT=/.v2vm-out
  $B mkdir -p "$CMDDIR" $OUT
  $B mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 v2out $OUT || die "cannot mount 9p tag v2out"
  $B mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 v2cmd "$CMDDIR" || die "cannot mount 9p tag v2cmd"
  echo booted > $OUT/booted
  say "up $($B cut -d' ' -f1 /proc/uptime)s; $($B uname -r); cgroup2: $($B cat /sys/fs/cgroup/cgroup.subtree_control)"

  cd "$CMDDIR" || die "cd $CMDDIR"
  if [ -x ./run.sh ]; then set -- ./run.sh; else set -- $B sh ./run.sh; fi
  # run.sh's stdout+stderr -> fifo -> tee -> console (live) + $OUT/output.log
  rm -f $OUT/exit_status /run/v2vm.fifo
  $B mkfifo /run/v2vm.fifo
  $B tee $OUT/output.log < /run/v2vm.fifo &
  teepid=$!
  "$@" < /dev/null > /run/v2vm.fifo 2>&1 &
  runpid=$!
  wdpid=
  if [ "$TIMEOUT" -gt 0 ] 2>/dev/null; then
    ( $B sleep "$TIMEOUT"; echo > /run/v2vm.timedout; kill -KILL $runpid ) &
    wdpid=$!
  fi
  wait $runpid
  rc=$?
  [ -n "$wdpid" ] && kill $wdpid 2>/dev/null
  if [ -e /run/v2vm.timedout ]; then rc=124; say "run.sh timed out after ${TIMEOUT}s"; fi
  # Whatever run.sh left behind (daemons, containers, the watchdog's sleep) still holds the fifo open:
  # kill everything but PID 1 and tee, so tee sees EOF. Kernel threads ignore SIGKILL.
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = 1 ] || [ "$p" = "$teepid" ] || kill -KILL "$p" 2>/dev/null
  done
  wait $teepid
  echo "$rc" > $OUT/exit_status
  $B sync
  say "run.sh exit status $rc; uptime $($B cut -d' ' -f1 /proc/uptime)s"
  cd /
  $B umount "$CMDDIR" 2>/dev/null
  $B umount $OUT 2>/dev/null
  $B sync
  $B poweroff -f
  echo o > /proc/sysrq-trigger
  $B sleep 10
}

case "$1" in
  stage2) stage2 ;;
  *) stage1 ;;
esac
die "init fell through"
