//! `create` as named phases, in this order, each a function of its own but the footprint, which
//! `create` holds itself; after each phase but facts, `create` passes the fault build's kill point
//! named below (`kill-at-PHASE`, [`crate::fault::Faults::die_at`]):
//!
//! 1. **facts** (`gather_facts`, in [`super::input`]): what the caller gave and what the host is;
//! 2. **footprint** (in `create`, which holds what it makes until the container is handed over):
//!    the ledger, its guard, the custodian that bounds the create by its deadline
//!    (`start_custodian`, in [`super::deadline`]); kill point `footprint`;
//! 3. **identity** (`settle_identity`, in [`super::identity`]): the container's block of host ids;
//!    kill point `identity`;
//! 4. **policy** (`apply_policy`, here): the pure hardening, the terminal, the cgroup placement, the
//!    executor; kill point `policy`;
//! 5. **filesystem** (`filesystem`, in [`super::filesystem`]): the root overlay, the writable paths,
//!    the views of binds and namespaces, the client's view; kill point `filesystem`;
//! 6. **libcontainer** (`build_container`, in [`super::build`]): the private bundle and the build;
//!    kill point `libcontainer`;
//! 7. **completion** (`completion`, in [`super::completion`]): the init's cgroup checked, what
//!    libcontainer leaves out, the verification from outside, the record and the CPU-time watchdog
//!    (kill point `verified`), then the pid file (here).
//!
//! Every resource is recorded in the container's footprint before it is acquired; a failure in any
//! phase ends in the same release as `delete` ([`crate::footprint::release`]). The pure parts
//! ([`super::identity::plan_identity`], [`super::filesystem::rootfs_request`],
//! [`super::filesystem::libcontainer_spec`]) are unit-tested in their modules.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use libcontainer::container::Container;
use nix::unistd::Pid;
use oci_spec::runtime::Spec;

use super::build::build_container;
use super::completion::completion;
use super::deadline::start_custodian;
use super::filesystem::filesystem;
use super::identity::settle_identity;
use super::input::{gather_facts, CreateOptions, Input};
use super::{executor_for, write_pid_file, Guard};
use crate::bundle::ContainerRecord;
use crate::cgroups::Placement;
use crate::container;
use crate::context::Context;
use crate::executor::HardenedExecutor;
use crate::footprint::Footprint;
use crate::harden::{harden, Hardened};
use crate::policy::keys;
use crate::tty::ConsoleSocket;

/// A created container: its init waits for `start`, contained and verified.
pub struct Created<'a> {
    /// libcontainer's handle.
    pub container: Container,
    /// rloxsc's own console socket, when rloxsc provides the terminal.
    pub console: Option<ConsoleSocket>,
    /// The hardened spec.
    pub spec: Spec,
    /// What rloxsc stored with the container.
    pub record: ContainerRecord,
    /// The init's pid.
    pub pid: Pid,
    guard: Guard<'a>,
    custodian: crate::custodian::Custodian,
}

impl<'a> Created<'a> {
    /// Keeps the container (the caller owns it now).
    pub fn keep(self) -> (Container, Option<ConsoleSocket>, Pid) {
        self.guard.disarm();
        (self.container, self.console, self.pid)
    }

    /// Keeps the container but returns the guard, for a caller (`run`) that still has steps to do
    /// before the container is safely its own, and the custodian, which removes the container if
    /// the caller is killed before it could (end it with [`crate::custodian::Custodian::finish`]).
    pub fn split(
        self,
    ) -> (
        Container,
        Option<ConsoleSocket>,
        Pid,
        Guard<'a>,
        crate::custodian::Custodian,
    ) {
        (
            self.container,
            self.console,
            self.pid,
            self.guard,
            self.custodian,
        )
    }
}

/// The container's terminal: whether process.terminal is set, rloxsc's own socket, libcontainer's.
struct Console {
    terminal: bool,
    own: Option<ConsoleSocket>,
    path: Option<PathBuf>,
}

/// Phase 4's result: the hardened spec and policy, its terminal, cgroup placement and executor.
struct Policied {
    hardened: Hardened,
    console: Console,
    placement: Option<Placement>,
    executor: HardenedExecutor,
}

/// Phase 4, policy: the hardening, the terminal, the cgroup placement (recorded), the executor.
fn apply_policy(
    ctx: &Context,
    opts: &CreateOptions,
    input: &Input,
    fp: &mut Footprint,
) -> Result<Policied> {
    let hardened = harden_spec(ctx, opts, input)?;
    let console = console_of(ctx, opts, &hardened.spec)?;
    let placement = place(opts, &hardened.spec, input, fp)?;
    let executor = executor_for(&hardened.policy, &ctx.faults)?;
    Ok(Policied {
        hardened,
        console,
        placement,
        executor,
    })
}

/// The hardened spec (pure), its changes logged, then the fault build's sabotage.
fn harden_spec(ctx: &Context, opts: &CreateOptions, input: &Input) -> Result<Hardened> {
    let id = opts.id.as_str();
    // the caller's --cpu-time and --file-size tighten the policy first, as annotations do
    let (base, flagged) = crate::limits::rules::with_flags(&ctx.policy, &opts.limits);
    let mut hardened = harden(&input.caller_spec, id, &base, &input.host)
        .map_err(|r| anyhow!("refusing to create container {id:?}: {r}"))?;
    let mut flag_changes = crate::harden::Changes::default();
    for (key, what) in flagged {
        flag_changes.push(key, what);
    }
    hardened.changes.splice(0..0, flag_changes.0);
    for c in &hardened.changes {
        tracing::info!("container {id}: {c}");
    }
    ctx.faults.sabotage(&mut hardened.spec);
    Ok(hardened)
}

