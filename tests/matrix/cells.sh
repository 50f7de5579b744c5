# shellcheck shell=bash
# tests/matrix/cells.sh - the cells of the kernel x cgroup matrix (sourced by run.sh and guest.sh).
#
# A cell is a kernel and a cgroup layout. Guest cells boot a Debian kernel package under QEMU on the
# host's own root filesystem (read-only, under a tmpfs overlay: the host's Docker, containerd, runc and
# Python are the guest's); the host cell is this machine as it is.
#
#   cell               kernel (Debian package, suite)                 cgroups            PID 1
#   debian11-5.10      linux-image-amd64 of bullseye (5.10)           pure v2            busybox init
#   debian12-6.1       linux-image-amd64 of bookworm (6.1)            pure v2            busybox init
#   debian12bpo-6.12   linux-image-amd64 of bookworm-backports (6.12) pure v2            busybox init
#   systemd-6.12       the same 6.12 kernel                           pure v2 (systemd)  systemd
#   host               this machine's kernel                          as the host has    the host's
#
# matrix_cell_suite CELL: the Debian suite whose kernel the cell boots ("" for the host)
matrix_cell_suite() {
    case $1 in
        debian11-5.10) echo bullseye ;;
        debian12-6.1) echo bookworm ;;
        debian12bpo-6.12 | systemd-6.12) echo bookworm-backports ;;
        host) echo "" ;;
        *) return 1 ;;
    esac
}
# matrix_cell_init CELL: busybox | systemd
matrix_cell_init() { case $1 in systemd-*) echo systemd ;; *) echo busybox ;; esac; }
MATRIX_ALL_CELLS="debian11-5.10 debian12-6.1 debian12bpo-6.12 systemd-6.12 host"
