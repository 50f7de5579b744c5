//! The one launch path: how `create`, `run` and `exec` put processes into containers. The verbs in
//! [`crate::commands`] only parse what they were given and call [`create::create`] or [`exec::exec`];
//! everything a container process is started with is decided here once:
//!
//! - `create` runs as named phases ([`create`]): facts, footprint (the ledger, its guard, the
//!   custodian), identity (the block of host ids), policy (the pure hardening), filesystem
//!   ([`crate::rootfs`], [`crate::views`]), libcontainer, and completion (verification, the pid
//!   file); a failure in any of them ends in the same release as `delete`
//!   ([`crate::footprint::release`]);
//! - the executor's seccomp program comes from the container's effective policy ([`executor_for`]);
//! - one libcontainer builder chain ([`builder`]) for the init (`create`) and for a tenant (`exec`);
//! - the container is verified from outside with its effective policy before anything reports success;
//! - waiting for a process in the foreground ([`wait`]) forwards signals and enforces a wall time.

pub mod build;
pub mod completion;
pub mod create;
pub mod deadline;
pub mod exec;
pub mod filesystem;
pub mod identity;
pub mod input;
pub mod wait;

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _, Result};
use libcontainer::container::builder::ContainerBuilder;
use libcontainer::syscall::syscall::SyscallType;
use oci_spec::runtime::Spec;

use crate::bundle::Layout;
use crate::executor::HardenedExecutor;
use crate::fault::Faults;
use crate::harden::HostFacts;
use crate::policy::{keys, Policy};
use crate::verify::{self, Probe};
use crate::{fsutil, seccomp};

pub use create::{create, Created};
pub use deadline::CreateTimedOut;
pub use exec::{exec, ExecRequest, Executed};
pub use input::CreateOptions;
pub use wait::{exit_status, TerminalSession, Waiter};

/// Until disarmed, gives back everything container `id` holds when dropped (a create or start that
/// failed), through the one release `delete` uses.
pub struct Guard<'a> {
    layout: &'a Layout,
    id: String,
    armed: bool,
}

impl<'a> Guard<'a> {
    /// A guard for container `id` under `layout`.
    pub fn new(layout: &'a Layout, id: &str) -> Self {
        Guard {
            layout,
            id: id.to_string(),
            armed: true,
        }
    }

    /// The launch succeeded: leave the container in place.
    pub fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if self.armed {
            // a failed create: its own error is the one reported; what could not be given back
            // is logged by the release and left for `delete --force`
            let _left = crate::footprint::release(self.layout, &self.id);
        }
    }
}

/// The executor for a container process under `policy`: rloxsc's seccomp program for that policy
/// (the build-time one unless the policy adds syscalls). The container's own profile is libcontainer's
/// to install, for the init and (libcontainer patch 0017) for every exec'd process.
pub fn executor_for(policy: &Policy, faults: &Faults) -> Result<HardenedExecutor> {
    let filter = seccomp::for_policy(policy).with_context(|| {
        format!(
            "cannot build rloxsc's seccomp filter (policy key {})",
            keys::SECCOMP
        )
    })?;
    Ok(HardenedExecutor::new(filter, faults.executor()))
}

/// The libcontainer builder every container process is started from: id, executor, state root,
/// console socket, preserved fds, id validation. `as_init` / `as_tenant` follow at the call site.
pub fn builder(
    layout: &Layout,
    id: &str,
    executor: HardenedExecutor,
    console: Option<&PathBuf>,
    preserve_fds: i32,
) -> Result<ContainerBuilder, libcontainer::error::LibcontainerError> {
    prepare_for_clones();
    ContainerBuilder::new(id.to_string(), SyscallType::default())
        .with_executor(executor)
        .with_root_path(layout.containers())
        .map(|b| {
            b.with_console_socket(console)
                .with_preserved_fds(preserve_fds)
        })
        .and_then(|b| b.validate_id())
}

/// Does, once in this process, the work every process libcontainer clones from it would otherwise
/// repeat on its own: the CPU feature detection (`cpuid`, which traps to the hypervisor in a VM;
/// the intermediate and the init each did it on their first `memchr`) and libpathrs's private
/// procfs handle (the intermediate and the init each mounted a procfs instance of their own for
/// it). The clones inherit both; the init closes every inherited descriptor before the payload
/// runs, as before (the intermediate's handle reached it the same way).
fn prepare_for_clones() {
    #[cfg(target_arch = "x86_64")]
    let _ = std::arch::is_x86_feature_detected!("avx2");
    let _ = pathrs::procfs::ProcfsHandle::new();
}

/// Writes a pid file for a client: atomically, never through a planted symlink.
pub fn write_pid_file(path: &Path, pid: i32) -> Result<()> {
    fsutil::replace_file(path, pid.to_string().as_bytes(), 0o644, "pid file")
}

/// Verifies container `id` (init `pid`) against its hardened spec and effective policy, with an error
/// listing every failed property.
pub fn verify_init(
    id: &str,
    pid: i32,
    spec: &Spec,
    policy: &Policy,
    host: &HostFacts,
    made: Option<(
        crate::rootfs::Writes,
        &crate::limits::disk::Bound,
        Option<PathBuf>,
    )>,
) -> Result<()> {
    let mut probe = Probe::for_spec(spec, host);
    probe.writes = made.as_ref().map(|m| m.0);
    probe.disk = made.map(|(_, bound, at)| (bound.clone(), at));
    probe.egress_filter = policy.network == crate::policy::NetworkMode::InboundOnly;
    let obs = verify::observe(pid, &probe);
    let failures = verify::judge(&obs, spec, policy, host);
    if failures.is_empty() {
        tracing::debug!("container {id}: containment verified");
        return Ok(());
    }
    let list: Vec<String> = failures.iter().map(|f| f.to_string()).collect();
    bail!(
        "container {id:?} failed its containment check and was removed: {}",
        list.join("; ")
    )
}

