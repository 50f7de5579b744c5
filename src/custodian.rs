//! The custodian: a small process `create` and `run` start before libcontainer clones anything, so
//! that what they start never outlives its bounds.
//!
//! - **The create deadline.** If the create is not over by its deadline (an image or a hook that
//!   blocks the container's init, a hook that never returns), the custodian SIGKILLs every child of
//!   the creating process (libcontainer's intermediate and init, hooks); libcontainer's create then
//!   fails and the launch guard removes the rest.
//! - **A foreground run killed.** For `run` without `--detach`, the container's processes die with
//!   the runtime (libcontainer patch 0003, PR_SET_PDEATHSIG); the custodian then removes the
//!   container's state, cgroups and private bundle by running `rloxsc delete --force`, so a killed
//!   `run` leaves nothing behind and nothing holds its caller's pipes.
//!
//! It keeps no file descriptor but its pipe's read end and a pidfd of its parent (never the caller's
//! stdio). It is told by bytes on the pipe, not by the pipe closing: the container's processes, cloned
//! from the runtime, hold copies of the write end.
//!
//! **How it is started.** The custodian is a `CLONE_VM` child ([`crate::vmchild`]): it shares the
//! runtime's memory instead of copying it (a fork copied the page tables and left copy-on-write
//! faults behind, for every create), so it keeps to raw system calls, and reads only a [`Brief`] the
//! runtime prepared and never frees. If the runtime dies, the kernel keeps the shared memory alive
//! for the custodian.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use nix::errno::Errno;
use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use crate::vmchild::{clone_vm, sys, sys_int, ChildStack};

/// What to remove when the runtime dies before it could: `rloxsc --root ROOT delete --force ID`.
#[derive(Debug, Clone)]
pub struct Reap {
    /// The state root.
    pub root: PathBuf,
    /// The container id.
    pub id: String,
}

/// The runtime's side of the custodian.
pub struct Custodian {
    pid: Pid,
    pipe: Option<std::os::fd::OwnedFd>,
    deadline: Instant,
    reaps: bool,
}

const CREATED: u8 = b'c';
const DONE: u8 = b'd';

/// Everything the custodian reads, written before it is cloned and never changed or freed after
/// (leaked on purpose: one per create, in a short-lived process).
#[repr(C)]
struct Brief {
    parent: i32,
    pipe: i32,
    /// The create deadline, CLOCK_MONOTONIC nanoseconds.
    deadline_ns: i64,
    /// `rloxsc delete --force` to run when the runtime dies: the program, its argv and envp (each
    /// NULL-terminated), or a null `exe` for none.
    exe: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
}

