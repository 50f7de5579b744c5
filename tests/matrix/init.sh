#!/bin/busybox sh
# tests/matrix/init.sh - PID 1 of the matrix guests (busybox ash), adapted from tests/v2guest/init.sh
# and the reference's root=host mode.
#
# stage 1 (in the initramfs): load virtio/9p/overlay, mount the host's / (9p tag hostroot, read-only)
#   under a tmpfs overlay as the new root, switch_root into it.
# stage 2 (on the host's root): proc, sys, dev, /run and /tmp tmpfs, the kernel package's modules at
#   /lib/modules/<release> (modprobe works), the scratch disk (ext4) for /var/lib/docker and /var/lib/containerd
#   (overlay2 cannot stack on the overlay root), cgroups as the cell asks (matrix.cgroup=v2: cgroup2
#   alone, every controller enabled, as systemd mounts it; hybrid: v1 hierarchies + cgroup2 at
#   unified, as this project's hosts), the 9p shares (cmd at its host path, out), then either
#   runs CMDDIR/run.sh with a timeout and powers off (matrix.init=busybox), or execs systemd as PID 1
#   (matrix.init=systemd) with a unit that runs CMDDIR/run.sh and powers off.
# Kernel command line: matrix.cmddir= matrix.timeout= matrix.kver= matrix.modules= matrix.init=
# matrix.cgroup=.
B=/bin/busybox
[ -x $B ] || B=/.matrix/busybox
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=${TERM:-dumb} LANG=C.UTF-8
say() { echo "matrix-init: $*" >&2; }
die() { say "FATAL: $*"; $B sync; $B poweroff -f; echo o >/proc/sysrq-trigger; $B sleep 5; }
param() {
    local w v=$2
    for w in $($B cat /proc/cmdline); do case $w in matrix.$1=*) v=${w#matrix.$1=} ;; esac; done
    echo "$v"
}

stage1() {
    $B mount -t proc proc /proc
    $B mount -t devtmpfs devtmpfs /dev 2>/dev/null
    while read -r m; do $B insmod "$m" 2>/dev/null || say "insmod $m failed"; done </etc/modules.order
    $B mkdir -p /base /newroot
    $B mount -t tmpfs -o mode=755 base /base || die "tmpfs"
    $B mkdir -p /base/lower /base/upper /base/work
    $B mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=524288,cache=loose hostroot /base/lower \
        || die "cannot mount the host's root (9p tag hostroot)"
    $B mount -t overlay -o lowerdir=/base/lower,upperdir=/base/upper,workdir=/base/work overlay /newroot \
        || die "overlay over 9p failed"
    $B mkdir -p /newroot/.matrix
    $B cp /bin/busybox /newroot/.matrix/busybox
    $B cp /init /newroot/.matrix/init
    $B umount /dev 2>/dev/null
    $B umount /proc
    exec $B switch_root /newroot /.matrix/busybox sh /.matrix/init stage2
    die "cannot enter the new root"
}

mount_cgroups() {
    case $(param cgroup v2) in
        hybrid)
            $B mount -t tmpfs -o mode=755,nosuid,nodev,noexec cgroup /sys/fs/cgroup
            for c in cpuset cpu,cpuacct blkio memory devices freezer net_cls,net_prio perf_event hugetlb pids rdma misc; do
                $B mkdir -p /sys/fs/cgroup/$c
                $B mount -t cgroup -o nosuid,nodev,noexec,$c cgroup /sys/fs/cgroup/$c 2>/dev/null || $B rmdir /sys/fs/cgroup/$c
            done
            $B mkdir -p /sys/fs/cgroup/unified
            $B mount -t cgroup2 -o nosuid,nodev,noexec,nsdelegate cgroup2 /sys/fs/cgroup/unified
            ;;
        *)
            $B mount -t cgroup2 -o nosuid,nodev,noexec,nsdelegate,memory_recursiveprot cgroup2 /sys/fs/cgroup \
                || $B mount -t cgroup2 cgroup2 /sys/fs/cgroup || die "cannot mount cgroup2"
            for c in $($B cat /sys/fs/cgroup/cgroup.controllers); do
                echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control || say "cannot enable controller $c"
            done
            ;;
    esac
}

