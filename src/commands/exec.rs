//! `exec`: run a new process in a running container with exactly the init's containment: rloxsc's
//! seccomp filter (and the caller's profile, which libcontainer's tenant path would drop), the clamped
//! capability set (`--cap` beyond the policy is refused), no_new_privs, the container's rlimits, cgroup
//! and namespaces. The process description is always hardened and handed to libcontainer as a complete
//! process.json, so no libcontainer default can widen it.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _, Result};
use libcontainer::container::builder::ContainerBuilder;
use libcontainer::syscall::syscall::SyscallType;
use oci_spec::runtime::{Capability, Process, Spec};

use super::create::error_chain;
use super::Context;
use crate::executor::HardenedExecutor;
use crate::harden::{privileges, resources, Changes};
use crate::policy::keys;
use crate::{container, seccomp, verify};

/// Options of `exec`.
#[derive(Debug, Default)]
pub struct ExecOptions {
    /// Container id.
    pub id: String,
    /// The command (ignored with `process`).
    pub command: Vec<String>,
    /// A process.json describing the process.
    pub process: Option<PathBuf>,
    /// Return once the process runs instead of waiting for it.
    pub detach: bool,
    /// Where to write the process's pid.
    pub pid_file: Option<PathBuf>,
    /// Console socket for a terminal process.
    pub console_socket: Option<PathBuf>,
    /// Allocate a terminal.
    pub tty: bool,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Extra environment, `KEY=VALUE`.
    pub env: Vec<String>,
    /// `uid[:gid]`.
    pub user: Option<String>,
    /// Additional group ids.
    pub additional_gids: Vec<u32>,
    /// Capabilities to add (each must be allowed by the policy).
    pub caps: Vec<String>,
    /// Extra fds passed from 3 up.
    pub preserve_fds: i32,
    /// SELinux label.
    pub process_label: Option<String>,
    /// AppArmor profile.
    pub apparmor: Option<String>,
    /// Exec even into a paused container.
    pub ignore_paused: bool,
    /// Sub-cgroup of the container's cgroup to run in.
    pub cgroup: Option<String>,
}

fn parse_cap(name: &str) -> Result<Capability> {
    let up = name.trim().to_ascii_uppercase();
    let bare = up.strip_prefix("CAP_").unwrap_or(&up);
    bare.parse::<Capability>()
        .map_err(|_| anyhow!("unknown capability {name:?}"))
}

/// Builds the hardened process for `opts` from the container's hardened spec.
pub fn exec_process(
    ctx: &Context,
    spec: &Spec,
    opts: &ExecOptions,
) -> Result<(Process, Vec<String>)> {
    let mut process = match &opts.process {
        Some(p) => {
            let data = std::fs::read(p)
                .with_context(|| format!("cannot read process file {}", p.display()))?;
            serde_json::from_slice::<Process>(&data)
                .map_err(|e| anyhow!("{} is not a valid OCI process: {e}", p.display()))?
        }
        None => {
            if opts.command.is_empty() {
                bail!("exec needs a command or --process");
            }
            let mut p = spec
                .process()
                .clone()
                .ok_or_else(|| anyhow!("the container's spec has no process"))?;
            p.set_args(Some(opts.command.clone()));
            p.set_terminal(Some(opts.tty));
            if let Some(cwd) = &opts.cwd {
                p.set_cwd(cwd.clone());
            }
            let mut env = p.env().clone().unwrap_or_default();
            for kv in &opts.env {
                let key = kv.split('=').next().unwrap_or(kv);
                env.retain(|e| e.split('=').next() != Some(key));
                env.push(kv.clone());
            }
            p.set_env(Some(env));
            if let Some(u) = &opts.user {
                let mut user = p.user().clone();
                let (uid, gid) = u
                    .split_once(':')
                    .map(|(a, b)| (a, Some(b)))
                    .unwrap_or((u.as_str(), None));
                user.set_uid(
                    uid.parse()
                        .map_err(|_| anyhow!("--user takes uid[:gid] as numbers, got {u:?}"))?,
                );
                if let Some(g) = gid {
                    user.set_gid(
                        g.parse()
                            .map_err(|_| anyhow!("--user takes uid[:gid] as numbers, got {u:?}"))?,
                    );
                }
                p.set_user(user);
            }
            if !opts.additional_gids.is_empty() {
                let mut user = p.user().clone();
                user.set_additional_gids(Some(opts.additional_gids.clone()));
                p.set_user(user);
            }
            if let Some(a) = &opts.apparmor {
                p.set_apparmor_profile(Some(a.clone()));
            }
            if let Some(l) = &opts.process_label {
                p.set_selinux_label(Some(l.clone()));
            }
            p
        }
    };

    // --cap: only capabilities the policy allows; anything else is refused, never silently dropped
    let allowed = ctx.policy.allowed_capabilities();
    if !opts.caps.is_empty() {
        let mut caps = process.capabilities().clone().unwrap_or_default();
        for name in &opts.caps {
            let c = parse_cap(name)?;
            if !allowed.contains(&c) {
                bail!("exec --cap {name} refused: CAP_{c} is not in rloxsc's capability set (policy key {})", keys::CAPABILITIES);
            }
            let add = |s: &Option<oci_spec::runtime::Capabilities>| {
                let mut s = s.clone().unwrap_or_default();
                s.insert(c);
                Some(s)
            };
            let (b, e, p) = (
                add(caps.bounding()),
                add(caps.effective()),
                add(caps.permitted()),
            );
            caps.set_bounding(b);
            caps.set_effective(e);
            caps.set_permitted(p);
        }
        process.set_capabilities(Some(caps));
    }

    // the same privilege and rlimit rules as the init, through the same pure steps
    let mut wrapper = Spec::default();
    wrapper.set_process(Some(process));
    if let Some(init_rl) = spec.process().as_ref().and_then(|p| p.rlimits().clone()) {
        let wp = wrapper.process_mut().as_mut().expect("set above");
        if wp.rlimits().is_none() {
            wp.set_rlimits(Some(init_rl));
        }
    }
    let mut changes = Changes::default();
    privileges::harden_privileges(&mut wrapper, &ctx.policy, &mut changes)
        .map_err(|r| anyhow!("{r}"))?;
    resources::harden_rlimits(&mut wrapper, &ctx.policy, &mut changes);
    let process = wrapper.process().clone().expect("set above");
    if process.args().as_ref().is_none_or(|a| a.is_empty()) {
        bail!("exec: the process has no args");
    }
    Ok((process, changes.0.iter().map(|c| c.to_string()).collect()))
}

