//! `create`: harden the caller's spec, create the container through libcontainer, verify its
//! containment from outside, and only then report success. Any failure removes everything it created.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _, Result};
use libcontainer::container::builder::ContainerBuilder;
use libcontainer::container::Container;
use libcontainer::syscall::syscall::SyscallType;
use oci_spec::runtime::Spec;

use super::Context;
use crate::bundle::BundleMeta;
use crate::executor::HardenedExecutor;
use crate::harden::{harden, HostFacts};
use crate::{container, facts, seccomp, verify};

/// Options of `create` (and of `run`'s create half).
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
}

/// Reads and parses the caller's config.json with a clear error for every kind of bad input.
pub fn load_caller_spec(bundle: &Path) -> Result<Spec> {
    load_caller_spec_file(&bundle.join("config.json"))
}

/// [`load_caller_spec`] of a config file at any path.
pub fn load_caller_spec_file(path: &Path) -> Result<Spec> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let path = path.to_path_buf();
    // non-blocking open and at most the limit + 1 bytes: a FIFO or /dev/zero as config.json must not
    // hang rloxsc or make it read without end
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let md = f
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    if !md.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    let mut data = Vec::new();
    f.take(MAX_CONFIG_BYTES as u64 + 1)
        .read_to_end(&mut data)
        .with_context(|| format!("cannot read {}", path.display()))?;
    parse_caller_spec(&data, &path)
}

/// The largest config.json rloxsc reads.
pub const MAX_CONFIG_BYTES: usize = 16 * 1024 * 1024;

/// Parses the bytes of a caller's config.json (read from `path`, named in errors); what
/// [`load_caller_spec_file`] does after reading, and what `fuzz/` feeds arbitrary bytes.
pub fn parse_caller_spec(data: &[u8], path: &Path) -> Result<Spec> {
    if data.len() > MAX_CONFIG_BYTES {
        bail!(
            "{} is over 16 MiB; rloxsc refuses config files that large",
            path.display()
        );
    }
    let value: serde_json::Value = serde_json::from_slice(data)
        .map_err(|e| anyhow!("{} is not valid JSON: {e}", path.display()))?;
    serde_json::from_value(value)
        .map_err(|e| anyhow!("{} is not a valid OCI runtime spec: {e}", path.display()))
}

/// Creates container `opts.id`. On success the container's init is waiting for `start`, contained and
/// verified; on failure nothing is left behind.
pub fn create(ctx: &Context, opts: &CreateOptions) -> Result<Container> {
    create_with_console(ctx, opts).map(|(c, _)| c)
}

