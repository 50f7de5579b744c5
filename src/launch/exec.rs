//! `exec`'s half of the launch path: a new process in a running container, with exactly the
//! container's containment (its effective policy's executor, its own seccomp profile, its namespaces
//! and cgroup), verified from outside before the call returns.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use oci_spec::runtime::{Process, Spec};

use super::{builder, executor_for, write_pid_file};
use crate::bundle::ContainerRecord;
use crate::bundle::Layout;
use crate::errors::error_chain;
use crate::fault::Faults;
use crate::policy::{keys, Policy};
use crate::tty::ConsoleSocket;
use crate::{facts, fsutil, verify};

/// What `exec` is asked to start: an already hardened process (see [`crate::harden::harden_process`])
/// and how to attach to it.
#[derive(Debug)]
pub struct ExecRequest<'p> {
    /// Container id.
    pub id: &'p str,
    /// The hardened process.
    pub process: &'p Process,
    /// Return once the process runs.
    pub detach: bool,
    /// The caller's console socket.
    pub console_socket: Option<&'p PathBuf>,
    /// Extra fds passed from 3 up.
    pub preserve_fds: i32,
    /// Exec even into a paused container.
    pub ignore_paused: bool,
    /// Sub-cgroup of the container's cgroup to run in.
    pub sub_cgroup: Option<String>,
    /// Where to write the process's pid.
    pub pid_file: Option<&'p PathBuf>,
}

/// A process started in a running container, verified.
pub struct Executed {
    /// Its pid.
    pub pid: Pid,
    /// rloxsc's own console socket, when rloxsc provides the terminal.
    pub console: Option<ConsoleSocket>,
}

/// Starts `req.process` in running container `req.id` with the container's containment: the
/// executor from the container's effective policy (and the container's own seccomp profile), the
/// container's namespaces and cgroup, verified from outside before returning.
pub fn exec(
    layout: &Layout,
    faults: &Faults,
    req: &ExecRequest,
    record: &ContainerRecord,
    spec: &Spec,
    init_pid: i32,
) -> Result<Executed> {
    let terminal = req.process.terminal().unwrap_or(false);
    if let Some(cs) = req.console_socket {
        fsutil::refuse_foreign_symlinks(cs, "console socket")?;
    }
    let (own_console, console_path) = crate::tty::console_for(
        terminal,
        req.console_socket,
        !req.detach,
        &layout
            .bundle_dir(req.id)
            .join(format!("console-{}.sock", std::process::id())),
        "a terminal was asked for a detached process but no --console-socket was given",
    )?;
    let process_file = layout.bundle_dir(req.id).join(format!(
        "exec-{}-{:016x}.json",
        std::process::id(),
        fsutil::random_u64()
    ));
    fsutil::write_new(&process_file, &serde_json::to_vec(req.process)?, 0o600)?;
    let _remove = RemoveOnDrop(process_file.clone());
    // what a client copied in since the last process started is the container's now
    super::adopt_client_writes(layout, req.id)?;
    check_cwd(req.id, init_pid, req.process.cwd())?;
    if let Some(owner) = process_owner(spec, req.process, || {
        crate::idmap::IdMap::of_process(init_pid)
    }) {
        super::give_stdio_to(owner);
    }

    let executor = executor_for(&record.policy, faults)?;
    let pid = builder(
        layout,
        req.id,
        executor,
        console_path.as_ref(),
        req.preserve_fds,
    )
    .and_then(|b| {
        b.as_tenant()
            .with_detach(req.detach || console_path.is_some())
            .with_process(Some(&process_file))
            .with_ignore_paused(req.ignore_paused)
            .with_sub_cgroup(req.sub_cgroup.clone())
            .build()
    })
    .map_err(|e| {
        // the container ended while its exec was being set up (libcontainer then fails wherever it
        // was, procfs with "please report this procfs bug"): runc's words for that
        if crate::container::process_ended(init_pid) {
            return anyhow!(
                "cannot exec in container {:?}: cannot exec in a stopped container",
                req.id
            );
        }
        anyhow!(
            "cannot exec in container {:?}: {}",
            req.id,
            // libcontainer words every exec failure as "failed to create container"
            error_chain(&e).replace("failed to create container: ", "")
        )
    })?;
    verify_exec(req.id, &record.policy, init_pid, pid.as_raw())?;
    if terminal {
        if let Some(owner) = process_owner(spec, req.process, || {
            crate::idmap::IdMap::of_process(init_pid)
        }) {
            super::give_terminal_to(pid.as_raw(), owner);
        }
    }
    if let Some(pf) = req.pid_file {
        write_pid_file(pf, pid.as_raw())?;
    }
    Ok(Executed {
        pid,
        console: own_console,
    })
}

