//! `run`: create, start and (unless `--detach`) wait for the container in one process, forwarding
//! signals to it; the exit status is the container's (128+N when a signal ended it). The container is
//! deleted when it ends.

use std::sync::atomic::{AtomicI32, Ordering};

use anyhow::{anyhow, Result};
use nix::errno::Errno;
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;

use super::create::{cleanup_failed_create, create_with_console, CreateOptions};
use super::start::start_checked;
use super::Context;

static PENDING: AtomicI32 = AtomicI32::new(0);

extern "C" fn remember(sig: libc::c_int) {
    PENDING.store(sig, Ordering::SeqCst);
}

/// Signals a foreground `run` forwards to the container.
const FORWARDED: &[Signal] = &[
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
];

fn install_forwarding() -> Result<()> {
    let act = SigAction::new(
        SigHandler::Handler(remember),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for s in FORWARDED {
        // SAFETY: the handler only stores into an atomic.
        unsafe { sigaction(*s, &act) }
            .map_err(|e| anyhow!("cannot install a handler for {s}: {e}"))?;
    }
    Ok(())
}

/// Runs the container described by `opts`; returns the exit status `rloxsc run` should exit with.
pub fn run(ctx: &Context, opts: CreateOptions) -> Result<i32> {
    let id = opts.id.clone();
    let t0 = std::time::Instant::now();
    let (c, console) = create_with_console(ctx, &opts)?;
    let pid = c
        .pid()
        .ok_or_else(|| anyhow!("container {id:?} has no init pid"))?;
    let master = match &console {
        Some(sock) => match sock.receive_master() {
            Ok(m) => Some(m),
            Err(e) => {
                cleanup_failed_create(ctx, &id);
                return Err(e.context("cannot set up the container's terminal"));
            }
        },
        None => None,
    };
    if !opts.detach {
        install_forwarding()?;
    }
    // create verified the container a moment ago in this very process
    if let Err(e) = start_checked(ctx, &id, false) {
        cleanup_failed_create(ctx, &id);
        return Err(e);
    }
    if opts.detach {
        return Ok(0);
    }
    tracing::debug!("run {id}: started at {:?}", t0.elapsed());
    let (_raw, output) = match master {
        Some(m) => {
            crate::tty::copy_window_size(&m);
            let raw = crate::tty::RawMode::enter();
            (Some(raw), Some(crate::tty::proxy(m)?))
        }
        None => (None, None),
    };
    let code = wait_forwarding(pid);
    finish_output(output);
    tracing::debug!("run {id}: container ended at {:?}", t0.elapsed());
    if let Err(e) = super::delete::delete(ctx, &id, true) {
        tracing::warn!("container {id}: cleanup after run failed: {e:#}");
    }
    tracing::debug!("run {id}: deleted at {:?}", t0.elapsed());
    code
}

/// Lets the terminal's output thread drain what the process wrote (bounded: a process left behind in
/// the container may keep the terminal open).
pub fn finish_output(output: Option<std::thread::JoinHandle<()>>) {
    if let Some(h) = output {
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(500);
        while !h.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        if h.is_finished() {
            let _ = h.join();
        }
    }
}

/// Forwards the usual signals to `pid` and waits for it; returns its exit status (128+N for signal N).
pub fn forward_and_wait(pid: Pid) -> Result<i32> {
    install_forwarding()?;
    wait_forwarding(pid)
}

fn wait_forwarding(pid: Pid) -> Result<i32> {
    loop {
        match waitpid(pid, None) {
            Ok(WaitStatus::Exited(_, code)) => return Ok(code),
            Ok(WaitStatus::Signaled(_, sig, _)) => return Ok(128 + sig as i32),
            Ok(_) => continue,
            Err(Errno::EINTR) => {
                let sig = PENDING.swap(0, Ordering::SeqCst);
                if sig != 0 {
                    // SAFETY: kill(2) with a signal number we received.
                    unsafe { libc::kill(pid.as_raw(), sig) };
                }
            }
            Err(e) => {
                return Err(anyhow!(
                    "waiting for the container's init {pid} failed: {e}"
                ))
            }
        }
    }
}
