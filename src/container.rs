//! Helpers shared by the verbs: container ids, loading a container's state, signals.

use anyhow::{anyhow, bail, Result};
use libcontainer::container::{Container, ContainerStatus};

use crate::bundle::Layout;

/// Checks a container id as runc does: letters, digits, `_`, `+`, `-`, `.`; not `.` or `..`.
pub fn validate_id(id: &str) -> Result<()> {
    if id.is_empty() || id == "." || id == ".." || id.len() > 1024 {
        bail!("invalid container id {id:?}");
    }
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_+-.".contains(c))
    {
        bail!(
            "invalid container id {id:?}: only letters, digits, '_', '+', '-' and '.' are allowed"
        );
    }
    Ok(())
}

/// Loads container `id` from the state root, with runc's wording when it does not exist.
pub fn load(layout: &Layout, id: &str) -> Result<Container> {
    validate_id(id)?;
    let dir = layout.container_dir(id);
    if !dir.join("state.json").exists() {
        bail!("container {id:?} does not exist");
    }
    let mut c = Container::load(dir)
        .map_err(|e| anyhow!("cannot load the state of container {id:?}: {e}"))?;
    c.refresh_status()
        .map_err(|e| anyhow!("cannot refresh the status of container {id:?}: {e}"))?;
    // libcontainer judges "running" by the pid alone: once the init is gone, its pid may belong to
    // another process, which no verb may then signal, join or judge as the container's
    if c.status() != ContainerStatus::Stopped {
        if let (Some(pid), Ok(rec)) = (c.pid(), layout.read_record(id)) {
            if let Some(init) = rec.init {
                if init.pid != pid.as_raw() || !init.is_alive() {
                    tracing::warn!(
                        "container {id}: pid {pid} is not its init any more (start time differs): the container is stopped"
                    );
                    c.set_status(ContainerStatus::Stopped);
                }
            }
        }
    }
    Ok(c)
}

/// The state letter of process `pid` and whether it is exiting (`PF_EXITING`: it called exit or was
/// killed, and the kernel is tearing it down), from `/proc/<pid>/stat`; `None` when it is gone.
pub fn process_state(pid: i32) -> Option<(char, bool)> {
    const PF_EXITING: u64 = 0x4;
    let stat = crate::fsutil::read_small_string(format!("/proc/{pid}/stat")).ok()?;
    // the fields after the command name's closing parenthesis: state, ppid, pgrp, session, tty,
    // tpgid, flags
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let flags: u64 = fields.get(6)?.parse().ok()?;
    Some((fields.first()?.chars().next()?, flags & PF_EXITING != 0))
}

/// Whether process `pid` has ended: gone, a zombie, or exiting.
pub fn process_ended(pid: i32) -> bool {
    process_state(pid).is_none_or(|(state, exiting)| exiting || state == 'Z' || state == 'X')
}

/// Parses a signal as runc does: a name with or without `SIG` (any case), `RTMIN+N`/`RTMAX-N`, or a number.
pub fn parse_signal(s: &str) -> Result<i32> {
    let up = s.trim().to_ascii_uppercase();
    let name = up.strip_prefix("SIG").unwrap_or(&up);
    if let Ok(n) = name.parse::<i32>() {
        // 0 checks that the process exists and may be signalled (`kill ID 0`, a liveness probe)
        if (0..=64).contains(&n) {
            return Ok(n);
        }
        bail!("invalid signal {s:?}");
    }
    let (rtmin, rtmax) = (libc::SIGRTMIN(), libc::SIGRTMAX());
    if name == "RTMIN" {
        return Ok(rtmin);
    }
    if name == "RTMAX" {
        return Ok(rtmax);
    }
    if let Some(n) = name
        .strip_prefix("RTMIN+")
        .and_then(|n| n.parse::<i32>().ok())
    {
        if rtmin + n <= rtmax {
            return Ok(rtmin + n);
        }
    }
    if let Some(n) = name
        .strip_prefix("RTMAX-")
        .and_then(|n| n.parse::<i32>().ok())
    {
        if rtmax - n >= rtmin {
            return Ok(rtmax - n);
        }
    }
    let sig: nix::sys::signal::Signal = format!("SIG{name}")
        .parse()
        .map_err(|_| anyhow!("invalid signal {s:?}"))?;
    Ok(sig as i32)
}

/// The cgroup manager of container `id` (its cgroup as its footprint records it, under the driver
/// chosen at create).
pub fn cgroup_manager(layout: &Layout, id: &str) -> Result<libcgroups::common::AnyCgroupManager> {
    crate::footprint::placement(layout, id)
        .ok_or_else(|| anyhow!("container {id:?} has no cgroup path"))?
        .manager(id)
}

/// Pids of every process in container `id`'s cgroup.
pub fn pids(layout: &Layout, id: &str) -> Result<Vec<i32>> {
    use libcgroups::common::CgroupManager;
    let m = cgroup_manager(layout, id)?;
    let mut v: Vec<i32> = m
        .get_all_pids()
        .map_err(|e| anyhow!("cannot list the processes of container {id:?}: {e}"))?
        .into_iter()
        .map(|p| p.as_raw())
        .collect();
    v.sort_unstable();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        assert!(validate_id("abc-1.2_3+x").is_ok());
        assert!(validate_id("").is_err());
        assert!(validate_id("..").is_err());
        assert!(validate_id("a/b").is_err());
        assert!(validate_id("a b").is_err());
    }

    #[test]
    fn signals() {
        assert_eq!(parse_signal("9").unwrap(), 9);
        assert_eq!(parse_signal("KILL").unwrap(), 9);
        assert_eq!(parse_signal("SIGKILL").unwrap(), 9);
        assert_eq!(parse_signal("term").unwrap(), 15);
        assert_eq!(parse_signal("SIGUSR1").unwrap(), 10);
        assert_eq!(parse_signal("RTMIN+1").unwrap(), libc::SIGRTMIN() + 1);
        assert_eq!(parse_signal("40").unwrap(), 40);
        assert!(parse_signal("NOPE").is_err());
        assert_eq!(parse_signal("0").unwrap(), 0);
        assert!(parse_signal("65").is_err());
    }
}