/// [`create`], also returning the console socket rloxsc listened on when it provides the terminal.
pub fn create_with_console(
    ctx: &Context,
    opts: &CreateOptions,
) -> Result<(Container, Option<crate::tty::ConsoleSocket>)> {
    container::validate_id(&opts.id)?;
    let t0 = std::time::Instant::now();
    let layout = &ctx.layout;
    if layout.container_dir(&opts.id).exists() || layout.bundle_dir(&opts.id).exists() {
        bail!("container with id {:?} already exists", opts.id);
    }
    let bundle = std::path::absolute(&opts.bundle).context("cannot resolve the bundle path")?;
    let caller_spec = load_caller_spec(&bundle)?;
    layout.ensure()?;
    let host = facts::gather(&caller_spec, &bundle, layout.root())?;
    let hardened = harden(&caller_spec, &opts.id, &ctx.policy, &host)
        .map_err(|r| anyhow!("refusing to create container {:?}: {r}", opts.id))?;
    for c in &hardened.changes {
        tracing::info!("container {}: {c}", opts.id);
    }
    let mut spec = hardened.spec;
    ctx.faults.sabotage(&mut spec);
    if let Some(p) = spec.process() {
        facts::ensure_cwd(&host.rootfs, p.cwd())?;
    }
    // libcontainer creates mount points from inside a user namespace, where the image's root-owned
    // directories are not writable: create the scratch dirs rloxsc adds (/tmp) from outside, as for
    // the cwd; on failure libcontainer reports the mount point itself
    for dir in &ctx.policy.scratch_dirs {
        let _ = facts::ensure_cwd(&host.rootfs, Path::new(dir));
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

    tracing::debug!(
        "create {}: spec read, facts gathered and hardened in {:?}",
        opts.id,
        t0.elapsed()
    );
    let filter = seccomp::compile_filter()
        .context("cannot compile rloxsc's seccomp filter (policy key seccomp.profile)")?;
    if !filter.unknown.is_empty() {
        tracing::debug!(
            "seccomp: syscalls unknown to this libseccomp stay denied: {:?}",
            filter.unknown
        );
    }
    tracing::debug!(
        "create {}: seccomp program ready at {:?}",
        opts.id,
        t0.elapsed()
    );
    let meta = BundleMeta {
        caller_bundle: bundle.clone(),
        changes: hardened.changes.iter().map(|c| c.to_string()).collect(),
    };
    let private = layout.write_bundle(&opts.id, &spec, &meta)?;
    tracing::debug!(
        "create {}: seccomp compiled and private bundle written at {:?}",
        opts.id,
        t0.elapsed()
    );

    let capture = private.join("create-errors.log");
    crate::logging::capture_errors_to(&capture);
    let built = ContainerBuilder::new(opts.id.clone(), SyscallType::default())
        .with_executor(HardenedExecutor::new(filter, ctx.faults.executor()))
        .with_root_path(layout.containers())
        .and_then(|b| b.with_pid_file(None::<PathBuf>))
        .map(|b| {
            b.with_console_socket(console_path.as_ref())
                .with_preserved_fds(opts.preserve_fds)
        })
        .and_then(|b| b.validate_id())
        .and_then(|b| {
            b.as_init(&private)
                .with_systemd(false)
                .with_detach(opts.detach || console_path.is_some())
                .build()
        });
    let mut container = match built {
        Ok(c) => {
            let _ = crate::logging::take_captured_errors(&capture);
            c
        }
        Err(e) => {
            let causes = crate::logging::take_captured_errors(&capture);
            cleanup_failed_create(ctx, &opts.id);
            let msg = error_chain(&e);
            return Err(anyhow!(
                "cannot create container {:?}: {}{}{}",
                opts.id,
                msg,
                missing_controller_key(&msg)
                    .map(|k| format!(" (policy key {k})"))
                    .unwrap_or_default(),
                cause_suffix(&msg, &causes)
            ));
        }
    };

    tracing::debug!(
        "create {}: libcontainer created the container at {:?}",
        opts.id,
        t0.elapsed()
    );
    if let Err(e) = post_create_and_verify(ctx, &container, &spec, &host) {
        let _ = container.kill(nix::sys::signal::Signal::SIGKILL, true);
        let _ = container.delete(true);
        cleanup_failed_create(ctx, &opts.id);
        return Err(e);
    }
    if let Some(pid_file) = &opts.pid_file {
        if let Err(e) = write_pid_file(pid_file, container.pid().map(|p| p.as_raw()).unwrap_or(0)) {
            let _ = container.kill(nix::sys::signal::Signal::SIGKILL, true);
            let _ = container.delete(true);
            cleanup_failed_create(ctx, &opts.id);
            return Err(e);
        }
    }
    tracing::debug!("create {}: verified at {:?}", opts.id, t0.elapsed());
    Ok((container, own_console))
}

/// Mechanics libcontainer does not do, then the outside verification.
fn post_create_and_verify(
    ctx: &Context,
    container: &Container,
    spec: &Spec,
    host: &HostFacts,
) -> Result<()> {
    let pid = container
        .pid()
        .ok_or_else(|| {
            anyhow!(
                "container {:?} has no init pid after create",
                container.id()
            )
        })?
        .as_raw();
    deny_v1_default_devices(pid)?;
    enforce_v2_no_swap(pid, spec)?;
    deny_v2_default_devices(pid)?;
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
        crate::netns::bring_loopback_up(pid).context("cannot bring up loopback in the container's network namespace (policy key network.mode)")?;
    }
    verify_now(ctx, container.id(), pid, spec, host)
}

