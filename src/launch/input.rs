//! Phase 1 of `create`, **facts** (`gather_facts`): what `create` is asked ([`CreateOptions`]) and
//! what it reads before it acquires anything: the caller's bundle and spec, and the facts of the host
//! they are read against.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use oci_spec::runtime::Spec;

use crate::cgroups::Driver;
use crate::context::Context;
use crate::facts;
use crate::harden::HostFacts;
use crate::policy::keys;

/// What `create` (and `run`'s create half) is asked to do.
#[derive(Debug, Default)]
pub struct CreateOptions {
    /// Container id.
    pub id: String,
    /// The caller's bundle directory.
    pub bundle: PathBuf,
    /// Where to write the init's pid once the container is verified.
    pub pid_file: Option<PathBuf>,
    /// The console socket to hand a pty master to (when process.terminal is set).
    pub console_socket: Option<PathBuf>,
    /// Extra file descriptors (from 3 up) passed to the container.
    pub preserve_fds: i32,
    /// Whether the caller detaches (create, run --detach) or waits for the container (run).
    pub detach: bool,
    /// Whether rloxsc itself should provide the terminal when process.terminal is set and no
    /// --console-socket was given (a foreground `run`).
    pub allocate_terminal: bool,
    /// Whether the container's processes die with this one (a foreground `run`: nothing it created
    /// outlives it, and nothing keeps its caller's stdio open).
    pub die_with_runtime: bool,
    /// When the create must be over (the run's `--timeout` from its first step); the policy's
    /// `limits.create_timeout` bounds it in any case.
    pub deadline: Option<Instant>,
    /// The cgroup driver the caller asked for (`--systemd-cgroup`: systemd).
    pub cgroup_driver: crate::cgroups::Driver,
    /// `--cpu-time` and `--file-size` (they only tighten the policy).
    pub limits: crate::limits::Requested,
    /// The container's stdout and stderr when `run --output` holds them (pipes; else the caller's).
    pub stdio: Option<(std::os::fd::RawFd, std::os::fd::RawFd)>,
}

/// Phase 1, facts: the caller's bundle and spec, and what the host is.
pub(super) struct Input {
    pub(super) bundle: PathBuf,
    pub(super) caller_spec: Spec,
    pub(super) host: HostFacts,
}

/// Phase 1, facts: refuses an id in use and a kernel that lacks what rloxsc needs; reads the input.
pub(super) fn gather_facts(ctx: &Context, opts: &CreateOptions) -> Result<Input> {
    let layout = &ctx.layout;
    let id = opts.id.as_str();
    if layout.container_dir(id).exists() || layout.bundle_dir(id).exists() {
        bail!("container with id {id:?} already exists");
    }
    if let Some(missing) = crate::kernel_features::missing_required() {
        bail!("cannot create container {id:?}: {}", missing.refusal());
    }
    let mut input = read_input(ctx, opts)?;
    if opts.cgroup_driver == Driver::Systemd {
        if let Some(why) = crate::cgroups::placement::systemd_driver_unavailable() {
            bail!(
                "cannot create container {id:?}: --systemd-cgroup asks for the systemd cgroup driver, but {why}; use the cgroupfs driver (policy key {})",
                keys::CGROUP_PARENT
            );
        }
    }
    input.host.cgroup_driver = opts.cgroup_driver;
    Ok(input)
}

/// The caller's bundle (made absolute) and spec, and the facts of the host they are read against.
fn read_input(ctx: &Context, opts: &CreateOptions) -> Result<Input> {
    let bundle = std::path::absolute(&opts.bundle).context("cannot resolve the bundle path")?;
    let caller_spec = crate::bundle::load_caller_spec(&bundle)?;
    let host = facts::gather(
        &caller_spec,
        &bundle,
        ctx.layout.root(),
        &ctx.policy.writable,
    )?;
    Ok(Input {
        bundle,
        caller_spec,
        host,
    })
}