stage2() {
    $B mount -t proc -o nosuid,nodev,noexec proc /proc
    $B mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
    $B mount -t devtmpfs -o nosuid,mode=755 devtmpfs /dev
    $B mkdir -p /dev/pts /dev/shm /dev/mqueue
    $B mount -t devpts -o nosuid,noexec,gid=5,mode=620,ptmxmode=666 devpts /dev/pts
    $B mount -t tmpfs -o nosuid,nodev shm /dev/shm
    $B mount -t mqueue mqueue /dev/mqueue 2>/dev/null
    [ -e /dev/ptmx ] || $B ln -s pts/ptmx /dev/ptmx
    $B ln -sf /proc/self/fd /dev/fd; $B ln -sf /proc/self/fd/0 /dev/stdin
    $B ln -sf /proc/self/fd/1 /dev/stdout; $B ln -sf /proc/self/fd/2 /dev/stderr
    $B mount -t tmpfs -o mode=755,nosuid,nodev run /run
    $B mount -t tmpfs -o mode=1777,nosuid,nodev tmp /tmp
    KVER=$(param kver "")
    MODDIR=$(param modules "")
    if [ -n "$KVER" ] && [ -d "$MODDIR" ]; then
        $B mkdir -p /lib/modules/$KVER && $B mount --bind "$MODDIR" /lib/modules/$KVER
    fi
    # the scratch disk (boot.sh): ext4 for the daemons' state, as on a real host
    modprobe -a virtio_blk ext4 quota_v2 2>/dev/null
    $B mkdir -p /.matrix-disk
    $B mount -t ext4 -o prjquota /dev/vda /.matrix-disk || die "cannot mount the scratch disk with prjquota"
    for d in /var/lib/docker /var/lib/containerd /var/lib/cni; do
        $B mkdir -p $d /.matrix-disk/${d##*/} && $B mount --bind /.matrix-disk/${d##*/} $d
    done
    $B mount -t tmpfs -o mode=755 varlog /var/log
    $B mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
    $B mount -t bpf bpf /sys/fs/bpf 2>/dev/null
    $B hostname matrix
    $B ip link set lo up 2>/dev/null
    CMDDIR=$(param cmddir /matrix/cmd)
    OUT=/.matrix-out
    $B mkdir -p "$CMDDIR" $OUT
    $B mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 v2out $OUT || die "cannot mount 9p tag v2out"
    $B mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 v2cmd "$CMDDIR" || die "cannot mount 9p tag v2cmd"
    echo booted >$OUT/booted
    if [ "$(param init busybox)" = systemd ]; then
        # systemd mounts the cgroups itself (pure v2: systemd.unified_cgroup_hierarchy=1 is on the
        # command line); the unit runs the cell and powers off.
        $B umount /sys/fs/cgroup 2>/dev/null
        $B mkdir -p /etc/systemd/system
        $B cat >/etc/systemd/system/rloxsc-matrix.service <<UNIT
[Unit]
Description=rloxsc matrix cell
After=basic.target dbus.socket
Wants=dbus.socket
[Service]
Type=oneshot
ExecStart=/.matrix/busybox sh /.matrix/init run-cell
StandardOutput=journal+console
StandardError=journal+console
UNIT
        $B cat >/etc/systemd/system/rloxsc-matrix.target <<UNIT
[Unit]
Description=rloxsc matrix
Requires=basic.target rloxsc-matrix.service
After=basic.target rloxsc-matrix.service
AllowIsolate=yes
UNIT
        say "up $($B cut -d' ' -f1 /proc/uptime)s; $($B uname -r); exec systemd"
        exec /lib/systemd/systemd --unit=rloxsc-matrix.target
        die "cannot exec systemd"
    fi
    mount_cgroups
    say "up $($B cut -d' ' -f1 /proc/uptime)s; $($B uname -r)"
    run_cell
    $B sync
    $B poweroff -f
    echo o >/proc/sysrq-trigger
    $B sleep 10
}

# run CMDDIR/run.sh with the timeout, its output on the console and in OUT/output.log, its status in
# OUT/exit_status
run_cell() {
    CMDDIR=$(param cmddir /matrix/cmd)
    TIMEOUT=$(param timeout 0)
    OUT=/.matrix-out
    cd "$CMDDIR" || die "cd $CMDDIR"
    rm -f $OUT/exit_status /run/matrix.fifo /run/matrix.timedout
    $B mkfifo /run/matrix.fifo
    $B tee $OUT/output.log </run/matrix.fifo >/dev/console &
    teepid=$!
    ./run.sh </dev/null >/run/matrix.fifo 2>&1 &
    runpid=$!
    wdpid=
    if [ "$TIMEOUT" -gt 0 ] 2>/dev/null; then
        ( $B sleep "$TIMEOUT"; echo >/run/matrix.timedout; kill -KILL $runpid ) &
        wdpid=$!
    fi
    wait $runpid
    rc=$?
    [ -n "$wdpid" ] && kill $wdpid 2>/dev/null
    if [ -e /run/matrix.timedout ]; then rc=124; say "run.sh timed out after ${TIMEOUT}s"; fi
    if [ "$$" = 1 ]; then
        # whatever run.sh left (daemons, containers) still holds the fifo: kill all but PID 1 and tee
        for p in /proc/[0-9]*; do
            p=${p#/proc/}
            [ "$p" = 1 ] || [ "$p" = "$teepid" ] || kill -KILL "$p" 2>/dev/null
        done
    else
        # under systemd, what run.sh left is in this service's cgroup and holds the fifo: kill it,
        # by pid, but for this shell and tee (opening the fifo here instead failed with EINTR)
        cg=$($B awk -F: '$1 == "0" {print $3}' /proc/$$/cgroup)
        for p in $($B cat "/sys/fs/cgroup$cg/cgroup.procs" 2>/dev/null); do
            [ "$p" = "$$" ] || [ "$p" = "$teepid" ] || kill -KILL "$p" 2>/dev/null
        done
        ( $B sleep 5; kill $teepid 2>/dev/null ) >/dev/null 2>&1 &
    fi
    wait $teepid
    echo "$rc" >$OUT/exit_status
    $B sync
    say "run.sh exit status $rc; uptime $($B cut -d' ' -f1 /proc/uptime)s"
    cd /
}

case "$1" in
    stage2) stage2 ;;
    run-cell)
        run_cell
        $B umount /.matrix-out 2>/dev/null
        $B sync
        systemctl --no-block poweroff --force --force 2>/dev/null || echo o >/proc/sysrq-trigger
        exit 0 ;;
    *) stage1 ;;
esac
die "init fell through"
