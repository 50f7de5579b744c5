//! The custodian: a small process `create` and `run` fork before libcontainer clones anything, so
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

use std::os::fd::{IntoRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context as _, Result};
use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::sys::wait::waitpid;
use nix::unistd::Pid;

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
    pipe: Option<OwnedFd>,
    deadline: Instant,
    reaps: bool,
}

const CREATED: u8 = b'c';
const DONE: u8 = b'd';

impl Custodian {
    /// Forks the custodian. Must be called while this process has one thread (before libcontainer
    /// and before any thread is started).
    pub fn spawn(deadline: Instant, reap: Option<Reap>) -> Result<Custodian> {
        let parent = nix::unistd::getpid();
        let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .context("cannot create the custodian's pipe")?;
        let exe = std::ffi::CString::new("/proc/self/exe").expect("no NUL");
        let reap_argv = reap.as_ref().map(|r| {
            ["rloxsc", "--root"]
                .iter()
                .map(|s| s.to_string())
                .chain([
                    r.root.to_string_lossy().into_owned(),
                    "delete".into(),
                    "--force".into(),
                    r.id.clone(),
                ])
                .map(|a| std::ffi::CString::new(a).unwrap_or_default())
                .collect::<Vec<_>>()
        });
        // SAFETY: this process is single-threaded here, so the child may run ordinary code.
        match unsafe { nix::unistd::fork() }.context("cannot fork the custodian")? {
            nix::unistd::ForkResult::Child => {
                drop(w);
                let code = custodian_main(r, parent, deadline, reap_argv.as_deref(), &exe);
                // SAFETY: _exit ends the child without running the parent's destructors.
                unsafe { libc::_exit(code) };
            }
            nix::unistd::ForkResult::Parent { child } => {
                drop(r);
                Ok(Custodian {
                    pid: child,
                    pipe: Some(w),
                    deadline,
                    reaps: reap.is_some(),
                })
            }
        }
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

/// The custodian's life. Returns its exit status.
fn custodian_main(
    pipe: OwnedFd,
    parent: Pid,
    deadline: Instant,
    reap: Option<&[std::ffi::CString]>,
    exe: &std::ffi::CStr,
) -> i32 {
    // without a reap order it simply dies with its parent
    if reap.is_none() {
        // SAFETY: plain prctl
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    }
    // a pidfd becomes readable when the parent exits
    // SAFETY: pidfd_open with a pid and no flags
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, parent.as_raw(), 0) } as i32;
    if pidfd < 0 {
        // a kernel without pidfds (< 5.3): no reaping, only the deadline; die with the parent
        // SAFETY: plain prctl
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    }
    if nix::unistd::getppid() != parent {
        return 0; // the parent is already gone: whatever it started is handled by its pdeathsig
    }
    let r = pipe.into_raw_fd();
    // nothing but the pipe and the pidfd stays open (never the caller's stdio)
    let keep = [r, pidfd];
    let mut fd = 0;
    let max = keep.iter().copied().max().unwrap_or(0);
    while fd <= max {
        if !keep.contains(&fd) {
            // SAFETY: closing an fd this child no longer uses
            unsafe { libc::close(fd) };
        }
        fd += 1;
    }
    // SAFETY: close_range above every fd kept
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            (max + 1) as libc::c_uint,
            libc::c_uint::MAX,
            0,
        )
    };

    let mut creating = true;
    loop {
        let timeout = if creating {
            deadline
                .saturating_duration_since(Instant::now())
                .as_millis()
                .min(i32::MAX as u128) as i32
        } else {
            -1
        };
        match poll(r, pidfd, timeout.max(if creating { 0 } else { -1 })) {
            Event::Byte(CREATED) => creating = false,
            Event::Byte(_) => return 0,
            // the runtime always says DONE before it lets go of the pipe: a pipe closed without it
            // means the runtime is gone (its last copies went with it and its container)
            Event::Closed | Event::ParentGone => {
                if let Some(argv) = reap {
                    reap_now(exe, argv);
                }
                return 0;
            }
            Event::Timeout if creating => {
                kill_children_of(parent, r, pidfd);
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
    // SAFETY: poll on pollfds we own
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), n, ms) };
    if rc == 0 {
        return Event::Timeout;
    }
    if rc < 0 {
        return Event::Timeout;
    }
    if fds[0].revents & libc::POLLIN != 0 {
        let mut b = [0u8; 1];
        // SAFETY: read into a one-byte buffer we own
        return match unsafe { libc::read(pipe, b.as_mut_ptr().cast(), 1) } {
            1 => Event::Byte(b[0]),
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
fn kill_children_of(parent: Pid, pipe: i32, pidfd: i32) {
    let me = nix::unistd::getpid().as_raw();
    for _ in 0..500 {
        let kids: Vec<i32> = children_of(parent.as_raw())
            .into_iter()
            .filter(|p| *p != me)
            .collect();
        for pid in &kids {
            let _ = nix::sys::signal::kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        if kids.is_empty() || !matches!(poll(pipe, -1, 10), Event::Timeout) {
            return;
        }
        let _ = pidfd;
    }
}

/// Runs `rloxsc delete --force` for the dead runtime, with stdio on /dev/null.
fn reap_now(exe: &std::ffi::CStr, argv: &[std::ffi::CString]) {
    // SAFETY: open of a constant path; dup2 onto 0..2 of this single-threaded child
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
        }
    }
    let _ = nix::unistd::execv(exe, argv);
}

/// The pids whose parent is `ppid` (from `/proc/<pid>/stat`).
pub fn children_of(ppid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| parent_of(*pid) == Some(ppid))
        .collect()
}

/// The parent pid of `pid` (from `/proc/<pid>/stat`; the name may hold spaces and parentheses, so
/// fields are read after the last `)`).
pub fn parent_of(pid: i32) -> Option<i32> {
    let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &st[st.rfind(')')? + 2..];
    rest.split_whitespace().nth(1)?.parse().ok()
}
