//! The one launch path: how `create`, `run` and `exec` put processes into containers. The verbs in
//! [`crate::commands`] only parse what they were given and call [`create`] or [`exec`]; everything a
//! container process is started with is decided here once:
//!
//! - the caller's spec is hardened ([`crate::harden::harden`]) into a spec and an *effective policy*,
//!   both stored in the container's private bundle ([`crate::bundle::ContainerRecord`]);
//! - the executor's seccomp program comes from that effective policy ([`executor_for`]): the
//!   precompiled allowlist, or a fresh compilation only when the policy adds syscalls;
//! - one libcontainer builder chain ([`builder`]) for the init (`create`) and for a tenant (`exec`);
//! - the container is verified from outside with its effective policy before anything reports success;
//! - a [`Guard`] kills, deletes and cleans up on every error path until it is disarmed;
//! - pid files are written without following a planted symlink ([`write_pid_file`]);
//! - waiting for a process forwards signals and enforces a wall-time limit ([`Waiter`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use libcontainer::container::builder::ContainerBuilder;
use libcontainer::container::Container;
use libcontainer::syscall::syscall::SyscallType;
use nix::errno::Errno;
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;
use oci_spec::runtime::{Process, Spec};

use crate::bundle::ContainerRecord;
use crate::commands::Context;
use crate::errors::{cause_suffix, error_chain};
use crate::executor::HardenedExecutor;
use crate::fault::Faults;
use crate::harden::{harden, HostFacts};
use crate::policy::{keys, Policy};
use crate::record::Ending;
use crate::tty::ConsoleSocket;
use crate::verify::{self, Probe};
use crate::{container, facts, fsutil, seccomp};

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

/// Removes what a launch of container `id` created, unless disarmed: its processes (SIGKILL), its
/// cgroups, libcontainer's state and rloxsc's private bundle.
pub struct Guard<'a> {
    ctx: &'a Context,
    id: String,
    armed: bool,
    userns: Option<crate::userns::Allocation>,
    views: Option<PathBuf>,
}

impl<'a> Guard<'a> {
    /// A guard for container `id`.
    pub fn new(ctx: &'a Context, id: &str) -> Self {
        Guard {
            ctx,
            id: id.to_string(),
            armed: true,
            userns: None,
            views: None,
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
            remove_container(self.ctx, &self.id);
            if let Some(v) = self.views.take() {
                crate::views::ViewDir::remove(&v);
            }
            if let Some(a) = self.userns.take() {
                crate::userns::free(&a, self.ctx.layout.root(), &self.id);
            }
        }
    }
}

