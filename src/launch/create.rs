//! `create` as named phases, in this order, each a function of its own but the footprint, which
//! `create` holds itself; after each phase but facts, `create` passes the fault build's kill point
//! named below (`kill-at-PHASE`, [`crate::fault::Faults::die_at`]):
//!
//! 1. **facts** (`gather_facts`): what the caller gave and what the host is;
//! 2. **footprint** (in `create`, which holds what it makes until the container is handed over):
//!    the ledger, its guard, the custodian that bounds the create by its deadline; kill point
//!    `footprint`;
//! 3. **identity** (`settle_identity`): the container's block of host ids; kill point `identity`;
//! 4. **policy** (`apply_policy`): the pure hardening, the terminal, the cgroup placement, the
//!    executor; kill point `policy`;
//! 5. **filesystem** (`filesystem`): the root overlay, the writable paths, the views of binds and
//!    namespaces, the client's view; kill point `filesystem`;
//! 6. **libcontainer** (`build_container`): the private bundle and the build; kill point
//!    `libcontainer`;
//! 7. **completion** (`completion`): the init's cgroup checked, what libcontainer leaves out, the
//!    verification from outside, the record and the CPU-time watchdog (kill point `verified`), then
//!    the pid file.
//!
//! Every resource is recorded in the container's footprint before it is acquired; a failure in any
//! phase ends in the same release as `delete` ([`crate::footprint::release`]). The pure parts
//! ([`plan_identity`], [`rootfs_request`], [`libcontainer_spec`]) are unit-tested here.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use libcontainer::container::Container;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use oci_spec::runtime::{Mount, Spec};

use super::identity::{joined_mapping, plan_identity, IdentityPlan};
use super::{
    builder, complete_init, executor_for, failure_key, verify_init, write_pid_file, Guard,
};
use crate::bundle::{ContainerRecord, Layout};
use crate::cgroups::{Driver, Placement};
use crate::context::Context;
use crate::errors::{cause_suffix, error_chain};
use crate::executor::HardenedExecutor;
use crate::footprint::{Footprint, HostView};
use crate::harden::filesystem::{is_writable_path, normal_abs, WRITABLE_MARK};
use crate::harden::{harden, Hardened, HostFacts};
use crate::idmap::IdMap;
use crate::policy::keys;
use crate::rootfs::layers::Source;
use crate::rootfs::{self, CopyupRequest, StoreSize, WritableRequest};
use crate::tty::ConsoleSocket;
use crate::views::ViewDir;
use crate::{container, facts};

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

/// The error of a create that did not finish by its deadline (the container was killed and
/// removed); `run` records it.
#[derive(Debug)]
pub struct CreateTimedOut {
    /// How long the create was given.
    pub after: Duration,
    /// Whether the run's own `--timeout` (not the policy's create limit) was the bound.
    pub by_run_timeout: bool,
}

impl std::fmt::Display for CreateTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.by_run_timeout {
            write!(f, "the container was not created within --timeout ({:?}); everything it started was killed", self.after)
        } else {
            write!(f, "the container was not created within {:?} (policy key {}); everything it started was killed", self.after, keys::CREATE_TIMEOUT)
        }
    }
}

impl std::error::Error for CreateTimedOut {}

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

/// Phase 1, facts: the caller's bundle and spec, and what the host is.
struct Input {
    bundle: PathBuf,
    caller_spec: Spec,
    host: HostFacts,
}

