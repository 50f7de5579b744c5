//! rloxsc's own seccomp allowlist for x86_64 (native ABI only; i386 and x32 are killed).
//!
//! Based on the syscalls that shells, CPython, Node.js, gcc-built programs and loopback servers use,
//! with the dangerous families left out on purpose: user-namespace creation, the mount API,
//! pivot_root/chroot, bpf, io_uring, perf_event_open, the keyring, userfaultfd, open_by_handle_at,
//! kexec/modules/swap/reboot/clock/acct/quotactl, ptrace and process_vm_*, setns. Every syscall not
//! listed fails with EPERM; clone3 fails with ENOSYS so that libc falls back to clone, whose namespace
//! flags are filtered; syscalls newer than every name listed here fail with ENOSYS (see `compile.rs`).

/// A comparison on one syscall argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `arg == value`
    Eq(u64),
    /// `arg & mask == value`
    MaskedEq(u64, u64),
}

/// One allow rule: a syscall and the argument conditions that must all hold (none = unconditional).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The syscall name as libseccomp knows it.
    pub name: &'static str,
    /// (argument index, comparison) pairs, all of which must hold.
    pub args: &'static [(u32, Cmp)],
}

/// Namespace flags of clone/unshare (CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET).
pub const CLONE_NAMESPACE_FLAGS: u64 = 0x7E02_0000;
/// unshare(2) additionally may not create a time namespace.
pub const UNSHARE_FORBIDDEN_FLAGS: u64 = CLONE_NAMESPACE_FLAGS | 0x80;

const AF_UNIX: u64 = 1;
const AF_INET: u64 = 2;
const AF_INET6: u64 = 10;
const AF_NETLINK: u64 = 16;
const SOCK_STREAM: u64 = 1;
const SOCK_DGRAM: u64 = 2;
const SOCK_TYPE_MASK: u64 = 0xf;
const NETLINK_ROUTE: u64 = 0;
const S_IFMT: u64 = 0o170000;
/// The set-user-ID and set-group-ID bits of a mode: never set by a container (a file it makes on a
/// bind or volume is the host's, owned by the directory's owner: a set-id file there would run with
/// that owner's ids for whoever starts it on the host).
pub const SET_ID_BITS: u64 = 0o6000;
/// `O_CREAT | __O_TMPFILE`: the open flags that make a file, and so use the mode argument.
const O_MAKES_FILE: u64 = 0o100 | 0o20000000;