fn validate_sub_cgroup(s: &str) -> Result<()> {
    if s.is_empty()
        || s.starts_with('/')
        || s.split('/').any(|c| c == ".." || c == "." || c.is_empty())
    {
        bail!("--cgroup {s:?} refused: only a relative sub-cgroup of the container's own cgroup is allowed");
    }
    Ok(())
}

/// Runs `exec`; returns the exit status `rloxsc exec` should exit with.
pub fn exec(ctx: &Context, opts: &ExecOptions) -> Result<i32> {
    let c = container::load(&ctx.layout, &opts.id)?;
    if !c.can_exec()
        && !(opts.ignore_paused && c.status() == libcontainer::container::ContainerStatus::Paused)
    {
        bail!(
            "cannot exec in container {:?}: it is {}",
            opts.id,
            c.status().to_string().to_lowercase()
        );
    }
    if let Some(sub) = &opts.cgroup {
        validate_sub_cgroup(sub.split_once(':').map(|(_, p)| p).unwrap_or(sub))?;
    }
    let init_pid = c
        .pid()
        .ok_or_else(|| anyhow!("container {:?} has no init process", opts.id))?
        .as_raw();
    let spec = ctx.layout.read_spec(&opts.id)?;
    let (process, changes) = exec_process(ctx, &spec, opts)?;
    for ch in &changes {
        tracing::info!("container {} exec: {ch}", opts.id);
    }
    let terminal = process.terminal().unwrap_or(false);
    let (own_console, console_path) = crate::tty::console_for(
        terminal,
        opts.console_socket.as_ref(),
        !opts.detach,
        &ctx.layout
            .bundle_dir(&opts.id)
            .join(format!("console-{}.sock", std::process::id())),
        "a terminal was asked for a detached process but no --console-socket was given",
    )?;
    let process_file = ctx
        .layout
        .bundle_dir(&opts.id)
        .join(format!("exec-{}.json", std::process::id()));
    std::fs::write(&process_file, serde_json::to_vec(&process)?)
        .with_context(|| format!("cannot write {}", process_file.display()))?;
    let _remove = RemoveOnDrop(process_file.clone());

    let caller_seccomp = spec.linux().as_ref().and_then(|l| l.seccomp().clone());
    let executor = HardenedExecutor::new(seccomp::for_policy(&ctx.policy)?, ctx.faults.executor())
        .with_caller_seccomp(caller_seccomp);
    let sub_cgroup = opts.cgroup.as_ref().map(|s| {
        s.split_once(':')
            .map(|(_, p)| p.to_string())
            .unwrap_or(s.clone())
    });
    let pid = ContainerBuilder::new(opts.id.clone(), SyscallType::default())
        .with_executor(executor)
        .with_root_path(ctx.layout.containers())
        .map(|b| {
            b.with_console_socket(console_path.as_ref())
                .with_preserved_fds(opts.preserve_fds)
        })
        .and_then(|b| b.validate_id())
        .and_then(|b| {
            b.as_tenant()
                .with_detach(opts.detach || console_path.is_some())
                .with_process(Some(&process_file))
                .with_ignore_paused(opts.ignore_paused)
                .with_sub_cgroup(sub_cgroup)
                .build()
        })
        .map_err(|e| {
            anyhow!(
                "cannot exec in container {:?}: {}",
                opts.id,
                // libcontainer words every exec failure as "failed to create container"
                error_chain(&e).replace("failed to create container: ", "")
            )
        })?;

    verify_exec(ctx, &opts.id, init_pid, pid.as_raw())?;
    if let Some(pf) = &opts.pid_file {
        let tmp = pf.with_extension(format!("rloxsc-tmp-{}", std::process::id()));
        std::fs::write(&tmp, pid.as_raw().to_string())
            .and_then(|_| std::fs::rename(&tmp, pf))
            .with_context(|| format!("cannot write pid file {}", pf.display()))?;
    }
    if opts.detach {
        return Ok(0);
    }
    let (_raw, output) = match &own_console {
        Some(sock) => {
            let m = sock.receive_master()?;
            crate::tty::copy_window_size(&m);
            (
                Some(crate::tty::RawMode::enter()),
                Some(crate::tty::proxy(m)?),
            )
        }
        None => (None, None),
    };
    let code = super::run::forward_and_wait(pid);
    super::run::finish_output(output);
    code
}