/// Phase 1, facts: refuses an id in use and a kernel that lacks what rloxsc needs; reads the input.
fn gather_facts(ctx: &Context, opts: &CreateOptions) -> Result<Input> {
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

/// When the create must be over, from when it began, and whether the run's `--timeout` set it.
#[derive(Clone, Copy)]
struct Deadline {
    from: Instant,
    at: Instant,
    by_run_timeout: bool,
}

impl Deadline {
    /// The error of a create this deadline overtook.
    fn overtaken(self) -> CreateTimedOut {
        CreateTimedOut {
            after: self.at.saturating_duration_since(self.from),
            by_run_timeout: self.by_run_timeout,
        }
    }
}

/// Phase 2, footprint (its last step; `create` holds the ledger and the guard): the custodian.
fn start_custodian(
    ctx: &Context,
    opts: &CreateOptions,
    t0: Instant,
) -> Result<(crate::custodian::Custodian, Deadline)> {
    // the custodian bounds everything from here on (a child left at the deadline is killed) and
    // gives back what a killed foreground run holds; the create limit is the policy's (annotations
    // cannot change it), or the run's --timeout when that comes first
    let limit = t0 + Duration::from_secs(ctx.policy.create_timeout_s);
    let (at, by_run_timeout) = match opts.deadline {
        Some(d) if d < limit => (d, true),
        _ => (limit, false),
    };
    let reap = opts.die_with_runtime.then(|| crate::custodian::Reap {
        root: ctx.layout.root().to_path_buf(),
        id: opts.id.clone(),
    });
    let custodian = crate::custodian::Custodian::spawn(at, reap)?;
    let deadline = Deadline {
        from: t0,
        at,
        by_run_timeout,
    };
    Ok((custodian, deadline))
}

/// Phase 3's result: how the container gets its ids, and the block of host ids taken for it.
struct Identity {
    plan: IdentityPlan,
    alloc: Option<crate::userns::Allocation>,
}

/// Phase 3, identity: the plan (refused when it cannot be had), then the block of host ids.
fn settle_identity(
    ctx: &Context,
    id: &str,
    input: &mut Input,
    fp: &mut Footprint,
) -> Result<Identity> {
    let plan = plan_identity(&input.caller_spec, &input.host)
        .map_err(|r| anyhow!("refusing to create container {id:?}: {r}"))?;
    let alloc = take_identity(ctx, id, &plan, input, fp)?;
    Ok(Identity { plan, alloc })
}

/// The block of host ids, taken (or shared) and recorded before it is.
fn take_identity(
    ctx: &Context,
    id: &str,
    plan: &IdentityPlan,
    input: &mut Input,
    fp: &mut Footprint,
) -> Result<Option<crate::userns::Allocation>> {
    let root = ctx.layout.root();
    let a = match plan {
        IdentityPlan::Allocate => {
            let a = crate::userns::allocate(&ctx.policy.userns_pool, root, id)?;
            input.host.userns_base = Some(a.base);
            Some(a)
        }
        IdentityPlan::Join { base: Some(b), .. } => crate::userns::share(*b, root, id)?,
        _ => None,
    };
    // (the allocation file names its owner, found again without the ledger; the ledger names it too)
    fp.record(|l| l.userns = a)?;
    input.host.userns_taken = crate::userns::allocated_ranges(a.as_ref());
    Ok(a)
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

/// The container's mapping, and whether it is rloxsc's own block (whose ids the image's layers and
/// the binds are then idmapped onto).
fn mappings(
    plan: &IdentityPlan,
    alloc: Option<crate::userns::Allocation>,
    spec: &Spec,
) -> (IdMap, Option<IdMap>) {
    if let Some(a) = alloc {
        let m = IdMap::block(a.base, crate::userns::BLOCK);
        return (m.clone(), Some(m));
    }
    if let IdentityPlan::Join { uid_map, .. } = plan {
        let m = IdMap {
            uids: uid_map.clone(),
            gids: uid_map.clone(),
        };
        return (m, None);
    }
    let lines = |v: &Option<Vec<oci_spec::runtime::LinuxIdMapping>>| -> Vec<(u32, u32, u32)> {
        v.iter()
            .flatten()
            .map(|m| (m.container_id(), m.host_id(), m.size()))
            .collect()
    };
    let l = spec.linux().as_ref();
    (
        IdMap {
            uids: l.map(|l| lines(l.uid_mappings())).unwrap_or_default(),
            gids: l.map(|l| lines(l.gid_mappings())).unwrap_or_default(),
        },
        None,
    )
}

/// What the filesystem phase is asked, from the hardened spec (pure): the writable paths (with the
/// owner and mode of a directory the image lacks), the mount targets to make, the caller's
/// `tmpcopyup` tmpfs.
pub fn rootfs_request(
    spec: &Spec,
) -> (
    Vec<WritableRequest>,
    Vec<(PathBuf, bool)>,
    Vec<CopyupRequest>,
) {
    let mounts: Vec<&Mount> = spec.mounts().iter().flatten().collect();
    let user = spec
        .process()
        .as_ref()
        .map(|p| (p.user().uid(), p.user().gid()))
        .unwrap_or((0, 0));
    let cwd = spec.process().as_ref().map(|p| normal_abs(p.cwd()));
    let home = spec.process().as_ref().and_then(|p| {
        p.env()
            .iter()
            .flatten()
            .find_map(|e| e.strip_prefix("HOME="))
            .map(|h| normal_abs(Path::new(h)))
    });
    let mut writable = Vec::new();
    let mut copyups = Vec::new();
    for m in &mounts {
        let dest = normal_abs(m.destination());
        let o = m.options().clone().unwrap_or_default();
        if is_writable_path(m) {
            let shared = dest == Path::new("/tmp") || dest == Path::new("/var/tmp");
            // the process's own directories are its user's; the shared scratch is everybody's
            let own = cwd.as_ref() == Some(&dest) || home.as_ref() == Some(&dest);
            writable.push(WritableRequest {
                create_mode: if shared { 0o1777 } else { 0o755 },
                create_owner: if own && !shared { user } else { (0, 0) },
                dest,
            });
        } else if m.typ().as_deref() == Some("tmpfs") && o.iter().any(|x| x == "tmpcopyup") {
            let (data, _, _) = crate::mountapi::split_mount_options(&o);
            copyups.push(CopyupRequest { dest, data });
        }
    }
    // mount targets: every destination not below another mount (those are made inside that mount
    // by libcontainer), and the working directory; rloxsc's writable paths are made by the phase
    let dests: Vec<PathBuf> = mounts.iter().map(|m| normal_abs(m.destination())).collect();
    let mut targets = Vec::new();
    for (m, dest) in mounts.iter().zip(&dests) {
        let nested = dests.iter().any(|d| d != dest && dest.starts_with(d));
        if nested || dest == Path::new("/") || is_writable_path(m) {
            continue;
        }
        let is_bind = m.typ().as_deref() == Some("bind")
            || m.options()
                .iter()
                .flatten()
                .any(|o| o == "bind" || o == "rbind");
        let file = is_bind
            && m.source()
                .as_ref()
                .and_then(|s| std::fs::metadata(s).ok())
                .is_some_and(|md| !md.is_dir());
        targets.push((dest.clone(), file));
    }
    if let Some(c) = cwd {
        if c != Path::new("/")
            && !dests
                .iter()
                .any(|d| c.starts_with(d) && d != Path::new("/"))
        {
            targets.push((c, false));
        }
    }
    (writable, targets, copyups)
}

/// The spec libcontainer is given (pure): the hardened spec with its root at the root overlay, each
/// writable path bound from what the filesystem phase made (or dropped, when it stays read-only),
/// each `tmpcopyup` tmpfs bound from its overlay.
pub fn libcontainer_spec(hardened: &Spec, made: &rootfs::Assembled) -> Spec {
    let mut spec = hardened.clone();
    if let Some(r) = spec.root_mut().as_mut() {
        r.set_path(made.root.clone());
    }
    let mut out = Vec::new();
    for m in spec.mounts().clone().unwrap_or_default() {
        let dest = normal_abs(m.destination());
        let mut m = m;
        if is_writable_path(&m) {
            let Some(w) = made.writable.iter().find(|w| w.dest == dest) else {
                continue; // stays read-only
            };
            m.set_source(Some(w.source.clone()));
            let o: Vec<String> = m
                .options()
                .clone()
                .unwrap_or_default()
                .into_iter()
                .filter(|o| o != WRITABLE_MARK)
                .collect();
            m.set_options(Some(o));
        } else if let Some((_, src)) = made.copyups.iter().find(|(d, _)| *d == dest) {
            let o = m.options().clone().unwrap_or_default();
            let (_, _, flags) = crate::mountapi::split_mount_options(&o);
            let mut opts = vec!["bind".to_string()];
            opts.extend(flags);
            m.set_typ(Some("bind".into()));
            m.set_source(Some(src.clone()));
            m.set_options(Some(opts));
        }
        out.push(m);
    }
    spec.set_mounts(Some(out));
    spec
}

/// Phase 5, filesystem: the view directory, the root overlay and writable paths, the views of binds
/// and namespaces, the client's view. Returns the spec for libcontainer.
fn filesystem(
    ctx: &Context,
    id: &str,
    input: &Input,
    identity: &Identity,
    hardened: &Hardened,
    deadline: Instant,
    fp: &mut Footprint,
) -> Result<(Spec, rootfs::Assembled, ViewDir)> {
    let (mapping, own_mapping) = mappings(&identity.plan, identity.alloc, &hardened.spec);
    let own_mapping = own_mapping.as_ref();
    let layout = &ctx.layout;
    let rootfs_path = input.host.rootfs.clone();
    let mounts = crate::mountinfo::own()?;
    let source = crate::rootfs::layers::of(&rootfs_path, &mounts)?;
    let caller_readonly = input
        .caller_spec
        .root()
        .as_ref()
        .and_then(|r| r.readonly())
        .unwrap_or(false);
    let writes = rootfs::writes_for(&source, caller_readonly, own_mapping.is_some());
    let (mut views, token) = make_view_dir(layout, id, &mapping, fp)?;
    let (writable, targets, copyups) = rootfs_request(&hardened.spec);
    let req = rootfs::Request {
        rootfs: &rootfs_path,
        source: &source,
        own_mapping,
        mapping: &mapping,
        store: StoreSize::of_bytes(hardened.store_bytes),
        disk: crate::limits::disk::Want {
            bytes: hardened.policy.disk_bytes.default,
            required: hardened.policy.disk_required,
            deadline,
        },
        caller_readonly,
        keep_at: layout.bundle_dir(id).join("layer"),
        writable,
        targets,
        copyups,
    };
    // the client's layer is in the ledger before it is acquired
    let mut kept = None;
    if let (rootfs::Writes::Layer, Source::Overlay { upper, .. }) = (writes, &source) {
        let k = rootfs::layer::Kept::plan(upper, req.keep_at.clone(), &token)?;
        fp.record(|l| l.layer = Some(k.clone()))?;
    }
    let made = rootfs::assemble(&req, &mut views, &token, &mut kept)?;
    fp.record(|l| l.writes = Some(made.writes))?;
    report_read_only(id, &made, own_mapping.is_some());
    let lc = views_for_libcontainer(&hardened.spec, &mut views, own_mapping, &mapping, &made)?;
    if made.writes == rootfs::Writes::Layer {
        fp.record(|l| {
            l.host_view = Some(HostView {
                rootfs: rootfs_path.clone(),
                tag: made.tag.clone(),
            });
        })?;
        rootfs::hostview::attach(&rootfs_path, &made.root, &made.tag, &made.writable)?;
    }
    Ok((lc, made, views))
}

/// The container's view directory, recorded in the footprint before it is made, and its token.
fn make_view_dir(
    layout: &Layout,
    id: &str,
    mapping: &IdMap,
    fp: &mut Footprint,
) -> Result<(ViewDir, String)> {
    let views_dir = crate::views::dir_for(layout.root(), id);
    fp.record(|l| l.views = Some(views_dir.clone()))?;
    let views = ViewDir::make(
        &views_dir,
        mapping.root().0,
        &format!("{}\n{}\n", layout.root().display(), id),
    )?;
    let token = views_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok((views, token))
}

/// Logs the writable paths that stay read-only, and image layers rloxsc's block could not idmap.
fn report_read_only(id: &str, made: &rootfs::Assembled, own_mapping: bool) {
    for (p, why) in &made.skipped {
        tracing::info!(
            "container {id}: {} stays read-only: {why} (policy key {})",
            p.display(),
            keys::WRITABLE
        );
    }
    if !made.idmapped && own_mapping {
        tracing::info!(
            "container {id}: the image's layers could not be idmapped: its files show as nobody's inside (policy key {})",
            keys::USERNS
        );
    }
}

/// The spec for libcontainer: `spec` with its binds, tmpfs and namespace paths made views.
fn views_for_libcontainer(
    spec: &Spec,
    views: &mut ViewDir,
    own_mapping: Option<&IdMap>,
    mapping: &IdMap,
    made: &rootfs::Assembled,
) -> Result<Spec> {
    // binds, tmpfs and namespace paths as views (rloxsc's writable paths and the tmpcopyup tmpfs,
    // still marked as such, are left to libcontainer_spec)
    let mut prepared = spec.clone();
    let bind_mapping = own_mapping.or_else(|| {
        let one_block = |v: &[(u32, u32, u32)]| v.len() == 1 && v[0].0 == 0;
        (one_block(&mapping.uids) && one_block(&mapping.gids)).then_some(mapping)
    });
    crate::views::prepare(&mut prepared, views, bind_mapping, mapping)?;
    Ok(libcontainer_spec(&prepared, made))
}

/// Phase 6's result: the container, its record, the spec later verbs read, the process's owner.
struct Built {
    container: Container,
    record: ContainerRecord,
    host_spec: Spec,
    owner: Option<(u32, u32)>,
}

/// Phase 6, libcontainer: the private bundle, then the build (a late one is [`CreateTimedOut`]).
fn build_container(
    ctx: &Context,
    opts: &CreateOptions,
    input: &Input,
    identity: &Identity,
    (hardened, executor, console_path): (Hardened, HardenedExecutor, Option<&PathBuf>),
    (lc_spec, made): (Spec, &rootfs::Assembled),
    (custodian, deadline): (&mut crate::custodian::Custodian, Deadline),
) -> Result<Built> {
    let id = opts.id.as_str();
    let (record, host_spec, private) =
        write_private_bundle(&ctx.layout, id, input, hardened, made)?;
    let capture = private.join("create-errors.log");
    crate::logging::capture_errors_to(&capture);
    let owner = host_spec
        .process()
        .as_ref()
        .and_then(|p| super::exec::process_owner(&host_spec, p, || joined_mapping(&identity.plan)));
    if let Some(o) = owner {
        super::give_stdio_to(o);
    }
    let joins_userns = matches!(identity.plan, IdentityPlan::Join { .. });
    let stdio = output_fds(opts)?;
    let built = builder(&ctx.layout, id, executor, console_path, opts.preserve_fds)
        .map(|b| {
            b.with_parent_death_signal(opts.die_with_runtime.then_some(Signal::SIGKILL))
                // the container's user namespace belongs to its own root: the kernel then charges
                // its per-user counts (inotify, ...) to that uid at the host level, not to host root
                .with_user_namespace_owner(
                    identity
                        .alloc
                        .filter(|_| !joins_userns)
                        .map(|a| (a.root_uid(), a.root_uid())),
                )
        })
        // libcontainer's init puts them in place of fds 1 and 2 (and closes its copies)
        .map(|b| match stdio {
            Some((out, err)) => b.with_stdout(out).with_stderr(err),
            None => b,
        })
        .and_then(|b| {
            b.as_init(&private)
                .with_spec(lc_spec)
                .with_systemd(opts.cgroup_driver == Driver::Systemd)
                .with_detach(opts.detach || console_path.is_some())
                .with_oci_bundle(&input.bundle)
                .build()
        });
    let fired = custodian.created();
    let causes = crate::logging::take_captured_errors(&capture);
    if fired {
        drop(built);
        return Err(anyhow::Error::new(deadline.overtaken()));
    }
    let container = built.map_err(|e| build_error(id, &e, &causes))?;
    Ok(Built {
        container,
        record,
        host_spec,
        owner,
    })
}

/// The container's record and host spec, written to its private bundle (whose path is returned).
fn write_private_bundle(
    layout: &Layout,
    id: &str,
    input: &Input,
    hardened: Hardened,
    made: &rootfs::Assembled,
) -> Result<(ContainerRecord, Spec, PathBuf)> {
    let Hardened {
        spec,
        changes,
        policy,
        ..
    } = hardened;
    let record = ContainerRecord {
        caller_bundle: input.bundle.clone(),
        changes: changes.iter().map(|c| c.to_string()).collect(),
        policy,
        init: None,
        egress_in_force: None,
        disk: Some(made.disk.clone()),
    };
    // the private bundle holds the spec every later verb reads (host paths); libcontainer creates
    // the container from the filesystem phase's spec, handed over in memory (libcontainer patch 0009)
    let mut host_spec = spec;
    crate::views::forget_mount_idmaps(&mut host_spec);
    let private = layout.write_bundle(id, &host_spec, &record)?;
    Ok((record, host_spec, private))
}

/// Copies of the `--output` pipes `run` holds, for libcontainer's init to put in place of fds 1, 2.
fn output_fds(opts: &CreateOptions) -> Result<Option<(OwnedFd, OwnedFd)>> {
    let id = opts.id.as_str();
    let dup = |fd: std::os::fd::RawFd| {
        // SAFETY: a descriptor `run` holds open for the whole create
        unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
            .try_clone_to_owned()
            .map_err(|e| anyhow!("cannot pass the --output pipes to container {id:?}: {e}"))
    };
    opts.stdio
        .map(|(out, err)| Ok::<_, anyhow::Error>((dup(out)?, dup(err)?)))
        .transpose()
}

/// The error of a failed build: libcontainer's chain, the policy key it names, the logged cause.
fn build_error(
    id: &str,
    e: &(dyn std::error::Error + 'static),
    causes: &[String],
) -> anyhow::Error {
    let msg = error_chain(e);
    let cause = cause_suffix(&msg, causes);
    anyhow!(
        "cannot create container {id:?}: {}{}{}",
        msg,
        failure_key(&msg, &cause)
            .map(|k| format!(" (policy key {k})"))
            .unwrap_or_default(),
        cause
    )
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

/// Phase 7, completion: the init in its cgroup, [`complete`], its identity recorded, the watchdog.
fn completion(
    ctx: &Context,
    id: &str,
    built: &mut Built,
    placement: Option<&Placement>,
    host: &HostFacts,
    (made, views): (&rootfs::Assembled, &ViewDir),
    terminal: bool,
) -> Result<Pid> {
    let layout = &ctx.layout;
    let pid = built
        .container
        .pid()
        .ok_or_else(|| anyhow!("container {id:?} has no init pid after create"))?;
    if let Some(cg) = placement {
        check_placement(id, pid, cg)?;
    }
    complete(
        id,
        pid.as_raw(),
        &built.host_spec,
        &built.record,
        host,
        (made, views),
        terminal.then_some(built.owner).flatten(),
    )?;
    built.record.init = Some(
        crate::bundle::ProcessIdentity::of(pid.as_raw())
            .ok_or_else(|| anyhow!("container {id:?}: its init {pid} is gone"))?,
    );
    layout.rewrite_record(id, &built.record)?;
    // the CPU-time limit's watchdog, before the payload can run (start comes later)
    if let (Some(ms), Some(cg)) = (built.record.policy.cpu_time_ms.value(), placement) {
        crate::limits::cpu::spawn(id, pid.as_raw(), cg, ms, &layout.container_dir(id))?;
    }
    Ok(pid)
}

/// Refuses an init outside the cgroup its placement names (where every later verb looks for it).
fn check_placement(id: &str, pid: Pid, cg: &Placement) -> Result<()> {
    // every later verb finds the container's processes where its placement says they are
    let actual = crate::cgroups::ProcessCgroups::of(pid.as_raw()).and_then(|c| c.procs_dir());
    if actual.as_deref() != Some(cg.procs_dir().as_path()) {
        bail!(
            "cannot create container {id:?}: its init is in the cgroup {}, not in {} where its cgroups path {} names it (policy key {})",
            actual.map(|a| a.display().to_string()).unwrap_or_else(|| "(none)".into()),
            cg.procs_dir().display(),
            cg.path.display(),
            keys::CGROUP_PARENT
        );
    }
    Ok(())
}

/// What libcontainer leaves out, the terminal's owner, the check from outside, the views detached.
fn complete(
    id: &str,
    pid: i32,
    spec: &Spec,
    record: &ContainerRecord,
    host: &HostFacts,
    (made, views): (&rootfs::Assembled, &ViewDir),
    terminal_owner: Option<(u32, u32)>,
) -> Result<()> {
    complete_init(pid, spec)?;
    crate::network::contain(id, pid, spec, &record.policy, &record.policy.egress_allow)?;
    if let Some(o) = terminal_owner {
        super::give_terminal_to(pid, o);
    }
    verify_init(
        id,
        pid,
        spec,
        &record.policy,
        host,
        Some((
            made.writes,
            &made.disk,
            made.layer.as_ref().map(|k| k.at.join(&k.upper)),
        )),
    )?;
    // the container's mount namespace holds its own copies of the views now; a scratch store stays
    // (`update` resizes it)
    views.detach_views();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harden::testutil::*;
    use oci_spec::runtime::LinuxNamespaceType;

    #[test]
    fn a_caller_without_a_user_namespace_gets_a_block() {
        let s = careless_spec();
        assert_eq!(plan_identity(&s, &facts()).unwrap(), IdentityPlan::Allocate);
    }

    #[test]
    fn a_caller_with_its_own_mapping_keeps_it() {
        let mut s = careless_spec();
        let l = s.linux_mut().get_or_insert_with(Default::default);
        let m = vec![oci_spec::runtime::LinuxIdMappingBuilder::default()
            .container_id(0u32)
            .host_id(100000u32)
            .size(65536u32)
            .build()
            .unwrap()];
        l.set_uid_mappings(Some(m.clone()));
        l.set_gid_mappings(Some(m));
        let mut ns = l.namespaces().clone().unwrap_or_default();
        ns.push(
            oci_spec::runtime::LinuxNamespaceBuilder::default()
                .typ(LinuxNamespaceType::User)
                .build()
                .unwrap(),
        );
        l.set_namespaces(Some(ns));
        assert_eq!(plan_identity(&s, &facts()).unwrap(), IdentityPlan::Callers);
        let (mapping, own) = mappings(&IdentityPlan::Callers, None, &s);
        assert!(own.is_none());
        assert_eq!(mapping.host_uid(0), Some(100000));
    }

    fn mount(dest: &str, typ: &str, src: &str, o: &[&str]) -> Mount {
        let mut m = Mount::default();
        m.set_destination(dest.into());
        m.set_typ(Some(typ.into()));
        m.set_source(Some(src.into()));
        m.set_options(Some(o.iter().map(|s| s.to_string()).collect()));
        m
    }

    #[test]
    fn the_request_names_writable_paths_targets_and_copyups() {
        let mut s = careless_spec();
        let mut p = s.process().clone().unwrap();
        p.set_cwd("/work".into());
        let mut u = p.user().clone();
        u.set_uid(1000);
        u.set_gid(1000);
        p.set_user(u);
        s.set_process(Some(p));
        let src = crate::harden::filesystem::WRITABLE_SOURCE;
        s.set_mounts(Some(vec![
            mount("/proc", "proc", "proc", &[]),
            mount("/dev", "tmpfs", "tmpfs", &["size=64k"]),
            mount("/dev/pts", "devpts", "devpts", &[]),
            mount("/tmp", "bind", src, &["bind", WRITABLE_MARK]),
            mount("/work", "bind", src, &["bind", WRITABLE_MARK]),
            mount("/tmp/vol", "bind", "/srv/vol", &["rbind"]),
            mount("/run", "tmpfs", "tmpfs", &["size=64k", "tmpcopyup"]),
            mount("/sbin/docker-init", "bind", "/nonexistent-file", &["bind"]),
        ]));
        let (w, t, c) = rootfs_request(&s);
        assert_eq!(
            w,
            vec![
                WritableRequest {
                    dest: "/tmp".into(),
                    create_mode: 0o1777,
                    create_owner: (0, 0)
                },
                WritableRequest {
                    dest: "/work".into(),
                    create_mode: 0o755,
                    create_owner: (1000, 1000)
                },
            ]
        );
        let dests: Vec<&Path> = t.iter().map(|(d, _)| d.as_path()).collect();
        assert!(dests.contains(&Path::new("/proc")) && dests.contains(&Path::new("/dev")));
        assert!(
            !dests.contains(&Path::new("/dev/pts")),
            "made inside /dev by libcontainer"
        );
        assert!(
            !dests.contains(&Path::new("/tmp/vol")),
            "made inside /tmp's writable path"
        );
        assert!(
            !dests.contains(&Path::new("/work")),
            "a writable path is made by the phase"
        );
        assert!(dests.contains(&Path::new("/sbin/docker-init")));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].dest, PathBuf::from("/run"));
    }

    #[test]
    fn libcontainer_gets_the_overlay_and_the_made_writable_paths_only() {
        let mut s = careless_spec();
        let src = crate::harden::filesystem::WRITABLE_SOURCE;
        s.set_mounts(Some(vec![
            mount(
                "/tmp",
                "bind",
                src,
                &["bind", "nosuid", "nodev", WRITABLE_MARK],
            ),
            mount("/var/tmp", "bind", src, &["bind", WRITABLE_MARK]),
            mount(
                "/run",
                "tmpfs",
                "tmpfs",
                &["size=64k", "tmpcopyup", "nosuid"],
            ),
        ]));
        let made = rootfs::Assembled {
            root: "/v/1-root".into(),
            writes: rootfs::Writes::Scratch,
            store: Some("/v/2-store".into()),
            layer: None,
            disk: crate::limits::disk::Bound::Store { bytes: 1 << 20 },
            tag: "rloxsc-x".into(),
            idmapped: true,
            writable: vec![rootfs::Writable {
                dest: "/tmp".into(),
                source: "/v/3-w0-tmp".into(),
                host: None,
            }],
            skipped: vec![("/var/tmp".into(), "symlink".into())],
            copyups: vec![("/run".into(), "/v/4-c0".into())],
        };
        let lc = libcontainer_spec(&s, &made);
        assert_eq!(lc.root().as_ref().unwrap().path(), Path::new("/v/1-root"));
        let ms = lc.mounts().clone().unwrap();
        assert_eq!(ms.len(), 2, "/var/tmp stays read-only: {ms:?}");
        assert_eq!(ms[0].source().as_deref(), Some(Path::new("/v/3-w0-tmp")));
        assert!(!ms[0]
            .options()
            .clone()
            .unwrap()
            .iter()
            .any(|o| o == WRITABLE_MARK));
        assert_eq!(ms[1].typ().as_deref(), Some("bind"));
        assert_eq!(ms[1].source().as_deref(), Some(Path::new("/v/4-c0")));
        assert!(!ms[1]
            .options()
            .clone()
            .unwrap()
            .iter()
            .any(|o| o == "tmpcopyup"));
    }
}