/// Syscalls allowed with any arguments.
pub const UNCONDITIONAL: &[&str] = &[
    "accept",
    "accept4",
    "access",
    "alarm",
    "arch_prctl",
    "bind",
    "brk",
    "capget",
    "capset",
    "chdir",
    "chown",
    "clock_getres",
    "clock_gettime",
    "clock_nanosleep",
    "close",
    "close_range",
    "connect",
    "copy_file_range",
    "dup",
    "dup2",
    "dup3",
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_pwait",
    "epoll_pwait2",
    "epoll_wait",
    "eventfd",
    "eventfd2",
    "execve",
    "execveat",
    "exit",
    "exit_group",
    "faccessat",
    "faccessat2",
    "fadvise64",
    "fallocate",
    "fchdir",
    "fchown",
    "fchownat",
    "fcntl",
    "fdatasync",
    "fgetxattr",
    "flistxattr",
    "flock",
    "fork",
    "fremovexattr",
    "fsetxattr",
    "fstat",
    "fstatfs",
    "fsync",
    "ftruncate",
    "futex",
    "futex_waitv",
    "futimesat",
    "getcpu",
    "getcwd",
    "getdents",
    "getdents64",
    "getegid",
    "geteuid",
    "getgid",
    "getgroups",
    "getitimer",
    "getpeername",
    "getpgid",
    "getpgrp",
    "getpid",
    "getppid",
    "getpriority",
    "getrandom",
    "getresgid",
    "getresuid",
    "getrlimit",
    "get_robust_list",
    "getrusage",
    "getsid",
    "getsockname",
    "getsockopt",
    "gettid",
    "gettimeofday",
    "getuid",
    "getxattr",
    "inotify_add_watch",
    "inotify_init",
    "inotify_init1",
    "inotify_rm_watch",
    "ioctl",
    "ioprio_get",
    "ioprio_set",
    "kill",
    "landlock_add_rule",
    "landlock_create_ruleset",
    "landlock_restrict_self",
    "lchown",
    "lgetxattr",
    "link",
    "linkat",
    "listen",
    "listxattr",
    "llistxattr",
    "lremovexattr",
    "lseek",
    "lsetxattr",
    "lstat",
    "madvise",
    "membarrier",
    "memfd_create",
    "mincore",
    "mkdir",
    "mkdirat",
    "mlock",
    "mlock2",
    "mlockall",
    "mmap",
    "mprotect",
    "mq_getsetattr",
    "mq_notify",
    "mq_open",
    "mq_timedreceive",
    "mq_timedsend",
    "mq_unlink",
    "mremap",
    "msgctl",
    "msgget",
    "msgrcv",
    "msgsnd",
    "msync",
    "munlock",
    "munlockall",
    "munmap",
    "nanosleep",
    "newfstatat",
    "pause",
    "pidfd_open",
    "pidfd_send_signal",
    "pipe",
    "pipe2",
    "pkey_alloc",
    "pkey_free",
    "pkey_mprotect",
    "poll",
    "ppoll",
    "prctl",
    "pread64",
    "preadv",
    "preadv2",
    "prlimit64",
    "pselect6",
    "pwrite64",
    "pwritev",
    "pwritev2",
    "read",
    "readahead",
    "readlink",
    "readlinkat",
    "readv",
    "recvfrom",
    "recvmmsg",
    "recvmsg",
    "remap_file_pages",
    "removexattr",
    "rename",
    "renameat",
    "renameat2",
    "restart_syscall",
    "rmdir",
    "rseq",
    "rt_sigaction",
    "rt_sigpending",
    "rt_sigprocmask",
    "rt_sigqueueinfo",
    "rt_sigreturn",
    "rt_sigsuspend",
    "rt_sigtimedwait",
    "rt_tgsigqueueinfo",
    "sched_getaffinity",
    "sched_getattr",
    "sched_getparam",
    "sched_get_priority_max",
    "sched_get_priority_min",
    "sched_getscheduler",
    "sched_rr_get_interval",
    "sched_setaffinity",
    "sched_setattr",
    "sched_setparam",
    "sched_setscheduler",
    "sched_yield",
    "seccomp",
    "select",
    "semctl",
    "semget",
    "semop",
    "semtimedop",
    "sendfile",
    "sendmmsg",
    "sendmsg",
    "sendto",
    "setfsgid",
    "setfsuid",
    "setgid",
    "setgroups",
    "setitimer",
    "setpgid",
    "setpriority",
    "setregid",
    "setresgid",
    "setresuid",
    "setreuid",
    "setrlimit",
    "set_robust_list",
    "setsid",
    "setsockopt",
    "set_tid_address",
    "setuid",
    "setxattr",
    "shmat",
    "shmctl",
    "shmdt",
    "shmget",
    "shutdown",
    "sigaltstack",
    "signalfd",
    "signalfd4",
    "splice",
    "stat",
    "statfs",
    "statx",
    "symlink",
    "symlinkat",
    "sync",
    "sync_file_range",
    "syncfs",
    "sysinfo",
    "tee",
    "tgkill",
    "time",
    "timer_create",
    "timer_delete",
    "timer_getoverrun",
    "timer_gettime",
    "timer_settime",
    "timerfd_create",
    "timerfd_gettime",
    "timerfd_settime",
    "times",
    "tkill",
    "truncate",
    "umask",
    "uname",
    "unlink",
    "unlinkat",
    "utime",
    "utimensat",
    "utimes",
    "vfork",
    "vmsplice",
    "wait4",
    "waitid",
    "write",
    "writev",
    "cachestat",
    "map_shadow_stack",
    "process_mrelease",
];

