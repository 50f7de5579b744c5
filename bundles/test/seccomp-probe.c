/*
 * seccomp-probe: runs inside an rloxsc container and tries syscalls that rloxsc's seccomp allowlist
 * must deny. Prints one line per probe, "<name> denied <how>" or "<name> ALLOWED", then
 * "probes: N denied, M allowed" and exits 0 only if every probe was denied.
 * Each probe runs in a forked child so that a kill (the i386/x32 ABIs) is observed, not suffered.
 * Built statically by scripts/build-bundle.sh into the test rootfs as /bin/seccomp-probe.
 *
 * `seccomp-probe call NR [ARG...]` makes one raw syscall (numbers in decimal or 0x hex, at most six
 * arguments) and prints "ok RET" or "errno N NAME", exiting 0 either way: the tests use it to ask
 * whether one syscall (with given arguments) passes the filter.
 *
 * `seccomp-probe ptys` opens /dev/ptmx until it fails and prints "ptys N errno E NAME": how many ptys
 * the container's devpts instance gave.
 *
 * `seccomp-probe hold inotify|pipes` takes as many inotify instances (or 1 MiB pipe buffers) as the
 * kernel gives its uid, prints "held N", and sleeps: a per-user limit a container shares with host
 * root would now be exhausted for host root too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static int denied = 0, allowed = 0;

/* Runs fn in a child; the child exits with 0 if the syscall succeeded, 100+errno if it failed. */
static void probe(const char *name, long (*fn)(void), int want_errno)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        printf("%s ERROR fork: %s\n", name, strerror(errno));
        allowed++;
        return;
    }
    if (pid == 0) {
        alarm(5);
        long r = fn();
        _exit(r < 0 ? 100 + (errno > 150 ? 150 : errno) : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st)) {
        printf("%s denied killed by signal %d\n", name, WTERMSIG(st));
        denied++;
    } else if (WEXITSTATUS(st) == 0) {
        printf("%s ALLOWED\n", name);
        allowed++;
    } else {
        int e = WEXITSTATUS(st) - 100;
        if (want_errno && e != want_errno) {
            printf("%s denied with errno %d (%s), expected %d\n", name, e, strerror(e), want_errno);
        } else {
            printf("%s denied errno %d (%s)\n", name, e, strerror(e));
        }
        denied++;
    }
}

static long p_i386(void)
{
    long ret;
    /* getpid through the 32-bit int 0x80 entry */
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20) : "memory");
    return ret < 0 ? (errno = -ret, -1) : 0;
}
static long p_x32(void) { return syscall(0x40000000 | 39); }
static long p_alg(void) { return socket(AF_ALG, SOCK_SEQPACKET, 0); }
static long p_vsock(void) { return socket(AF_VSOCK, SOCK_STREAM, 0); }
static long p_packet(void) { return socket(AF_PACKET, SOCK_RAW, 0); }
static long p_raw(void) { return socket(AF_INET, SOCK_RAW, 1); }
static long p_xfrm(void) { return socket(AF_NETLINK, SOCK_RAW, 6); }
static long p_io_uring(void) { char p[120] = {0}; return syscall(__NR_io_uring_setup, 1, p); }
static long p_bpf(void) { char a[128] = {0}; return syscall(__NR_bpf, 0, a, sizeof a); }
static long p_perf(void) { char a[128] = {0}; return syscall(__NR_perf_event_open, a, 0, -1, -1, 0); }
static long p_keyctl(void) { return syscall(__NR_keyctl, 0, -3, 0, 0, 0); }
static long p_add_key(void) { return syscall(__NR_add_key, "user", "k", "v", 1, -3); }
static long p_userfaultfd(void) { return syscall(__NR_userfaultfd, 0); }
static long p_open_by_handle(void) { char h[16] = {0}; return syscall(__NR_open_by_handle_at, 3, h, 0); }
static long p_ptrace(void) { return syscall(__NR_ptrace, 0 /* TRACEME */, 0, 0, 0); }
static long p_vm_readv(void) { return syscall(__NR_process_vm_readv, getppid(), 0, 0, 0, 0, 0); }
static long p_personality(void) { return syscall(__NR_personality, 0x0040000 /* ADDR_NO_RANDOMIZE */); }
static long p_clone_userns(void) { return syscall(__NR_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0); }
static long p_unshare_userns(void) { return unshare(CLONE_NEWUSER); }
static long p_unshare_netns(void) { return unshare(CLONE_NEWNET); }
static long p_setns(void) { return syscall(__NR_setns, 0, 0); }
static long p_mknod_char(void) { return syscall(__NR_mknod, "/tmp/mem", 020600, (1 << 8) | 1); }
static long p_mount(void) { return syscall(__NR_mount, "none", "/tmp", "tmpfs", 0, 0); }
static long p_fsopen(void) { return syscall(__NR_fsopen, "tmpfs", 0); }
static long p_open_tree(void) { return syscall(__NR_open_tree, -100, "/", 1); }
static long p_mount_setattr(void) { char a[32] = {0}; return syscall(__NR_mount_setattr, -100, "/", 0, a, sizeof a); }
static long p_pivot_root(void) { return syscall(__NR_pivot_root, "/", "/"); }
static long p_chroot(void) { return syscall(__NR_chroot, "/"); }
static long p_kexec(void) { return syscall(__NR_kexec_load, 0, 0, 0, 0); }
static long p_init_module(void) { return syscall(__NR_init_module, 0, 0, ""); }
static long p_swapon(void) { return syscall(__NR_swapon, "/x", 0); }
static long p_reboot(void) { return syscall(__NR_reboot, 0xfee1dead, 672274793, 0x4321fedc, 0); }
static long p_settime(void) { struct { long s, ns; } t = {0, 0}; return syscall(__NR_clock_settime, 0, &t); }
static long p_acct(void) { return syscall(__NR_acct, 0); }
static long p_quotactl(void) { return syscall(__NR_quotactl, 0, 0, 0, 0); }
/* a syscall number newer than any the allowlist knows: ENOSYS, as under runc, so that libcs fall back */
static long p_future(void) { return syscall(511, 0, 0, 0, 0); }

