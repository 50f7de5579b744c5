//! `exec`: run a new process in a running container with exactly the init's containment. This verb
//! turns runc's flags (or a process.json) into an OCI process, hardens it with the same process-level
//! steps as the init ([`crate::harden::harden_process`]) under the container's *effective* policy
//! (`--cap` beyond it is refused), and starts it through the launch path ([`crate::launch::exec`]):
//! rloxsc's seccomp filter for that policy and the container's own profile, which libcontainer's
//! tenant path would drop, the container's namespaces and cgroup, verified from outside.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context as _, Result};
use oci_spec::runtime::{Capability, Process, Spec};

use super::Context;
use crate::container;
use crate::harden::Changes;
use crate::launch::{self, ExecRequest, TerminalSession, Waiter};
use crate::policy::{keys, Policy};

/// What `exec` is asked to do: runc's flags, parsed by clap as runc spells them.
#[derive(Debug, Default, clap::Args)]
pub struct ExecOptions {
    /// process.json describing the process (the command is then ignored).
    #[arg(short = 'p', long)]
    pub process: Option<PathBuf>,
    /// Do not wait for the process.
    #[arg(short = 'd', long)]
    pub detach: bool,
    /// File to write the process's pid to.
    #[arg(long = "pid-file")]
    pub pid_file: Option<PathBuf>,
    /// Unix socket to receive the pty master.
    #[arg(long = "console-socket")]
    pub console_socket: Option<PathBuf>,
    /// Allocate a pseudo-TTY.
    #[arg(short = 't', long)]
    pub tty: bool,
    /// Working directory.
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Extra environment variables (KEY=VALUE).
    #[arg(short = 'e', long = "env")]
    pub env: Vec<String>,
    /// uid[:gid].
    #[arg(short = 'u', long)]
    pub user: Option<String>,
    /// Additional gids (repeatable or comma-separated).
    #[arg(short = 'g', long = "additional-gids", value_delimiter = ',')]
    pub additional_gids: Vec<u32>,
    /// Add a capability (refused unless rloxsc's policy allows it).
    #[arg(short = 'c', long = "cap")]
    pub caps: Vec<String>,
    /// Accepted: exec'd processes always get no_new_privs.
    #[arg(long = "no-new-privs")]
    pub no_new_privs: bool,
    /// Extra fds passed from 3 up.
    #[arg(long = "preserve-fds", default_value_t = 0)]
    pub preserve_fds: i32,
    /// SELinux process label.
    #[arg(long = "process-label")]
    pub process_label: Option<String>,
    /// AppArmor profile.
    #[arg(long)]
    pub apparmor: Option<String>,
    /// Exec even into a paused container.
    #[arg(long = "ignore-paused")]
    pub ignore_paused: bool,
    /// Run in this sub-cgroup of the container's cgroup.
    #[arg(long)]
    pub cgroup: Option<String>,
    /// Container id.
    pub id: String,
    /// The command and its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

fn parse_cap(name: &str) -> Result<Capability> {
    let up = name.trim().to_ascii_uppercase();
    let bare = up.strip_prefix("CAP_").unwrap_or(&up);
    bare.parse::<Capability>()
        .map_err(|_| anyhow!("unknown capability {name:?}"))
}

/// Builds the hardened process for `opts` from the container's hardened spec, under the container's
/// effective `policy`; `image_root` is the container's root as seen from the host
/// (`/proc/<init>/root`), where a missing `HOME` is looked up from outside.
pub fn exec_process(
    policy: &Policy,
    spec: &Spec,
    opts: &ExecOptions,
    image_root: &std::path::Path,
) -> Result<(Process, Vec<String>)> {
    let mut process = match &opts.process {
        Some(p) => process_from_file(p)?,
        None => process_from_flags(spec, opts)?,
    };
    add_cap_flags(&mut process, policy, &opts.caps)?;

    // the same privilege and rlimit rules as the init, through the same pure steps
    let init_rlimits = spec.process().as_ref().and_then(|p| p.rlimits().clone());
    let mut changes = Changes::default();
    let has_home = process
        .env()
        .iter()
        .flatten()
        .any(|e| e.strip_prefix("HOME=").is_some_and(|v| !v.is_empty()));
    let home = (!has_home).then(|| crate::facts::image_home(image_root, process.user().uid()));
    crate::harden::harden_process(
        &mut process,
        policy,
        init_rlimits.as_deref(),
        home.as_ref(),
        &mut changes,
    )
    .map_err(|r| anyhow!("{r}"))?;
    if process.args().as_ref().is_none_or(|a| a.is_empty()) {
        bail!("exec: the process has no args");
    }
    Ok((process, changes.0.iter().map(|c| c.to_string()).collect()))
}

/// The process of `exec --process FILE`.
fn process_from_file(path: &std::path::Path) -> Result<Process> {
    let data = std::fs::read(path)
        .with_context(|| format!("cannot read process file {}", path.display()))?;
    parse_process_file(&data)
        .map_err(|e| anyhow!("{} is not a valid OCI process: {e}", path.display()))
}

/// The process of `exec ID COMMAND...`: the init's process with runc's flags applied.
fn process_from_flags(spec: &Spec, opts: &ExecOptions) -> Result<Process> {
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
        apply_user_flag(&mut p, u)?;
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
    Ok(p)
}

/// `--user uid[:gid]` onto the process's user.
fn apply_user_flag(p: &mut Process, u: &str) -> Result<()> {
    let mut user = p.user().clone();
    let (uid, gid) = u
        .split_once(':')
        .map(|(a, b)| (a, Some(b)))
        .unwrap_or((u, None));
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
    Ok(())
}

/// `--cap`: adds each named capability to the bounding, effective and permitted sets.
fn add_cap_flags(process: &mut Process, policy: &Policy, names: &[String]) -> Result<()> {
    // --cap: only capabilities the policy allows; anything else is refused, never silently dropped
    let allowed = policy.allowed_capabilities();
    if !names.is_empty() {
        let mut caps = process.capabilities().clone().unwrap_or_default();
        for name in names {
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
    Ok(())
}

/// Parses an exec `--process` file. As under runc, a process without `user` runs as uid 0, gid 0
/// (of the container's user namespace; Go fills an absent struct with zeros).
fn parse_process_file(data: &[u8]) -> std::result::Result<Process, serde_json::Error> {
    let mut v: serde_json::Value = serde_json::from_slice(data)?;
    if let Some(o) = v.as_object_mut() {
        o.entry("user")
            .or_insert_with(|| serde_json::json!({"uid": 0, "gid": 0}));
    }
    serde_json::from_value(v)
}

fn validate_sub_cgroup(s: &str) -> Result<()> {
    if s.is_empty()
        || s.starts_with('/')
        || s.split('/').any(|c| c == ".." || c == "." || c.is_empty())
    {
        bail!("--cgroup refused: {s} is not a sub cgroup path (only a relative sub-cgroup of the container's own cgroup is allowed)");
    }
    Ok(())
}

/// Runs `exec`; returns the exit status `rloxsc exec` should exit with.
pub fn exec(ctx: &Context, opts: &ExecOptions) -> Result<i32> {
    let c = container::load(&ctx.layout, &opts.id)?;
    let paused = c.status() == libcontainer::container::ContainerStatus::Paused;
    // as runc: a created container (its init waiting for `start`) takes exec'd processes too
    let created = c.status() == libcontainer::container::ContainerStatus::Created;
    if paused && !opts.ignore_paused {
        bail!(
            "cannot exec in container {:?}: cannot exec in a paused container (pass --ignore-paused to exec into it anyway)",
            opts.id
        );
    }
    // an init that has ended but is still tearing down counts as stopped, as under runc
    let ended = c
        .pid()
        .is_some_and(|p| container::process_ended(p.as_raw()));
    if ended || c.status() == libcontainer::container::ContainerStatus::Stopped {
        bail!(
            "cannot exec in container {:?}: cannot exec in a stopped container",
            opts.id
        );
    }
    if !(c.can_exec() || created || opts.ignore_paused && paused) {
        bail!(
            "cannot exec in container {:?}: it is {}",
            opts.id,
            c.status().to_string().to_lowercase()
        );
    }
    let sub_cgroup = opts.cgroup.as_ref().map(|s| {
        s.split_once(':')
            .map(|(_, p)| p.to_string())
            .unwrap_or(s.clone())
    });
    if let Some(sub) = &sub_cgroup {
        validate_sub_cgroup(sub)?;
    }
    let init_pid = c
        .pid()
        .ok_or_else(|| anyhow!("container {:?} has no init process", opts.id))?
        .as_raw();
    if let (Some(sub), Some(cg)) = (&sub_cgroup, crate::cgroups::ProcessCgroups::of(init_pid)) {
        // as runc: a sub-cgroup is joined, never made (one made here outlived the container)
        let controllers: Vec<&str> = opts
            .cgroup
            .as_deref()
            .and_then(|s| s.split_once(':'))
            .map(|(c, _)| c.split(',').collect())
            .unwrap_or_default();
        if let Some(missing) = cg
            .sub_procs(&controllers, sub)
            .into_iter()
            .find(|p| !p.exists())
        {
            bail!(
                "cannot exec in container {:?}: adding pid to cgroups: {}: no such file or directory",
                opts.id,
                missing.display()
            );
        }
    }
    let spec = ctx.layout.read_spec(&opts.id)?;
    let record = ctx.layout.read_record(&opts.id)?;
    let root = std::path::PathBuf::from(format!("/proc/{init_pid}/root"));
    let (process, changes) = exec_process(&record.policy, &spec, opts, &root)?;
    for ch in &changes {
        tracing::info!("container {} exec: {ch}", opts.id);
    }
    let req = ExecRequest {
        id: &opts.id,
        process: &process,
        detach: opts.detach,
        console_socket: opts.console_socket.as_ref(),
        preserve_fds: opts.preserve_fds,
        ignore_paused: opts.ignore_paused,
        sub_cgroup,
        pid_file: opts.pid_file.as_ref(),
    };
    let waiter = if opts.detach {
        None
    } else {
        Some(Waiter::install()?)
    };
    let started = launch::exec(&ctx.layout, &ctx.faults, &req, &record, &spec, init_pid)?;
    let Some(waiter) = waiter else {
        return Ok(0);
    };
    let terminal = started
        .console
        .as_ref()
        .map(TerminalSession::attach)
        .transpose()?;
    let ending = waiter.wait(started.pid, None);
    if let Some(t) = terminal {
        t.finish();
    }
    Ok(launch::exit_status(ending?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn policy() -> Policy {
        Policy::default()
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
        let e = exec_process(
            &policy(),
            &hardened_spec(),
            &opts,
            Path::new("/nonexistent"),
        )
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
        let (p, _) = exec_process(
            &policy(),
            &hardened_spec(),
            &opts,
            Path::new("/nonexistent"),
        )
        .unwrap();
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
        let (p, changes) = exec_process(
            &policy(),
            &hardened_spec(),
            &opts,
            Path::new("/nonexistent"),
        )
        .unwrap();
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
        let (p, _) = exec_process(
            &policy(),
            &hardened_spec(),
            &opts,
            Path::new("/nonexistent"),
        )
        .unwrap();
        let env = p.env().clone().unwrap();
        assert!(env.contains(&"FOO=bar".to_string()));
        assert_eq!(env.iter().filter(|e| e.starts_with("PATH=")).count(), 1);
        assert_eq!(p.cwd(), Path::new("/tmp"));
        assert_eq!((p.user().uid(), p.user().gid()), (1000, 1001));
    }

    #[test]
    fn a_process_file_without_user_runs_as_uid_0() {
        let p = parse_process_file(br#"{"args":["id"],"cwd":"/","env":["PATH=/bin"]}"#).unwrap();
        assert_eq!((p.user().uid(), p.user().gid()), (0, 0));
        let p =
            parse_process_file(br#"{"args":["id"],"cwd":"/","user":{"uid":7,"gid":8}}"#).unwrap();
        assert_eq!((p.user().uid(), p.user().gid()), (7, 8));
        assert!(parse_process_file(b"[1]").is_err());
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
