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
    match Signal::try_from(sig) {
        Ok(s) => c.kill(s, all).map_err(|e| {
            let msg = crate::errors::error_chain(&e);
            if msg.contains("ESRCH") || msg.contains("No such process") {
                anyhow!("container {id:?}: no such process")
            } else {
                anyhow!("cannot signal container {id:?}: {msg}")
            }
        }),
        Err(_) => {
            // real-time signals: libcontainer's Signal type cannot carry them
            let pid = c
                .pid()
                .ok_or_else(|| anyhow!("container {id:?}: container not running"))?;
            if c.status() == ContainerStatus::Stopped {
                bail!("container {id:?}: container not running");
            }
            let pids = if all {
                cgroup_pids(pid.as_raw())
            } else {
                vec![pid.as_raw()]
            };
            for p in pids {
                // SAFETY: plain kill(2) with a validated signal number.
                if unsafe { libc::kill(Pid::from_raw(p).as_raw(), sig) } != 0 && p == pid.as_raw() {
                    bail!("container {id:?}: no such process");
                }
            }
            Ok(())
        }
    }
}

/// Pids in the same pids cgroup as `pid` (v1 or v2).
fn cgroup_pids(pid: i32) -> Vec<i32> {
    crate::cgroups::ProcessCgroups::of(pid)
        .and_then(|c| c.procs_dir())
        .map(|d| crate::cgroups::procs_in(&d))
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| vec![pid])
}