/// Syscalls allowed only with the given arguments (several rules for one syscall are alternatives).
pub const CONDITIONAL: &[Rule] = &[
    // modes without set-id bits (see SET_ID_BITS); an open that makes no file has no mode
    Rule {
        name: "chmod",
        args: &[(1, Cmp::MaskedEq(SET_ID_BITS, 0))],
    },
    Rule {
        name: "fchmod",
        args: &[(1, Cmp::MaskedEq(SET_ID_BITS, 0))],
    },
    Rule {
        name: "fchmodat",
        args: &[(2, Cmp::MaskedEq(SET_ID_BITS, 0))],
    },
    Rule {
        name: "fchmodat2",
        args: &[(2, Cmp::MaskedEq(SET_ID_BITS, 0))],
    },
    Rule {
        name: "creat",
        args: &[(1, Cmp::MaskedEq(SET_ID_BITS, 0))],
    },
    Rule {
        name: "open",
        args: &[(1, Cmp::MaskedEq(O_MAKES_FILE, 0))],
    },
    Rule {
        name: "open",
        args: &[(2, Cmp::MaskedEq(SET_ID_BITS, 0))],
    },
    Rule {
        name: "openat",
        args: &[(2, Cmp::MaskedEq(O_MAKES_FILE, 0))],
    },
    Rule {
        name: "openat",
        args: &[(3, Cmp::MaskedEq(SET_ID_BITS, 0))],
    },
    // clone without namespace flags (threads, fork)
    Rule {
        name: "clone",
        args: &[(0, Cmp::MaskedEq(CLONE_NAMESPACE_FLAGS, 0))],
    },
    // unshare of files/fs/sysvsem only, never a namespace
    Rule {
        name: "unshare",
        args: &[(0, Cmp::MaskedEq(UNSHARE_FORBIDDEN_FLAGS, 0))],
    },
    // sockets: unix, TCP/UDP over IPv4 and IPv6 (no raw, no packet), netlink route only
    Rule {
        name: "socket",
        args: &[(0, Cmp::Eq(AF_UNIX))],
    },
    Rule {
        name: "socket",
        args: &[
            (0, Cmp::Eq(AF_INET)),
            (1, Cmp::MaskedEq(SOCK_TYPE_MASK, SOCK_STREAM)),
        ],
    },
    Rule {
        name: "socket",
        args: &[
            (0, Cmp::Eq(AF_INET)),
            (1, Cmp::MaskedEq(SOCK_TYPE_MASK, SOCK_DGRAM)),
        ],
    },
    Rule {
        name: "socket",
        args: &[
            (0, Cmp::Eq(AF_INET6)),
            (1, Cmp::MaskedEq(SOCK_TYPE_MASK, SOCK_STREAM)),
        ],
    },
    Rule {
        name: "socket",
        args: &[
            (0, Cmp::Eq(AF_INET6)),
            (1, Cmp::MaskedEq(SOCK_TYPE_MASK, SOCK_DGRAM)),
        ],
    },
    Rule {
        name: "socket",
        args: &[(0, Cmp::Eq(AF_NETLINK)), (2, Cmp::Eq(NETLINK_ROUTE))],
    },
    Rule {
        name: "socketpair",
        args: &[(0, Cmp::Eq(AF_UNIX))],
    },
    // personality: query and the harmless Linux personalities (no ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC)
    Rule {
        name: "personality",
        args: &[(0, Cmp::Eq(0x0))],
    },
    Rule {
        name: "personality",
        args: &[(0, Cmp::Eq(0x8))],
    },
    Rule {
        name: "personality",
        args: &[(0, Cmp::Eq(0x20000))],
    },
    Rule {
        name: "personality",
        args: &[(0, Cmp::Eq(0x20008))],
    },
    Rule {
        name: "personality",
        args: &[(0, Cmp::Eq(0xffff_ffff))],
    },
    // mknod only for fifos, sockets and regular files, never device nodes, never set-id
    Rule {
        name: "mknod",
        args: &[(1, Cmp::MaskedEq(S_IFMT | SET_ID_BITS, 0o010000))],
    },
    Rule {
        name: "mknod",
        args: &[(1, Cmp::MaskedEq(S_IFMT | SET_ID_BITS, 0o140000))],
    },
    Rule {
        name: "mknod",
        args: &[(1, Cmp::MaskedEq(S_IFMT | SET_ID_BITS, 0o100000))],
    },
    Rule {
        name: "mknod",
        args: &[(1, Cmp::MaskedEq(S_IFMT | SET_ID_BITS, 0))],
    },
    Rule {
        name: "mknodat",
        args: &[(2, Cmp::MaskedEq(S_IFMT | SET_ID_BITS, 0o010000))],
    },
    Rule {
        name: "mknodat",
        args: &[(2, Cmp::MaskedEq(S_IFMT | SET_ID_BITS, 0o140000))],
    },
    Rule {
        name: "mknodat",
        args: &[(2, Cmp::MaskedEq(S_IFMT | SET_ID_BITS, 0o100000))],
    },
    Rule {
        name: "mknodat",
        args: &[(2, Cmp::MaskedEq(S_IFMT | SET_ID_BITS, 0))],
    },
];