impl Custodian {
    /// Starts the custodian. Must be called while this process has one thread (before libcontainer
    /// and before any thread is started).
    pub fn spawn(deadline: Instant, reap: Option<Reap>) -> Result<Custodian> {
        let parent = nix::unistd::getpid();
        let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map_err(|e| anyhow::anyhow!("cannot create the custodian's pipe: {e}"))?;
        let (exe, argv, envp) = match &reap {
            Some(r) => {
                let args = [
                    OsStr::new("rloxsc"),
                    OsStr::new("--root"),
                    r.root.as_os_str(),
                    OsStr::new("delete"),
                    OsStr::new("--force"),
                    OsStr::new(&r.id),
                ];
                let env: Vec<Vec<u8>> = std::env::vars_os()
                    .map(|(k, v)| [k.as_bytes(), b"=", v.as_bytes()].concat())
                    .collect();
                (
                    leak_cstr(b"/proc/self/exe"),
                    leak_vector(args.iter().map(|a| a.as_bytes())),
                    leak_vector(env.iter().map(|e| e.as_slice())),
                )
            }
            None => (std::ptr::null(), std::ptr::null(), std::ptr::null()),
        };
        let now = monotonic_ns();
        let left = deadline
            .saturating_duration_since(Instant::now())
            .as_nanos();
        let brief: &'static Brief = Box::leak(Box::new(Brief {
            parent: parent.as_raw(),
            pipe: std::os::fd::IntoRawFd::into_raw_fd(r),
            deadline_ns: now.saturating_add(i64::try_from(left).unwrap_or(i64::MAX)),
            exe,
            argv,
            envp,
        }));
        let stack = match ChildStack::new() {
            Ok(s) => s,
            Err(e) => {
                let _ = nix::unistd::close(brief.pipe);
                bail!("cannot map the custodian's stack: {e}");
            }
        };
        // SAFETY: `custodian_main` keeps to raw system calls (see the module documentation) and
        // reads only `brief` (leaked, never written again); the stack is leaked below, so it
        // outlives the custodian
        let child = unsafe {
            clone_vm(
                custodian_main,
                brief as *const Brief as *mut libc::c_void,
                0,
                &stack,
            )
        };
        stack.leak();
        // the custodian has its own copy of the descriptor table: the read end is its alone
        let _ = nix::unistd::close(brief.pipe);
        let child = match child {
            Ok(pid) => pid,
            Err(e) => bail!("cannot start the custodian: {e}"),
        };
        Ok(Custodian {
            pid: child,
            pipe: Some(w),
            deadline,
            reaps: reap.is_some(),
        })
    }

    /// The create is over: the deadline no longer applies. Returns whether the deadline had passed
    /// (then the custodian killed, or was about to kill, the create's processes: treat it as timed
    /// out). A custodian without a reap order ends here.
    pub fn created(&mut self) -> bool {
        let late = Instant::now() >= self.deadline;
        if let Some(w) = &self.pipe {
            let _ = nix::unistd::write(w, &[CREATED]);
        }
        if !self.reaps {
            self.finish();
        }
        late
    }

    /// The runtime removed the container itself (or it was never created): the custodian ends.
    pub fn finish(&mut self) {
        if let Some(w) = self.pipe.take() {
            let _ = nix::unistd::write(&w, &[DONE]);
            drop(w);
            while let Err(Errno::EINTR) = waitpid(self.pid, None) {}
        }
    }
}

impl Drop for Custodian {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A NUL-terminated copy of `s` that is never freed.
fn leak_cstr(s: &[u8]) -> *const libc::c_char {
    let c = CString::new(s.iter().copied().filter(|b| *b != 0).collect::<Vec<u8>>())
        .expect("no NUL left");
    c.into_raw()
}

/// A NULL-terminated array of NUL-terminated copies of `items`, never freed.
fn leak_vector<'a>(items: impl Iterator<Item = &'a [u8]>) -> *const *const libc::c_char {
    let mut v: Vec<*const libc::c_char> = items.map(leak_cstr).collect();
    v.push(std::ptr::null());
    Box::leak(v.into_boxed_slice()).as_ptr()
}

/// CLOCK_MONOTONIC in nanoseconds (the clock `Instant` reads on Linux).
fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let p = &mut ts as *mut libc::timespec as usize;
    // SAFETY: the call writes only `ts`, ours
    unsafe {
        sys(
            libc::SYS_clock_gettime,
            [libc::CLOCK_MONOTONIC as usize, p, 0, 0, 0, 0],
        )
    };
    ts.tv_sec
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec)
}

/// Opens the NUL-terminated `path` (raw `open`), returning the fd or a negative errno.
fn open_raw(path: &[u8], flags: i32) -> isize {
    if path.last() != Some(&0) {
        return -(libc::EINVAL as isize);
    }
    // SAFETY: `path` is NUL-terminated (checked) and outlives the call
    unsafe {
        sys(
            libc::SYS_open,
            [path.as_ptr() as usize, flags as usize, 0, 0, 0, 0],
        )
    }
}

/// Reads into `buf` (raw `read`), returning the count or a negative errno.
fn read_raw(fd: i32, buf: &mut [u8]) -> isize {
    let (p, n) = (buf.as_mut_ptr() as usize, buf.len());
    // SAFETY: the kernel writes at most `n` bytes into `buf`, ours
    unsafe { sys(libc::SYS_read, [fd as usize, p, n, 0, 0, 0]) }
}