/// Fails with the cause when the process's working directory `cwd` is not a directory inside the
/// container (its init `init_pid`), resolved there as the container resolves it (a symlink the
/// container put there followed inside its root): libcontainer's init reported only "failed to
/// unix syscall" and exit 255. The init resolves it again; this gives the message, not the safety.
fn check_cwd(id: &str, init_pid: i32, cwd: &Path) -> Result<()> {
    let root = fsutil::openat2(
        libc::AT_FDCWD,
        &PathBuf::from(format!("/proc/{init_pid}/root")),
        libc::O_PATH | libc::O_DIRECTORY,
        0,
    );
    let Ok(root) = root else {
        return Ok(()); // the init is gone: libcontainer says so
    };
    let rel: PathBuf = cwd
        .components()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .collect();
    if rel.as_os_str().is_empty() {
        return Ok(());
    }
    use std::os::fd::AsRawFd;
    match fsutil::openat2(
        root.as_raw_fd(),
        &rel,
        libc::O_PATH | libc::O_DIRECTORY,
        fsutil::RESOLVE_IN_ROOT | fsutil::RESOLVE_NO_MAGICLINKS,
    ) {
        Ok(_) => Ok(()),
        Err(e) => bail!(
            "cannot exec in container {id:?}: chdir to cwd ({}) set in the process spec failed: {}",
            cwd.display(),
            std::io::Error::from_raw_os_error(e.raw_os_error().unwrap_or(libc::EIO))
                .to_string()
                .split(" (os error")
                .next()
                .unwrap_or_default()
                .to_lowercase()
        ),
    }
}

/// Checks an exec'd process from outside while it lives: no_new_privs, seccomp filter mode, clamped
/// capabilities, and the init's namespaces. (Inside, the executor checked seccomp before execve.)
fn verify_exec(id: &str, policy: &Policy, init_pid: i32, pid: i32) -> Result<()> {
    let Ok(status) = verify::observe_status(pid) else {
        return Ok(()); // already gone: the in-process check before its execve is what held
    };
    let mut failures = verify::check_status(&status, policy);
    for ns in ["user", "pid", "mnt", "net", "ipc", "uts", "cgroup"] {
        let a = facts::ns_id(Path::new(&format!("/proc/{init_pid}/ns/{ns}")));
        let b = facts::ns_id(Path::new(&format!("/proc/{pid}/ns/{ns}")));
        if a.is_some() && b.is_some() && a != b {
            failures.push(verify::Failure {
                key: keys::NAMESPACES,
                what: format!("the exec'd process is not in the container's {ns} namespace"),
            });
        }
    }
    // a process that has exited between the reads cannot be judged from its leftovers
    if failures.is_empty() || !Path::new(&format!("/proc/{pid}")).exists() {
        return Ok(());
    }
    let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
    let list: Vec<String> = failures.iter().map(|f| f.to_string()).collect();
    bail!(
        "exec in container {id:?} failed its containment check and was killed: {}",
        list.join("; ")
    )
}

struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The host uid and gid of `process`'s user in the container of `spec`: through the spec's mapping,
/// or, when the spec has none because the container joined a user namespace by path (a pod's
/// containers join their sandbox's), through that namespace's mapping as `joined` gives it (the
/// running init's for exec; the one read with the host's facts at create, never again through the
/// pid the path names, which may have been reused). `None` when neither maps the user.
pub fn process_owner(
    spec: &Spec,
    process: &Process,
    joined: impl FnOnce() -> Option<crate::idmap::IdMap>,
) -> Option<(u32, u32)> {
    let l = spec.linux().as_ref()?;
    let lines = |maps: &Option<Vec<oci_spec::runtime::LinuxIdMapping>>| -> Vec<(u32, u32, u32)> {
        maps.iter()
            .flatten()
            .map(|m| (m.container_id(), m.host_id(), m.size()))
            .collect()
    };
    let mut map = crate::idmap::IdMap {
        uids: lines(l.uid_mappings()),
        gids: lines(l.gid_mappings()),
    };
    if map.uids.is_empty() {
        // a joined user namespace: its mapping, read by the caller
        map = joined()?;
    }
    Some((
        map.host_uid(process.user().uid())?,
        map.host_gid(process.user().gid())?,
    ))
}