/// Checks the exec'd process from outside while it lives: no_new_privs, seccomp filter mode, clamped
/// capabilities, and the init's namespaces. (Inside, the executor checked seccomp before execve.)
fn verify_exec(ctx: &Context, id: &str, init_pid: i32, pid: i32) -> Result<()> {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return Ok(()); // already gone: the in-process check before its execve is what held
    };
    let mut failures = verify::check_status(&status, &ctx.policy);
    for ns in ["pid", "mnt", "net", "ipc", "uts", "cgroup"] {
        let a = crate::facts::ns_id(Path::new(&format!("/proc/{init_pid}/ns/{ns}")));
        let b = crate::facts::ns_id(Path::new(&format!("/proc/{pid}/ns/{ns}")));
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
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::Layout;
    use crate::fault::Faults;
    use crate::policy::Policy;

    fn ctx() -> Context {
        Context {
            layout: Layout::new("/nonexistent"),
            policy: Policy::default(),
            faults: Faults::default(),
        }
    }

    fn hardened_spec() -> Spec {
        let h = crate::harden::harden(
            &crate::harden::testutil::careless_spec(),
            "c",
            &Policy::default(),
            &crate::harden::testutil::facts(),
        )
        .unwrap();
        h.spec
    }

    #[test]
    fn cap_beyond_policy_is_refused() {
        let opts = ExecOptions {
            command: vec!["sh".into()],
            caps: vec!["CAP_SYS_ADMIN".into()],
            ..Default::default()
        };
        let e = exec_process(&ctx(), &hardened_spec(), &opts)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("refused") && e.contains("capabilities.allowed"),
            "{e}"
        );
    }

    #[test]
    fn allowed_cap_is_added() {
        let opts = ExecOptions {
            command: vec!["sh".into()],
            caps: vec!["kill".into()],
            ..Default::default()
        };
        let (p, _) = exec_process(&ctx(), &hardened_spec(), &opts).unwrap();
        assert!(p
            .capabilities()
            .as_ref()
            .unwrap()
            .effective()
            .as_ref()
            .unwrap()
            .contains(&Capability::Kill));
    }

    #[test]
    fn process_file_is_hardened() {
        let dir = std::env::temp_dir().join(format!("rloxsc-exec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("p.json");
        std::fs::write(&f, r#"{"args":["sh"],"cwd":"/","user":{"uid":0,"gid":0},"noNewPrivileges":false,
            "capabilities":{"bounding":["CAP_SYS_ADMIN","CAP_CHOWN"],"effective":["CAP_SYS_ADMIN"]}}"#).unwrap();
        let opts = ExecOptions {
            process: Some(f),
            ..Default::default()
        };
        let (p, changes) = exec_process(&ctx(), &hardened_spec(), &opts).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(p.no_new_privileges(), Some(true));
        let caps = p.capabilities().as_ref().unwrap();
        assert!(!caps
            .bounding()
            .as_ref()
            .unwrap()
            .contains(&Capability::SysAdmin));
        assert!(caps.ambient().is_some(), "all five sets written");
        assert!(p
            .rlimits()
            .as_ref()
            .unwrap()
            .iter()
            .any(|r| r.typ() == oci_spec::runtime::PosixRlimitType::RlimitCore));
        assert!(!changes.is_empty());
    }

    #[test]
    fn env_cwd_user_are_applied() {
        let opts = ExecOptions {
            command: vec!["id".into()],
            env: vec!["FOO=bar".into(), "PATH=/x".into()],
            cwd: Some("/tmp".into()),
            user: Some("1000:1001".into()),
            ..Default::default()
        };
        let (p, _) = exec_process(&ctx(), &hardened_spec(), &opts).unwrap();
        let env = p.env().clone().unwrap();
        assert!(env.contains(&"FOO=bar".to_string()));
        assert_eq!(env.iter().filter(|e| e.starts_with("PATH=")).count(), 1);
        assert_eq!(p.cwd(), Path::new("/tmp"));
        assert_eq!((p.user().uid(), p.user().gid()), (1000, 1001));
    }

    #[test]
    fn sub_cgroup_must_stay_inside() {
        assert!(validate_sub_cgroup("child").is_ok());
        assert!(validate_sub_cgroup("a/b").is_ok());
        for bad in ["/abs", "../up", "a/../../b", ""] {
            assert!(validate_sub_cgroup(bad).is_err(), "{bad}");
        }
    }
}