/// The custodian's life (raw system calls only, see the module documentation). Returns its exit
/// status.
extern "C" fn custodian_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the leaked Brief `spawn` passed, valid for the life of the process
    let b = unsafe { &*(arg as *const Brief) };
    let reaps = !b.exe.is_null();
    let pdeathsig = || {
        let (opt, sig) = (libc::PR_SET_PDEATHSIG as usize, libc::SIGKILL as usize);
        sys_int(libc::SYS_prctl, [opt, sig, 0, 0, 0, 0])
    };
    // without a reap order it simply dies with its parent
    if !reaps {
        pdeathsig();
    }
    // a pidfd becomes readable when the parent exits
    let pidfd = sys_int(libc::SYS_pidfd_open, [b.parent as usize, 0, 0, 0, 0, 0]) as i32;
    if pidfd < 0 {
        // a kernel without pidfds (< 5.3): no reaping, only the deadline; die with the parent
        pdeathsig();
    }
    // the parent may be gone already (killed right after it started the custodian): what it holds
    // is then given back at once, if this is a reaping custodian
    let parent_gone = sys_int(libc::SYS_getppid, [0; 6]) as i32 != b.parent;
    if parent_gone && !reaps {
        return 0; // whatever it started is handled by its pdeathsig
    }
    // nothing but the pipe and the pidfd stays open (never the caller's stdio)
    let r = b.pipe;
    let max = r.max(pidfd);
    for fd in 0..=max {
        if fd != r && fd != pidfd {
            sys_int(libc::SYS_close, [fd as usize, 0, 0, 0, 0, 0]);
        }
    }
    let above = (max + 1) as usize;
    sys_int(
        libc::SYS_close_range,
        [above, libc::c_uint::MAX as usize, 0, 0, 0, 0],
    );
    if parent_gone {
        reap_now(b);
        return 0;
    }

    let mut creating = true;
    loop {
        let timeout = if creating {
            let left_ms = b.deadline_ns.saturating_sub(monotonic_ns()).max(0) / 1_000_000;
            left_ms.min(i32::MAX as i64) as i32
        } else {
            -1
        };
        match poll(r, pidfd, timeout) {
            Event::Byte(CREATED) => creating = false,
            Event::Byte(_) => return 0,
            // the runtime always says DONE before it lets go of the pipe: a pipe closed without it
            // means the runtime is gone (its last copies went with it and its container)
            Event::Closed | Event::ParentGone => {
                if reaps {
                    reap_now(b);
                }
                return 0;
            }
            Event::Timeout if creating => {
                kill_children_of(b.parent, r);
                creating = false;
            }
            Event::Timeout => {}
        }
    }
}

enum Event {
    Byte(u8),
    Closed,
    ParentGone,
    Timeout,
}

