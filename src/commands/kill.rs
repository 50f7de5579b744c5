//! `kill`: send a signal to the container's init, or with `--all` to every process in its cgroup.

use anyhow::{anyhow, bail, Result};
use libcontainer::container::ContainerStatus;
use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::Context;
use crate::container;

/// Sends `signal` (runc's spellings) to container `id`.
pub fn kill(ctx: &Context, id: &str, signal: &str, all: bool) -> Result<()> {
    let sig = container::parse_signal(signal)?;
    let mut c = container::load(&ctx.layout, id)?;
    // As with runc, `kill --all` of a stopped container still signals whatever is left in its
    // cgroup: containerd's shim sends `kill --all ID 9` when the init exits in a shared pid
    // namespace (a CRI pod's), and waits 2 s for the container's stdio to close if it fails.
    let stopped_all = all && c.status() == ContainerStatus::Stopped;
    if !c.can_kill() && !stopped_all {
        bail!("container {id:?}: container not running");
    }
    if !all {
        return signal_init(ctx, &mut c, id, sig);
    }
    // a cgroup that is gone holds no process: systemd removes a transient scope as soon as its last
    // process exits, and containerd's shim sends `kill --all ID 9` right then (and waits for it)
    let cgroup_gone = || !crate::footprint::placement(&ctx.layout, id).is_some_and(|p| p.exists());
    if stopped_all && cgroup_gone() {
        return Ok(());
    }
    match Signal::try_from(sig) {
        Ok(s) => c.kill(s, all).or_else(|e| {
            if stopped_all && cgroup_gone() {
                return Ok(()); // removed while it was being read
            }
            let msg = crate::errors::error_chain(&e);
            if msg.contains("ESRCH") || msg.contains("No such process") {
                Err(anyhow!("container {id:?}: no such process"))
            } else {
                Err(anyhow!("cannot signal container {id:?}: {msg}"))
            }
        }),
        Err(_) => {
            // signal 0 (a liveness probe) and real-time signals, which libcontainer's Signal type
            // cannot carry: every process the container's cgroup still holds (none, once a stopped
            // container's processes are gone: `kill --all ID 0` then succeeds, as under runc)
            for p in container::pids(&ctx.layout, id).unwrap_or_default() {
                // SAFETY: plain kill(2) with a validated signal number.
                unsafe { libc::kill(Pid::from_raw(p).as_raw(), sig) };
            }
            Ok(())
        }
    }
}

/// Signals the container's init through a pidfd opened after checking the init's start time, so a
/// recycled pid (or a forged one) is never signalled; a paused container is thawed for SIGKILL, as
/// runc does (a frozen process cannot act on it on cgroup v1).
fn signal_init(
    ctx: &Context,
    c: &mut libcontainer::container::Container,
    id: &str,
    sig: i32,
) -> Result<()> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let pid = c
        .pid()
        .ok_or_else(|| anyhow!("container {id:?}: container not running"))?
        .as_raw();
    // SAFETY: pidfd_open with a pid and no flags
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        bail!("container {id:?}: no such process");
    }
    // SAFETY: pidfd_open returned a new fd nothing else owns
    let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // the pidfd pins the process: if it is the init now, it is the init the signal reaches
    if let Some(init) = ctx.layout.read_record(id).ok().and_then(|r| r.init) {
        if init.pid != pid || !init.is_alive() {
            bail!("container {id:?}: container not running (pid {pid} is no longer its init)");
        }
    }
    use std::os::fd::AsRawFd;
    // SAFETY: pidfd_send_signal on our pidfd with a validated signal number, no siginfo
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ESRCH) {
            bail!("container {id:?}: no such process");
        }
        bail!("cannot signal container {id:?}: {e}");
    }
    if sig == libc::SIGKILL && c.status() == ContainerStatus::Paused {
        use libcgroups::common::CgroupManager;
        let _ = container::cgroup_manager(&ctx.layout, id)
            .map(|m| m.freeze(libcgroups::common::FreezerState::Thawed));
    }
    Ok(())
}