/// What libcontainer leaves out, done from outside once the init exists: the device rules it adds
/// behind the spec's back taken back, v2 swap really off, loopback up in a new network namespace.
fn complete_init(pid: i32, cgroups: &crate::cgroups::ProcessCgroups, spec: &Spec) -> Result<()> {
    crate::cgroups::deny_v1_default_devices(cgroups)?;
    crate::cgroups::enforce_v2_no_swap(cgroups, spec)?;
    crate::cgroups::deny_v2_default_devices(cgroups)?;
    let new_netns = crate::network::has_own_network_namespace(spec);
    if new_netns {
        crate::network::bring_loopback_up(pid).with_context(|| {
            format!(
                "cannot bring up loopback in the container's network namespace (policy key {})",
                keys::NETWORK_MODE
            )
        })?;
    }
    Ok(())
}

/// Gives the container's process the stdio it inherits from rloxsc, as runc does: a pipe or a
/// socket the caller passed belongs to host root, which the container's user namespace does not map,
/// so the process could not reopen its own `/dev/stdout` (nginx and httpd log there). Each of fds
/// 0-2 that is a pipe or a socket becomes the user's (`owner`'s host uid; the group is left, as
/// runc leaves it). Terminals and files are the caller's and are left alone.
pub fn give_stdio_to(owner: (u32, u32)) {
    for fd in 0..3 {
        let Ok(st) = nix::sys::stat::fstat(fd) else {
            continue;
        };
        let kind = st.st_mode & libc::S_IFMT;
        if kind != libc::S_IFIFO && kind != libc::S_IFSOCK {
            continue;
        }
        if st.st_uid == owner.0 {
            continue;
        }
        // SAFETY: fchown of one of our own stdio fds (the group unchanged)
        if unsafe { libc::fchown(fd, owner.0, u32::MAX) } != 0 {
            tracing::debug!(
                "cannot give fd {fd} to the container's user: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// Gives the terminal of process `pid` (its fd 0, a pty of the container's devpts) to `owner`'s
/// uid, as runc gives the console to the process's user; its group stays the one devpts gave it
/// (the spec's `gid=5`, the tty group: runc's tty.bats "tty owner" checks it).
pub fn give_terminal_to(pid: i32, owner: (u32, u32)) {
    let p = PathBuf::from(format!("/proc/{pid}/fd/0"));
    if let Ok(md) = std::fs::metadata(&p) {
        use std::os::unix::fs::FileTypeExt;
        if md.file_type().is_char_device() {
            if let Err(e) = std::os::unix::fs::chown(&p, Some(owner.0), None) {
                tracing::debug!("cannot give the terminal to the container's user: {e}");
            }
        }
    }
}

/// The policy key behind a libcontainer failure, where one tells: libcgroups' "cgroup X is required
/// ... but is not supported by this system" (the host lacks a controller a limit needs), or sysfs
/// refused (EPERM) because the container's user namespace does not own its network namespace.
fn failure_key(msg: &str, cause: &str) -> Option<&'static str> {
    let controller = [
        ("pids", keys::PIDS),
        ("memory", keys::MEMORY),
        ("devices", keys::DEVICES),
    ]
    .into_iter()
    .find(|(c, _)| msg.contains(&format!("cgroup {c} is required")))
    .map(|(_, k)| k);
    controller.or_else(|| {
        (cause.contains("\"sysfs\"") && cause.contains("EPERM")).then_some(keys::NETWORK_MODE)
    })
}

/// Makes the files a client wrote into container `id`'s layer from the host the container's own
/// ([`crate::rootfs::adopt`]), before a process of the container starts (`start`, `exec`).
pub fn adopt_client_writes(layout: &Layout, id: &str) -> Result<()> {
    let Ok(ledger) = crate::footprint::ledger_of(layout, id) else {
        return Ok(());
    };
    let (Some(view), Some(kept), Some(alloc)) = (&ledger.host_view, &ledger.layer, &ledger.userns)
    else {
        return Ok(()); // the client's own layer with the caller's mapping, or scratch
    };
    if crate::rootfs::hostview::view_on(&view.rootfs).as_deref() != Some(view.tag.as_str()) {
        return Ok(()); // the view is gone (the container is being deleted)
    }
    let mapping = crate::idmap::IdMap::block(alloc.base, crate::policy::BLOCK);
    let what =
        |e: anyhow::Error| anyhow!("cannot give the client's files to container {id:?}: {e:#}");
    let upper = kept.open_upper().map_err(what)?;
    let top = fsutil::openat2(
        libc::AT_FDCWD,
        &view.rootfs,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        0,
    )
    .map_err(|e| what(e.into()))?;
    let n = crate::rootfs::adopt::adopt_through(&upper, &top, &mapping)
        .map_err(what)?
        .entries;
    if n > 0 {
        tracing::debug!("container {id}: {n} entries a client wrote made the container's");
    }
    Ok(())
}