/// Kills every process of container `id`, then removes its cgroups, libcontainer's state and rloxsc's
/// private bundle. Best effort: used on error paths, where the first error is what gets reported.
pub fn remove_container(ctx: &Context, id: &str) {
    release_host_resources(ctx, id);
    let dir = ctx.layout.container_dir(id);
    if dir.exists() {
        if let Ok(mut c) = Container::load(dir.clone()) {
            let _ = c.kill(Signal::SIGKILL, true);
            let _ = c.delete(true);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    let _ = ctx.layout.remove_bundle(id);
}

/// Gives back what rloxsc holds on the host for container `id` beyond its state and cgroups: its
/// block of host ids and its view directory. Both are found without the record too (a create
/// killed before it wrote one): the view directory by its name, the block by its owner file.
pub fn release_host_resources(ctx: &Context, id: &str) {
    let views = crate::views::dir_for(ctx.layout.root(), id);
    if let Some(token) = views.file_name() {
        crate::writable::detach_views(token);
    }
    crate::views::ViewDir::remove(&views);
    match ctx.layout.read_record(id) {
        Ok(rec) => {
            if let Some(a) = &rec.userns {
                crate::userns::free(a, ctx.layout.root(), id);
            }
        }
        Err(_) => crate::userns::free_owned_by(ctx.layout.root(), id),
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
    ctx: &Context,
    id: &str,
    executor: HardenedExecutor,
    console: Option<&PathBuf>,
    preserve_fds: i32,
) -> Result<ContainerBuilder, libcontainer::error::LibcontainerError> {
    prepare_for_clones();
    ContainerBuilder::new(id.to_string(), SyscallType::default())
        .with_executor(executor)
        .with_root_path(ctx.layout.containers())
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

/// Creates container `opts.id`: hardens the caller's spec, writes the private bundle, creates the
/// container through libcontainer, does what libcontainer leaves out, and verifies the containment
/// from outside. On failure nothing is left behind.
pub fn create<'a>(ctx: &'a Context, opts: &CreateOptions) -> Result<Created<'a>> {
    container::validate_id(&opts.id)?;
    let t0 = Instant::now();
    let layout = &ctx.layout;
    if layout.container_dir(&opts.id).exists() || layout.bundle_dir(&opts.id).exists() {
        bail!("container with id {:?} already exists", opts.id);
    }
    let bundle = std::path::absolute(&opts.bundle).context("cannot resolve the bundle path")?;
    let caller_spec = crate::bundle::load_caller_spec(&bundle)?;
    layout.ensure()?;
    let mut host = facts::gather(&caller_spec, &bundle, layout.root(), &ctx.policy.writable)?;
    let mut guard = Guard::new(ctx, &opts.id);
    // the container's own block of host ids, unless the caller brings a user namespace or the
    // container joins one (a pod's container joins the sandbox's, and shares its block)
    let joins = crate::harden::namespaces::user_namespace_to_join(&caller_spec, &host)
        .map_err(|r| anyhow!("refusing to create container {:?}: {r}", opts.id))?
        .cloned();
    let joins_userns = joins.is_some();
    // the host uid of the container's root in a user namespace it joins
    let mut joined_root = None;
    if let Some(owner) = joins {
        let base = owner
            .uid_map
            .iter()
            .find(|(inside, _, _)| *inside == 0)
            .map(|m| m.1);
        joined_root = base.and_then(|b| u32::try_from(b).ok());
        if let Some(base) = joined_root {
            guard.userns = crate::userns::share(base, layout.root(), &opts.id)?;
        }
    } else if !crate::harden::namespaces::brings_own_user_namespace(&caller_spec) {
        let a = crate::userns::allocate(&ctx.policy.userns_pool, layout.root(), &opts.id)?;
        host.userns_base = Some(a.base);
        guard.userns = Some(a);
    }
    host.userns_taken = crate::userns::allocated_ranges(guard.userns.as_ref());
    let hardened = harden(&caller_spec, &opts.id, &ctx.policy, &host)
        .map_err(|r| anyhow!("refusing to create container {:?}: {r}", opts.id))?;
    for c in &hardened.changes {
        tracing::info!("container {}: {c}", opts.id);
    }
    let policy = hardened.policy;
    let mut spec = hardened.spec;
    ctx.faults.sabotage(&mut spec);
    if let Some(p) = spec.process() {
        facts::ensure_cwd(&host.rootfs, p.cwd())?;
    }
    let terminal = spec
        .process()
        .as_ref()
        .and_then(|p| p.terminal())
        .unwrap_or(false);
    let (own_console, console_path) = crate::tty::console_for(
        terminal,
        opts.console_socket.as_ref(),
        opts.allocate_terminal,
        &layout.root().join(format!("console-{}.sock", opts.id)),
        "process.terminal is set but no --console-socket was given: a detached container needs --console-socket (or set process.terminal to false)",
    )?;
    if let Some(cg) = spec.linux().as_ref().and_then(|l| l.cgroups_path().clone()) {
        if let Some(why) = crate::cgroups::occupied(&cg, &host.cgroup_v1_hierarchies) {
            bail!(
                "refusing to create container {:?}: {why}; rloxsc only runs a container in a cgroup of its own, since its end kills and removes what the cgroup holds (policy key {})",
                opts.id,
                keys::CGROUP_PARENT
            );
        }
        if let Some(why) = crate::cgroups::frozen(&cg, &host.cgroup_v1_hierarchies) {
            bail!(
                "cannot create container {:?}: container's cgroup unexpectedly frozen ({why}); thaw it first",
                opts.id
            );
        }
    }
    let executor = executor_for(&policy, &ctx.faults)?;
    tracing::debug!(
        "create {}: hardened, executor ready at {:?}",
        opts.id,
        t0.elapsed()
    );

    // the rootfs, bind sources and namespace paths, reachable from inside the user namespace
    let owner = joined_root.unwrap_or_else(|| container_root_uid(&spec));
    let views_dir = crate::views::dir_for(layout.root(), &opts.id);
    guard.views = Some(views_dir.clone());
    let mut views = crate::views::ViewDir::make(
        &views_dir,
        owner,
        &format!("{}\n{}\n", layout.root().display(), opts.id),
    )?;
    let userns_fd = match guard.userns {
        Some(a) => Some(crate::userns::block_namespace(&a)?),
        None => caller_userns_fd(&spec)?,
    };
    // the spec every later verb reads names the host paths; only this create sees the views
    let spec_on_host = spec.clone();
    let idmapped_root = crate::views::prepare(
        &mut spec,
        &mut views,
        userns_fd.as_ref(),
        joined_root.or(host.userns_base),
        guard.userns.is_none(),
        &policy.userns_idmapped_volumes,
    )?;
    drop(userns_fd);
    // libcontainer creates missing mount points from inside the user namespace, where the
    // directories of an image that could not be idmapped are not the container root's
    if !idmapped_root && guard_has_userns(&spec) {
        facts::ensure_mount_points(&host.rootfs, &spec_on_host)?;
    }
    tracing::debug!(
        "create {}: views ready (rootfs {}) at {:?}",
        opts.id,
        if idmapped_root {
            "idmapped"
        } else {
            "not idmapped"
        },
        t0.elapsed()
    );

    let mut record = ContainerRecord {
        caller_bundle: bundle.clone(),
        changes: hardened.changes.iter().map(|c| c.to_string()).collect(),
        policy,
        init: None,
        userns: guard.userns,
        views: guard.views.clone(),
    };
    // the private bundle holds the spec every later verb reads (host paths); libcontainer creates
    // the container from the views' spec, handed over in memory (libcontainer patch 0009)
    let mut host_spec = spec_on_host;
    crate::views::forget_mount_idmaps(&mut host_spec);
    let private = layout.write_bundle(&opts.id, &host_spec, &record)?;
    tracing::debug!(
        "create {}: private bundle written at {:?}",
        opts.id,
        t0.elapsed()
    );

    let capture = private.join("create-errors.log");
    crate::logging::capture_errors_to(&capture);
    let limit = t0 + Duration::from_secs(record.policy.create_timeout_s);
    let (deadline, by_run_timeout) = match opts.deadline {
        Some(d) if d < limit => (d, true),
        _ => (limit, false),
    };
    let reap = opts.die_with_runtime.then(|| crate::custodian::Reap {
        root: layout.root().to_path_buf(),
        id: opts.id.clone(),
    });
    let mut custodian = crate::custodian::Custodian::spawn(deadline, reap)?;
    let built = builder(
        ctx,
        &opts.id,
        executor,
        console_path.as_ref(),
        opts.preserve_fds,
    )
    .map(|b| {
        b.with_parent_death_signal(opts.die_with_runtime.then_some(Signal::SIGKILL))
            // the container's user namespace belongs to its own root: the kernel then charges its
            // per-user counts (inotify, ...) to that uid at the host level, not to host root
            .with_user_namespace_owner(
                guard
                    .userns
                    .filter(|_| !joins_userns)
                    .map(|a| (a.root_uid(), a.root_uid())),
            )
    })
    .and_then(|b| {
        b.as_init(&private)
            .with_spec(spec)
            .with_systemd(false)
            .with_detach(opts.detach || console_path.is_some())
            .with_oci_bundle(&bundle)
            .build()
    });
    let fired = custodian.created();
    let causes = crate::logging::take_captured_errors(&capture);
    if fired {
        drop(built);
        return Err(anyhow::Error::new(CreateTimedOut {
            after: deadline.saturating_duration_since(t0),
            by_run_timeout,
        }));
    }
    let container = built.map_err(|e| {
        let msg = error_chain(&e);
        let cause = cause_suffix(&msg, &causes);
        anyhow!(
            "cannot create container {:?}: {}{}{}",
            opts.id,
            msg,
            failure_key(&msg, &cause)
                .map(|k| format!(" (policy key {k})"))
                .unwrap_or_default(),
            cause
        )
    })?;
    tracing::debug!(
        "create {}: libcontainer created it at {:?}",
        opts.id,
        t0.elapsed()
    );

    // the container's mount namespace holds its own copies of the views now
    if let Some(v) = guard.views.take() {
        crate::views::ViewDir::remove(&v);
    }
    record.views = None;
    let spec = host_spec;
    let pid = container
        .pid()
        .ok_or_else(|| anyhow!("container {:?} has no init pid after create", opts.id))?;
    complete_init(pid.as_raw(), &spec)?;
    verify_init(&opts.id, pid.as_raw(), &spec, &record.policy, &host)?;
    record.init = Some(
        crate::bundle::ProcessIdentity::of(pid.as_raw())
            .ok_or_else(|| anyhow!("container {:?}: its init {pid} is gone", opts.id))?,
    );
    layout.rewrite_record(&opts.id, &record)?;
    if let Some(pid_file) = &opts.pid_file {
        write_pid_file(pid_file, pid.as_raw())?;
    }
    tracing::debug!("create {}: verified at {:?}", opts.id, t0.elapsed());
    Ok(Created {
        container,
        console: own_console,
        spec,
        record,
        pid,
        guard,
        custodian,
    })
}

/// Whether the spec gives the container a user namespace (new or joined).
fn guard_has_userns(spec: &Spec) -> bool {
    spec.linux()
        .as_ref()
        .and_then(|l| l.namespaces().as_ref())
        .is_some_and(|n| {
            n.iter()
                .any(|n| n.typ() == oci_spec::runtime::LinuxNamespaceType::User)
        })
}

/// The host uid the container's root runs as (its uid mapping of container id 0).
fn container_root_uid(spec: &Spec) -> u32 {
    spec.linux()
        .as_ref()
        .and_then(|l| l.uid_mappings().as_ref())
        .and_then(|m| m.iter().find(|x| x.container_id() == 0))
        .map(|x| x.host_id())
        .unwrap_or(0)
}

/// A user namespace fd with the caller's own id mappings (for idmapping the rootfs of a container
/// whose caller brought its user namespace), when the spec has them.
fn caller_userns_fd(spec: &Spec) -> Result<Option<std::os::fd::OwnedFd>> {
    let Some(l) = spec.linux().as_ref() else {
        return Ok(None);
    };
    let line = |v: &Vec<oci_spec::runtime::LinuxIdMapping>| {
        v.iter()
            .map(|x| format!("{} {} {}\n", x.container_id(), x.host_id(), x.size()))
            .collect::<String>()
    };
    match (l.uid_mappings(), l.gid_mappings()) {
        (Some(u), Some(g)) if !u.is_empty() && !g.is_empty() => {
            Ok(Some(crate::userns::namespace_fd(&line(u), &line(g))?))
        }
        _ => Ok(None),
    }
}

/// What libcontainer leaves out, done from outside once the init exists: the device rules it adds
/// behind the spec's back taken back, v2 swap really off, loopback up in a new network namespace.
fn complete_init(pid: i32, spec: &Spec) -> Result<()> {
    crate::cgroups::deny_v1_default_devices(pid)?;
    crate::cgroups::enforce_v2_no_swap(pid, spec)?;
    crate::cgroups::deny_v2_default_devices(pid)?;
    let new_netns = spec
        .linux()
        .as_ref()
        .and_then(|l| l.namespaces().as_ref())
        .is_some_and(|ns| {
            ns.iter().any(|n| {
                n.typ() == oci_spec::runtime::LinuxNamespaceType::Network && n.path().is_none()
            })
        });
    if new_netns {
        crate::netns::bring_loopback_up(pid).with_context(|| {
            format!(
                "cannot bring up loopback in the container's network namespace (policy key {})",
                keys::NETWORK_MODE
            )
        })?;
    }
    Ok(())
}

/// Verifies container `id` (init `pid`) against its hardened spec and effective policy, with an error
/// listing every failed property.
pub fn verify_init(
    id: &str,
    pid: i32,
    spec: &Spec,
    policy: &Policy,
    host: &HostFacts,
) -> Result<()> {
    let obs = verify::observe(pid, &Probe::for_spec(spec, host));
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
    ctx: &Context,
    req: &ExecRequest,
    record: &ContainerRecord,
    init_pid: i32,
) -> Result<Executed> {
    let terminal = req.process.terminal().unwrap_or(false);
    let (own_console, console_path) = crate::tty::console_for(
        terminal,
        req.console_socket,
        !req.detach,
        &ctx.layout
            .bundle_dir(req.id)
            .join(format!("console-{}.sock", std::process::id())),
        "a terminal was asked for a detached process but no --console-socket was given",
    )?;
    let process_file = ctx.layout.bundle_dir(req.id).join(format!(
        "exec-{}-{:016x}.json",
        std::process::id(),
        fsutil::random_u64()
    ));
    fsutil::write_new(&process_file, &serde_json::to_vec(req.process)?, 0o600)?;
    let _remove = RemoveOnDrop(process_file.clone());

    let executor = executor_for(&record.policy, &ctx.faults)?;
    let pid = builder(
        ctx,
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
        anyhow!(
            "cannot exec in container {:?}: {}",
            req.id,
            // libcontainer words every exec failure as "failed to create container"
            error_chain(&e).replace("failed to create container: ", "")
        )
    })?;
    verify_exec(req.id, &record.policy, init_pid, pid.as_raw())?;
    if let Some(pf) = req.pid_file {
        write_pid_file(pf, pid.as_raw())?;
    }
    Ok(Executed {
        pid,
        console: own_console,
    })
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
    pub fn wait(&self, pid: Pid, kill_on_deadline: Option<(&Context, &str)>) -> Result<Ending> {
        let mut killed = false;
        loop {
            match waitpid(pid, None) {
                Ok(WaitStatus::Exited(_, code)) => return Ok(Ending::Exited(code)),
                Ok(WaitStatus::Signaled(_, sig, _)) => return Ok(Ending::Signaled(sig as i32)),
                Ok(_) => continue,
                Err(Errno::EINTR) => {
                    if self.timed_out() && !killed {
                        killed = true;
                        if let Some((ctx, id)) = kill_on_deadline {
                            tracing::info!(
                                "container {id}: --timeout passed, killing every process"
                            );
                            for p in container::pids(&ctx.layout, id).unwrap_or_default() {
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