/// Verifies container `id` (init `pid`) against `spec`, with an error listing every failed property.
pub fn verify_now(ctx: &Context, id: &str, pid: i32, spec: &Spec, host: &HostFacts) -> Result<()> {
    let mut failures = verify::verify_container(pid, spec, &ctx.policy, host);
    if let Some(list) = v1_devices_list(pid) {
        failures.extend(verify::check_devices_list(&list));
    }
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

fn v1_cgroup_dir(pid: i32, controller: &str) -> Option<PathBuf> {
    let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = cg.lines().find_map(|l| {
        let mut it = l.splitn(3, ':');
        let _ = it.next()?;
        let ctrls = it.next()?;
        let p = it.next()?;
        ctrls
            .split(',')
            .any(|c| c == controller)
            .then(|| p.to_string())
    })?;
    Some(
        Path::new("/sys/fs/cgroup")
            .join(controller)
            .join(path.trim_start_matches('/')),
    )
}

fn v1_devices_list(pid: i32) -> Option<String> {
    std::fs::read_to_string(v1_cgroup_dir(pid, "devices")?.join("devices.list")).ok()
}

/// The container's cgroup v2 directory, from `/proc/<pid>/cgroup` (`0::/path`), on a pure v2 host.
pub fn v2_cgroup_dir(pid: i32) -> Option<PathBuf> {
    let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    if cg.lines().any(|l| !l.starts_with("0::")) {
        return None; // v1 or hybrid: the v1 controllers hold the limits
    }
    let p = cg.lines().find_map(|l| l.strip_prefix("0::"))?;
    Some(Path::new("/sys/fs/cgroup").join(p.trim_start_matches('/')))
}

/// On cgroup v2, memory+swap equal to the memory limit means `memory.swap.max` = 0; libcgroups 0.7
/// computes that 0 and then skips writing it, leaving `max`. rloxsc writes it itself (verification
/// then checks it).
pub fn enforce_v2_no_swap(pid: i32, spec: &Spec) -> Result<()> {
    let Some(dir) = v2_cgroup_dir(pid) else {
        return Ok(());
    };
    let f = dir.join("memory.swap.max");
    let mem = spec
        .linux()
        .as_ref()
        .and_then(|l| l.resources().as_ref())
        .and_then(|r| r.memory().as_ref().copied());
    let no_swap = mem.is_some_and(|m| m.limit().is_some() && m.swap() == m.limit());
    if no_swap && f.exists() {
        std::fs::write(&f, "0").with_context(|| {
            format!(
                "cannot write 0 to {} (policy key limits.memory)",
                f.display()
            )
        })?;
    }
    Ok(())
}

/// On cgroup v2, libcgroups' device program also allows its defaults, among them `c 10:200 rwm`
/// (/dev/net/tun), after the spec's deny-all. rloxsc attaches a second program to the container's
/// cgroup that denies them; with BPF_F_ALLOW_MULTI every attached program must allow an access.
pub fn deny_v2_default_devices(pid: i32) -> Result<()> {
    use libcgroups::v2::devices::{bpf::prog, emulator::Emulator, program::Program};
    use oci_spec::runtime::{LinuxDeviceCgroup, LinuxDeviceType};
    use std::os::fd::AsRawFd;
    let Some(dir) = v2_cgroup_dir(pid) else {
        return Ok(());
    };
    let mut deny = LinuxDeviceCgroup::default();
    deny.set_allow(false);
    deny.set_typ(Some(LinuxDeviceType::C));
    deny.set_major(Some(10));
    deny.set_minor(Some(200));
    deny.set_access(Some("rwm".into()));
    let mut em = Emulator::with_default_allow(true);
    em.add_rule(&deny);
    let program = Program::from_rules(&em.rules, em.default_allow).map_err(|e| {
        anyhow!("cannot build the v2 device program: {e} (policy key devices.allowed)")
    })?;
    let _ = prog::bump_memlock_rlimit(); // kernels >= 5.11 account BPF to the memory cgroup instead
    let fd = prog::load("Apache", program.bytecodes()).map_err(|e| {
        anyhow!("cannot load the v2 device program: {e} (policy key devices.allowed)")
    })?;
    // SAFETY: the fd was just returned by BPF_PROG_LOAD and is ours.
    let prog_fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let cg = std::fs::File::open(&dir).with_context(|| format!("cannot open {}", dir.display()))?;
    prog::attach(prog_fd.as_raw_fd(), cg.as_raw_fd()).map_err(|e| {
        anyhow!(
            "cannot attach the v2 device program to {}: {e} (policy key devices.allowed)",
            dir.display()
        )
    })
}

/// libcontainer always appends `c 10:200 rwm` (/dev/net/tun) to a v1 device cgroup; take it back.
fn deny_v1_default_devices(pid: i32) -> Result<()> {
    let Some(dir) = v1_cgroup_dir(pid, "devices") else {
        return Ok(());
    };
    std::fs::write(dir.join("devices.deny"), "c 10:200 rwm").with_context(|| {
        format!(
            "cannot deny /dev/net/tun in {} (policy key devices.allowed)",
            dir.display()
        )
    })
}

/// The policy key behind libcgroups' "cgroup X is required ... but is not supported by this system"
/// (the host lacks a controller a limit needs).
fn missing_controller_key(msg: &str) -> Option<&'static str> {
    use crate::policy::keys;
    [
        ("pids", keys::PIDS),
        ("memory", keys::MEMORY),
        ("devices", keys::DEVICES),
    ]
    .into_iter()
    .find(|(c, _)| msg.contains(&format!("cgroup {c} is required")))
    .map(|(_, k)| k)
}

/// Removes whatever a failed create left: libcontainer's state directory and rloxsc's private bundle.
/// (libcontainer removes the cgroups of a create that fails inside it.)
pub fn cleanup_failed_create(ctx: &Context, id: &str) {
    let dir = ctx.layout.container_dir(id);
    if dir.exists() {
        if let Ok(mut c) = Container::load(dir.clone()) {
            let _ = c.delete(true);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    let _ = ctx.layout.remove_bundle(id);
}

fn write_pid_file(path: &Path, pid: i32) -> Result<()> {
    let tmp = path.with_extension(format!("rloxsc-tmp-{}", std::process::id()));
    std::fs::write(&tmp, pid.to_string())
        .with_context(|| format!("cannot write pid file {}", path.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write pid file {}", path.display()))
}

/// The first captured error lines that say more than the summary (e.g. which mount failed and how),
/// as " (cause: ...)", or nothing.
pub fn cause_suffix(summary: &str, captured: &[String]) -> String {
    let mut picked: Vec<&str> = Vec::new();
    for l in captured {
        let l = l.trim();
        if l.is_empty() || summary.contains(l) || picked.iter().any(|p| p == &l) {
            continue;
        }
        picked.push(l);
        if picked.len() == 2 {
            break;
        }
    }
    if picked.is_empty() {
        String::new()
    } else {
        format!(" (cause: {})", picked.join("; "))
    }
}

/// Flattens an error and its sources into one line.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}