fn poll(pipe: i32, pidfd: i32, ms: i32) -> Event {
    let mut fds = [
        libc::pollfd {
            fd: pipe,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: pidfd,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let n = if pidfd >= 0 { 2 } else { 1 };
    let p = fds.as_mut_ptr() as usize;
    // SAFETY: `fds` is ours and holds at least `n` entries
    let rc = unsafe { sys(libc::SYS_poll, [p, n, ms as isize as usize, 0, 0, 0]) };
    if rc <= 0 {
        return Event::Timeout; // timed out, or interrupted: look again
    }
    if fds[0].revents & libc::POLLIN != 0 {
        let mut byte = [0u8; 1];
        return match read_raw(pipe, &mut byte) {
            1 => Event::Byte(byte[0]),
            _ => Event::Closed,
        };
    }
    if n == 2 && fds[1].revents & libc::POLLIN != 0 {
        return Event::ParentGone;
    }
    if fds[0].revents & libc::POLLHUP != 0 {
        return Event::Closed;
    }
    Event::Timeout
}

/// SIGKILLs every child of `parent` but this process, until none is left or the parent says the
/// create is over.
fn kill_children_of(parent: i32, pipe: i32) {
    let me = sys_int(libc::SYS_getpid, [0; 6]) as i32;
    for _ in 0..500 {
        let mut found = false;
        for_each_pid(|pid| {
            if pid != me && parent_of(pid) == Some(parent) {
                found = true;
                let sig = libc::SIGKILL as usize;
                sys_int(libc::SYS_kill, [pid as usize, sig, 0, 0, 0, 0]);
            }
        });
        if !found || !matches!(poll(pipe, -1, 10), Event::Timeout) {
            return;
        }
    }
}

/// Calls `f` with every pid listed in /proc (getdents64 into a stack buffer).
fn for_each_pid(mut f: impl FnMut(i32)) {
    let dir = open_raw(
        b"/proc\0",
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
    );
    if dir < 0 {
        return;
    }
    let mut buf = [0u8; 4096];
    loop {
        let (p, len) = (buf.as_mut_ptr() as usize, buf.len());
        // SAFETY: the kernel writes at most `len` bytes of directory entries into `buf`, ours
        let n = unsafe { sys(libc::SYS_getdents64, [dir as usize, p, len, 0, 0, 0]) };
        if n <= 0 {
            break;
        }
        let n = n as usize;
        let mut off = 0usize;
        // struct linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name
        while off + 19 <= n {
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            if reclen < 19 || off + reclen > n {
                break;
            }
            if let Some(pid) = parse_pid(&buf[off + 19..off + reclen]) {
                f(pid);
            }
            off += reclen;
        }
    }
    sys_int(libc::SYS_close, [dir as usize, 0, 0, 0, 0, 0]);
}

/// The decimal number `name` holds (up to a NUL), if it is only digits.
fn parse_pid(name: &[u8]) -> Option<i32> {
    let end = name.iter().position(|b| *b == 0).unwrap_or(name.len());
    let digits = &name[..end];
    if digits.is_empty() || digits.len() > 9 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        digits
            .iter()
            .fold(0i32, |n, d| n * 10 + i32::from(d - b'0')),
    )
}

/// The parent pid of `pid`, from `/proc/<pid>/stat` (its name may hold spaces and parentheses, so
/// the fields are read after the last `)`). Allocates nothing.
pub fn parent_of(pid: i32) -> Option<i32> {
    let mut path = [0u8; 32];
    let mut len = 0;
    for part in [&b"/proc/"[..], itoa(pid, &mut [0u8; 12]), b"/stat\0"] {
        path[len..len + part.len()].copy_from_slice(part);
        len += part.len();
    }
    let fd = open_raw(&path[..len], libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 512];
    let n = read_raw(fd as i32, &mut buf);
    sys_int(libc::SYS_close, [fd as usize, 0, 0, 0, 0, 0]);
    if n <= 0 {
        return None;
    }
    let st = &buf[..n as usize];
    let close = st.iter().rposition(|b| *b == b')')?;
    // ") S PPID ..."
    let mut fields = st[close + 1..]
        .split(|b| *b == b' ')
        .filter(|f| !f.is_empty());
    fields.next()?;
    parse_pid(fields.next()?)
}

/// `n` in decimal, written into `buf`.
fn itoa(n: i32, buf: &mut [u8; 12]) -> &[u8] {
    let mut i = buf.len();
    let mut v = n.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

/// Runs `rloxsc delete --force` for the dead runtime, with stdio on /dev/null.
fn reap_now(b: &Brief) {
    let null = open_raw(b"/dev/null\0", libc::O_RDWR);
    if null >= 0 {
        for fd in 0..3usize {
            sys_int(libc::SYS_dup2, [null as usize, fd, 0, 0, 0, 0]);
        }
    }
    let (exe, argv, envp) = (b.exe as usize, b.argv as usize, b.envp as usize);
    // SAFETY: the program, argv and envp of the leaked Brief: NUL-terminated strings and
    // NULL-terminated arrays that are never freed
    unsafe { sys(libc::SYS_execve, [exe, argv, envp, 0, 0, 0]) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_parent_of_a_process() {
        let me = std::process::id() as i32;
        assert_eq!(
            parent_of(me),
            Some(std::os::unix::process::parent_id() as i32)
        );
        assert_eq!(parent_of(i32::MAX), None);
    }

    #[test]
    fn parses_pids_and_formats_numbers() {
        assert_eq!(parse_pid(b"1234\0junk"), Some(1234));
        assert_eq!(parse_pid(b"self\0"), None);
        assert_eq!(parse_pid(b"\0"), None);
        assert_eq!(itoa(0, &mut [0; 12]), b"0");
        assert_eq!(itoa(4194304, &mut [0; 12]), b"4194304");
        assert_eq!(itoa(-7, &mut [0; 12]), b"-7");
    }

    #[test]
    fn lists_this_process_among_the_pids() {
        let me = std::process::id() as i32;
        let mut seen = false;
        for_each_pid(|p| seen |= p == me);
        assert!(seen);
    }
}