/// The terminal of `spec`: refused with `--output`, the caller's socket checked, or rloxsc's own.
fn console_of(ctx: &Context, opts: &CreateOptions, spec: &Spec) -> Result<Console> {
    let id = opts.id.as_str();
    let terminal = spec
        .process()
        .as_ref()
        .and_then(|p| p.terminal())
        .unwrap_or(false);
    if terminal && opts.stdio.is_some() {
        bail!("cannot create container {id:?}: --output counts what the container writes to its stdout and stderr, but process.terminal is set (a terminal has no separate stdout and stderr): run it without a terminal");
    }
    if let Some(cs) = &opts.console_socket {
        crate::fsutil::refuse_foreign_symlinks(cs, "console socket")?;
    }
    let (own, path) = crate::tty::console_for(
        terminal,
        opts.console_socket.as_ref(),
        opts.allocate_terminal,
        &ctx.layout.root().join(format!("console-{id}.sock")),
        "process.terminal is set but no --console-socket was given: a detached container needs --console-socket (or set process.terminal to false)",
    )?;
    Ok(Console {
        terminal,
        own,
        path,
    })
}

/// The cgroup placement of `spec`: refused when occupied or frozen, then recorded in the footprint.
fn place(
    opts: &CreateOptions,
    spec: &Spec,
    input: &Input,
    fp: &mut Footprint,
) -> Result<Option<Placement>> {
    let id = opts.id.as_str();
    let cgroups_path = spec.linux().as_ref().and_then(|l| l.cgroups_path().clone());
    let placement = cgroups_path.clone().map(|path| Placement {
        path,
        driver: opts.cgroup_driver,
    });
    if let Some(cg) = &placement {
        if let Some(why) = cg.occupied(&input.host.cgroup_v1_hierarchies) {
            bail!(
                "refusing to create container {id:?}: {why}; rloxsc only runs a container in a cgroup of its own, since its end kills and removes what the cgroup holds (policy key {})",
                keys::CGROUP_PARENT
            );
        }
        if let Some(why) = cg.frozen(&input.host.cgroup_v1_hierarchies) {
            bail!(
                "cannot create container {id:?}: container's cgroup unexpectedly frozen ({why}); thaw it first"
            );
        }
    }
    fp.record(|l| {
        l.cgroups_path = cgroups_path.clone();
        l.cgroup_driver = opts.cgroup_driver;
    })?;
    Ok(placement)
}

/// Creates container `opts.id`: the phases of the module documentation, with their kill points. On
/// failure nothing is left behind: the guard gives back what the footprint records.
pub fn create<'a>(ctx: &'a Context, opts: &CreateOptions) -> Result<Created<'a>> {
    container::validate_id(&opts.id)?;
    let t0 = Instant::now();
    let layout = &ctx.layout;
    let id = opts.id.as_str();
    let mut input = gather_facts(ctx, opts)?;
    // footprint, held here: the ledger, its guard and the custodian (these two go to `Created`)
    layout.ensure()?;
    let mut fp = Footprint::begin(layout, id)?;
    let guard = Guard::new(layout, id);
    let (mut custodian, deadline) = start_custodian(ctx, opts, t0)?;
    ctx.faults.die_at("footprint");
    let identity = settle_identity(ctx, id, &mut input, &mut fp)?;
    ctx.faults.die_at("identity");
    let Policied {
        hardened,
        console,
        placement,
        executor,
    } = apply_policy(ctx, opts, &input, &mut fp)?;
    tracing::debug!("create {id}: hardened at {:?}", t0.elapsed());
    ctx.faults.die_at("policy");
    let (lc_spec, made, views) =
        filesystem(ctx, id, &input, &identity, &hardened, deadline.at, &mut fp)?;
    ctx.faults.die_at("filesystem");
    tracing::debug!(
        "create {id}: filesystem ready (layers {}) at {:?}",
        if made.idmapped {
            "idmapped"
        } else {
            "not idmapped"
        },
        t0.elapsed()
    );
    let mut built = build_container(
        ctx,
        opts,
        &input,
        &identity,
        (hardened, executor, console.path.as_ref()),
        (lc_spec, &made),
        (&mut custodian, deadline),
    )?;
    tracing::debug!("create {id}: libcontainer created it at {:?}", t0.elapsed());
    ctx.faults.die_at("libcontainer");
    let pid = completion(
        ctx,
        id,
        &mut built,
        placement.as_ref(),
        &input.host,
        (&made, &views),
        console.terminal,
    )?;
    ctx.faults.die_at("verified");
    if let Some(pid_file) = &opts.pid_file {
        write_pid_file(pid_file, pid.as_raw())?;
    }
    tracing::debug!("create {id}: verified at {:?}", t0.elapsed());
    crate::userns::reap_holders();
    Ok(Created {
        container: built.container,
        console: console.own,
        spec: built.host_spec,
        record: built.record,
        pid,
        guard,
        custodian,
    })
}