/// Syscalls that answer ENOSYS instead of EPERM (so that libc falls back to an older, filterable call).
pub const ENOSYS: &[&str] = &[
    "clone3",
    // its mode is in a struct the filter cannot read (see SET_ID_BITS): libc's open and openat,
    // whose modes it reads, serve every program
    "openat2",
    // Linux native AIO: every context reserves events from fs.aio-max-nr, one pool for the whole
    // host, so one container could leave the host's own io_setup failing with EAGAIN. ENOSYS reads
    // as a kernel without native AIO: libaio users and databases fall back to threads (the
    // workload report shows no workload that uses it).
    "io_setup",
    "io_submit",
    "io_getevents",
    "io_pgetevents",
    "io_cancel",
    "io_destroy",
];

/// ioctl requests that fail with EPERM although ioctl itself is allowed: TIOCSTI pushes bytes into
/// a terminal's input (on a terminal from outside the container, input typed into the caller's shell)
/// and TIOCLINUX drives the Linux console (its selection can be pasted the same way). The request is
/// compared on its low 32 bits, as the kernel reads it, so high bits set in the argument do not hide it.
pub const DENIED_IOCTLS: &[(&str, u64)] = &[("TIOCSTI", 0x5412), ("TIOCLINUX", 0x541C)];

/// Syscalls that must never be allowed, whatever the allowlist above says; checked by unit tests and by
/// [`super::compile`] at build time of every filter.
pub const NEVER_ALLOWED: &[&str] = &[
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "bpf",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "userfaultfd",
    "open_by_handle_at",
    "name_to_handle_at",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "swapon",
    "swapoff",
    "reboot",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "acct",
    "quotactl",
    "quotactl_fd",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "setns",
    "kcmp",
    "lookup_dcookie",
    "iopl",
    "ioperm",
    "syslog",
    "uselib",
    "vhangup",
    "nfsservctl",
    "fanotify_init",
    "pidfd_getfd",
    "memfd_secret",
    "process_madvise",
    "mbind",
    "set_mempolicy",
    "move_pages",
    "migrate_pages",
    "sethostname",
    "setdomainname",
    "clone3",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_forbidden_is_allowed_unconditionally() {
        for name in NEVER_ALLOWED {
            assert!(!UNCONDITIONAL.contains(name), "{name} is forbidden");
            assert!(
                !CONDITIONAL.iter().any(|r| r.name == *name),
                "{name} is forbidden"
            );
        }
    }

    #[test]
    fn no_duplicates() {
        let mut v = UNCONDITIONAL.to_vec();
        v.sort();
        let n = v.len();
        v.dedup();
        assert_eq!(n, v.len());
    }

    #[test]
    fn conditional_syscalls_are_not_also_unconditional() {
        for r in CONDITIONAL {
            assert!(!UNCONDITIONAL.contains(&r.name), "{}", r.name);
        }
    }
}
