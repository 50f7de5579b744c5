//! Waiting for a container process in the foreground (`run`, `exec` without `--detach`): signals
//! forwarded to it, a wall-time limit that kills every process of the container, the exit status,
//! and the terminal rloxsc provides when the caller gives no console socket.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use nix::errno::Errno;
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;

use crate::bundle::Layout;
use crate::container;
use crate::record::Ending;
use crate::tty::ConsoleSocket;

static PENDING: AtomicI32 = AtomicI32::new(0);
static TIMER_FIRED: AtomicBool = AtomicBool::new(false);

extern "C" fn remember(sig: libc::c_int) {
    if sig == libc::SIGALRM {
        TIMER_FIRED.store(true, Ordering::SeqCst);
    } else {
        PENDING.store(sig, Ordering::SeqCst);
    }
}

/// Signals a foreground `run` or `exec` forwards to the container's process.
const FORWARDED: &[Signal] = &[
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
];

/// Waits for a container process in the foreground: forwards the usual signals to it and, with a
/// deadline, kills every process of the container when the deadline passes.
pub struct Waiter {
    deadline: Option<Instant>,
}

impl Waiter {
    /// Installs the signal handlers (the forwarded signals and SIGALRM for the deadline).
    pub fn install() -> Result<Waiter> {
        let act = SigAction::new(
            SigHandler::Handler(remember),
            SaFlags::empty(),
            SigSet::empty(),
        );
        for s in FORWARDED.iter().chain(std::iter::once(&Signal::SIGALRM)) {
            // SAFETY: the handler only stores into atomics.
            unsafe { sigaction(*s, &act) }
                .map_err(|e| anyhow!("cannot install a handler for {s}: {e}"))?;
        }
        Ok(Waiter { deadline: None })
    }

    /// Arms the wall-time limit: at `deadline` the waited-for container is killed.
    pub fn arm(&mut self, deadline: Instant) -> Result<()> {
        self.deadline = Some(deadline);
        let d = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        let it = libc::itimerval {
            it_interval: libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            },
            it_value: libc::timeval {
                tv_sec: d.as_secs() as libc::time_t,
                tv_usec: d.subsec_micros() as libc::suseconds_t,
            },
        };
        // SAFETY: setitimer with a valid struct and no old-value pointer.
        if unsafe { libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut()) } != 0 {
            bail!(
                "cannot arm the timeout: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(())
    }

    /// Whether the deadline passed (and the container was killed for it).
    pub fn timed_out(&self) -> bool {
        TIMER_FIRED.load(Ordering::SeqCst)
    }

    /// Waits for `pid`, forwarding signals; when the deadline fires, kills every process of container
    /// `kill_on_deadline` (the whole cgroup, not only the init) and keeps waiting.
    pub fn wait(&self, pid: Pid, kill_on_deadline: Option<(&Layout, &str)>) -> Result<Ending> {
        let mut killed = false;
        loop {
            match waitpid(pid, None) {
                Ok(WaitStatus::Exited(_, code)) => return Ok(Ending::Exited(code)),
                Ok(WaitStatus::Signaled(_, sig, _)) => return Ok(Ending::Signaled(sig as i32)),
                Ok(_) => continue,
                Err(Errno::EINTR) => {
                    if self.timed_out() && !killed {
                        killed = true;
                        if let Some((layout, id)) = kill_on_deadline {
                            tracing::info!(
                                "container {id}: --timeout passed, killing every process"
                            );
                            for p in container::pids(layout, id).unwrap_or_default() {
                                let _ = nix::sys::signal::kill(Pid::from_raw(p), Signal::SIGKILL);
                            }
                        }
                        let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
                    }
                    let sig = PENDING.swap(0, Ordering::SeqCst);
                    if sig != 0 {
                        // SAFETY: kill(2) with a signal number we received.
                        unsafe { libc::kill(pid.as_raw(), sig) };
                    }
                }
                Err(e) => {
                    return Err(anyhow!(
                        "waiting for the container's process {pid} failed: {e}"
                    ))
                }
            }
        }
    }
}

/// The exit status a waiting `run` or `exec` exits with: the process's, 128+N for signal N.
pub fn exit_status(e: Ending) -> i32 {
    match e {
        Ending::Exited(c) => c,
        Ending::Signaled(s) => 128 + s,
    }
}

/// A foreground terminal: the pty master received from the container's process, the caller's
/// terminal in raw mode, and the thread copying the output.
pub struct TerminalSession {
    _raw: crate::tty::RawMode,
    output: std::thread::JoinHandle<()>,
}

impl TerminalSession {
    /// Receives the pty master on rloxsc's own console socket and starts copying.
    pub fn attach(sock: &ConsoleSocket) -> Result<TerminalSession> {
        let m = sock
            .receive_master()
            .context("cannot set up the container's terminal")?;
        crate::tty::copy_window_size(&m);
        let raw = crate::tty::RawMode::enter();
        Ok(TerminalSession {
            _raw: raw,
            output: crate::tty::proxy(m)?,
        })
    }

    /// Lets the output thread drain what the process wrote (bounded: a process left behind in the
    /// container may keep the terminal open), then restores the caller's terminal.
    pub fn finish(self) {
        let deadline = Instant::now() + Duration::from_millis(500);
        while !self.output.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if self.output.is_finished() {
            let _ = self.output.join();
        }
    }
}