static int call(int argc, char **argv)
{
    long a[7] = {0};
    if (argc < 3 || argc > 9) {
        fprintf(stderr, "usage: seccomp-probe call NR [ARG...]\n");
        return 2;
    }
    for (int i = 2; i < argc; i++)
        a[i - 2] = strtol(argv[i], NULL, 0);
    errno = 0;
    long r = syscall(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
    if (r < 0)
        printf("errno %d %s\n", errno, strerror(errno));
    else
        printf("ok %ld\n", r);
    return 0;
}

static int ptys(void)
{
    int n = 0;
    for (;;) {
        int fd = open("/dev/ptmx", O_RDWR | O_NOCTTY);
        if (fd < 0)
            break;
        n++;
        if (n >= 100000)
            break;
    }
    int e = errno;
    printf("ptys %d errno %d %s\n", n, e, strerror(e));
    return 0;
}

static int hold(const char *what)
{
    int n = 0;
    for (int i = 0; i < 4096; i++) {
        if (strcmp(what, "inotify") == 0) {
            if (syscall(SYS_inotify_init1, 0) < 0)
                break;
        } else {
            int p[2];
            if (pipe(p) < 0)
                break;
            /* F_SETPIPE_SZ: the pages are charged to the uid's pipe-user-pages */
            if (fcntl(p[1], 1031, 1 << 20) < 0)
                break;
        }
        n++;
    }
    printf("held %d\n", n);
    fflush(stdout);
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "call") == 0)
        return call(argc, argv);
    if (argc > 1 && strcmp(argv[1], "ptys") == 0)
        return ptys();
    if (argc > 2 && strcmp(argv[1], "hold") == 0)
        return hold(argv[2]);
    probe("i386-int80", p_i386, 0);
    probe("x32-abi", p_x32, 0);
    probe("socket-af-alg", p_alg, 0);
    probe("socket-af-vsock", p_vsock, 0);
    probe("socket-af-packet", p_packet, 0);
    probe("socket-raw", p_raw, 0);
    probe("socket-netlink-xfrm", p_xfrm, 0);
    probe("io_uring_setup", p_io_uring, 0);
    probe("bpf", p_bpf, 0);
    probe("perf_event_open", p_perf, 0);
    probe("keyctl", p_keyctl, 0);
    probe("add_key", p_add_key, 0);
    probe("userfaultfd", p_userfaultfd, 0);
    probe("open_by_handle_at", p_open_by_handle, 0);
    probe("ptrace", p_ptrace, 0);
    probe("process_vm_readv", p_vm_readv, 0);
    probe("personality-addr-no-randomize", p_personality, 0);
    probe("clone-newuser", p_clone_userns, 0);
    probe("unshare-newuser", p_unshare_userns, 0);
    probe("unshare-newnet", p_unshare_netns, 0);
    probe("setns", p_setns, 0);
    probe("mknod-char-device", p_mknod_char, 0);
    probe("mount", p_mount, 0);
    probe("fsopen", p_fsopen, 0);
    probe("open_tree", p_open_tree, 0);
    probe("mount_setattr", p_mount_setattr, 0);
    probe("pivot_root", p_pivot_root, 0);
    probe("chroot", p_chroot, 0);
    probe("kexec_load", p_kexec, 0);
    probe("init_module", p_init_module, 0);
    probe("swapon", p_swapon, 0);
    probe("reboot", p_reboot, 0);
    probe("clock_settime", p_settime, 0);
    probe("future-syscall-511", p_future, ENOSYS);
    probe("acct", p_acct, 0);
    probe("quotactl", p_quotactl, 0);
    printf("probes: %d denied, %d allowed\n", denied, allowed);
    return allowed == 0 ? 0 : 1;
}
