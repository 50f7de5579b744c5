//! The command line: runc's global flags and verbs, flag for flag as Docker, Podman, containerd and the
//! CRI path pass them. Parsing only; the verbs live in [`crate::commands`].

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Parser, Subcommand};

use crate::bundle::Layout;
use crate::commands::{self, create::CreateOptions, list::ListFormat, Context};
use crate::fault::Faults;
use crate::logging::{LogFormat, Logger};
use crate::policy::{keys, Policy};

/// The OCI runtime-spec version rloxsc implements.
pub const SPEC_VERSION: &str = "1.2.0";

/// rloxsc: a hardened, runc-compatible OCI container runtime.
#[derive(Debug, Parser)]
#[command(name = "rloxsc", disable_version_flag = true)]
pub struct Cli {
    /// Root directory for container state.
    #[arg(long, global = true, default_value = "/run/rloxsc")]
    pub root: PathBuf,
    /// Log file (created even when nothing goes wrong).
    #[arg(long, global = true)]
    pub log: Option<PathBuf>,
    /// Log format.
    #[arg(long = "log-format", global = true, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Debug logging.
    #[arg(long, global = true)]
    pub debug: bool,
    /// The systemd cgroup driver: the container's cgroup is a transient systemd scope named by its
    /// `slice:prefix:name` cgroups path (needs systemd as PID 1 and pure cgroup v2).
    #[arg(long = "systemd-cgroup", global = true)]
    pub systemd_cgroup: bool,
    /// Accepted for compatibility (checkpointing is not supported).
    #[arg(long, global = true, hide = true)]
    pub criu: Option<String>,
    /// runc's `--rootless [true|false|auto]` (global) and `spec --rootless`: rootless mode is not
    /// supported yet, so anything but `false`/`auto` is refused.
    #[arg(long, global = true, num_args = 0..=1, default_missing_value = "true")]
    pub rootless: Option<String>,
    /// Policy file (default /etc/rloxsc/policy.toml, or $RLOXSC_POLICY).
    #[arg(long, global = true)]
    pub policy: Option<PathBuf>,
    /// Print version information.
    #[arg(short = 'v', long = "version")]
    pub version: bool,
    /// The verb.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Arguments of `create` shared with `run`.
#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// Path to the bundle directory.
    #[arg(short = 'b', long, default_value = ".")]
    pub bundle: PathBuf,
    /// Unix socket to receive the pty master of a terminal container.
    #[arg(long = "console-socket")]
    pub console_socket: Option<PathBuf>,
    /// File to write the container's init pid to.
    #[arg(long = "pid-file")]
    pub pid_file: Option<PathBuf>,
    /// Refused: pivot_root is what keeps the host's filesystem out of reach.
    #[arg(long = "no-pivot")]
    pub no_pivot: bool,
    /// Accepted: rloxsc always gives the container a new session keyring (and denies keyring syscalls).
    #[arg(long = "no-new-keyring")]
    pub no_new_keyring: bool,
    /// Number of extra file descriptors (from 3) passed to the container.
    #[arg(long = "preserve-fds", default_value_t = 0)]
    pub preserve_fds: i32,
    /// Kill the container once all its processes together used this much CPU time (e.g. 1s, 500ms).
    #[arg(long = "cpu-time")]
    pub cpu_time: Option<String>,
    /// RLIMIT_FSIZE of every process of the container (bytes, or with K, M, G).
    #[arg(long = "file-size")]
    pub file_size: Option<String>,
    /// Container id.
    pub id: String,
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a container (hardened and verified); its process waits for `start`.
    Create(CreateArgs),
    /// Start a created container.
    Start {
        /// Container id.
        id: String,
    },
    /// Create, start and wait for a container; exits with its status.
    Run {
        #[command(flatten)]
        create: CreateArgs,
        /// Do not wait: print nothing and exit once the container runs.
        #[arg(short = 'd', long)]
        detach: bool,
        /// Kill every process of the container after this wall time (e.g. 30s, 500ms); exit status 124.
        #[arg(long)]
        timeout: Option<String>,
        /// Write the run's record (exit, status, times, peak memory, OOM, pids limit) as JSON here.
        #[arg(long)]
        record: Option<PathBuf>,
        /// Do not delete the container after it exits (`delete` removes it).
        #[arg(long)]
        keep: bool,
        /// Pass at most this much of the container's stdout and stderr (bytes, or with K, M, G) to
        /// the caller, then kill the container (record status `output_limit_exceeded`).
        #[arg(long)]
        output: Option<String>,
    },
    /// Print a container's state as JSON.
    State {
        /// Container id.
        id: String,
    },
    /// Send a signal (default SIGTERM) to a container.
    Kill {
        /// Send it to every process of the container.
        #[arg(short = 'a', long)]
        all: bool,
        /// Container id.
        id: String,
        /// Signal: a name with or without SIG, or a number.
        #[arg(default_value = "SIGTERM")]
        signal: String,
    },
    /// Delete a container and everything rloxsc created for it.
    Delete {
        /// Kill and delete a running container; clean up after a create killed halfway.
        #[arg(short = 'f', long)]
        force: bool,
        /// Container id.
        id: String,
    },
    /// List containers.
    List {
        /// Output format.
        #[arg(short = 'f', long, value_enum, default_value = "table")]
        format: ListFormat,
        /// Print only ids.
        #[arg(short = 'q', long)]
        quiet: bool,
    },
    /// Write a hardened config.json.
    Spec {
        /// Directory to write config.json in.
        #[arg(short = 'b', long, default_value = ".")]
        bundle: PathBuf,
    },
    /// Print the OCI features document.
    Features,
    /// Show the effective policy, or check what rloxsc would do to a config.
    Policy {
        #[command(subcommand)]
        action: PolicyAction,
    },
    /// Check the host for what rloxsc needs.
    Doctor {
        /// Make the host settings rloxsc can make itself (Podman's subordinate id ranges).
        #[arg(long)]
        fix: bool,
    },
    /// Run a new process in a running container, with the init's containment.
    Exec(crate::commands::exec::ExecOptions),
    /// List the processes of a container.
    Ps {
        /// Output format.
        #[arg(short = 'f', long, value_enum, default_value = "table")]
        format: crate::commands::ps::PsFormat,
        /// Container id.
        id: String,
        /// Options for the host's ps (table format).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        ps_args: Vec<String>,
    },
    /// Freeze every process of a container.
    Pause {
        /// Container id.
        id: String,
    },
    /// Thaw a paused container.
    Resume {
        /// Container id.
        id: String,
    },
    /// Change a container's resources (never beyond the policy's ceilings).
    Update(UpdateArgs),
    /// Stream stats and OOM events of a container.
    Events {
        /// Print one stats event and exit.
        #[arg(long)]
        stats: bool,
        /// Interval between stats events.
        #[arg(long, default_value = "5s")]
        interval: String,
        /// Container id.
        id: String,
    },
    /// Not supported.
    Checkpoint(Unimplemented),
    /// Not supported.
    Restore(Unimplemented),
}

/// `policy` subcommands.
#[derive(Debug, Subcommand)]
pub enum PolicyAction {
    /// Print the effective policy.
    Show,
    /// Print what rloxsc would change in or refuse about a bundle or config.json (no root needed).
    Check {
        /// A bundle directory or a config.json.
        path: PathBuf,
    },
}

/// Arguments of `update`, runc's flags.
#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    /// Resources as JSON from a file, or `-` for stdin.
    #[arg(short = 'r', long)]
    pub resources: Option<String>,
    /// Memory limit (bytes, or with k/m/g suffix; -1: unlimited, clamped to the policy's ceiling).
    #[arg(short = 'm', long, value_parser = parse_bytes, allow_hyphen_values = true)]
    pub memory: Option<i64>,
    /// Memory+swap limit (-1: unlimited; never above the memory limit).
    #[arg(long = "memory-swap", value_parser = parse_bytes, allow_hyphen_values = true)]
    pub memory_swap: Option<i64>,
    /// Memory reservation (-1: none).
    #[arg(long = "memory-reservation", value_parser = parse_bytes, allow_hyphen_values = true)]
    pub memory_reservation: Option<i64>,
    /// Accepted and ignored (kernel memory limits are obsolete).
    #[arg(long = "kernel-memory", hide = true)]
    pub kernel_memory: Option<String>,
    /// Accepted and ignored.
    #[arg(long = "kernel-memory-tcp", hide = true)]
    pub kernel_memory_tcp: Option<String>,
    /// pids limit.
    #[arg(long = "pids-limit", allow_hyphen_values = true)]
    pub pids_limit: Option<i64>,
    /// CFS quota.
    #[arg(long = "cpu-quota", allow_hyphen_values = true)]
    pub cpu_quota: Option<i64>,
    /// CFS period.
    #[arg(long = "cpu-period")]
    pub cpu_period: Option<u64>,
    /// CPU shares.
    #[arg(long = "cpu-share", alias = "cpu-shares")]
    pub cpu_shares: Option<u64>,
    /// CPU realtime period (cgroup v1).
    #[arg(long = "cpu-rt-period")]
    pub cpu_rt_period: Option<u64>,
    /// CPU realtime runtime (cgroup v1).
    #[arg(long = "cpu-rt-runtime", allow_hyphen_values = true)]
    pub cpu_rt_runtime: Option<i64>,
    /// cpuset cpus.
    #[arg(long = "cpuset-cpus")]
    pub cpuset_cpus: Option<String>,
    /// cpuset mems.
    #[arg(long = "cpuset-mems")]
    pub cpuset_mems: Option<String>,
    /// The egress allowlist of an `inbound-only` container (addresses or CIDRs with an optional
    /// port, comma-separated; "" closes the network), never wider than its policy's
    /// `network.egress_allow`.
    #[arg(long = "egress-allow")]
    pub egress_allow: Option<String>,
    /// Accepted and ignored (blkio weight).
    #[arg(long = "blkio-weight", hide = true)]
    pub blkio_weight: Option<u64>,
    /// Container id.
    pub id: String,
}

/// Parses a byte count (`crate::size`'s grammar, as runc's flags take it); -1 means unlimited.
pub fn parse_bytes(s: &str) -> std::result::Result<i64, String> {
    if s.trim() == "-1" {
        return Ok(-1);
    }
    crate::size::parse(s)
        .and_then(|v| i64::try_from(v).ok())
        .ok_or_else(|| format!("invalid size {s:?}"))
}

/// What a verb does, as far as the runtime's own safety is concerned. Decided in one place,
/// [`Command::traits`], by a match without a wildcard arm: a new verb does not compile until someone
/// says whether it starts container processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerbTraits {
    /// It puts clones of this process into a container (create, run, exec), so it runs from the
    /// sealed binary (CVE-2019-5736).
    pub starts_container_processes: bool,
    /// It starts or widens a container, so an invalid policy file refuses it.
    pub widens: bool,
    /// It only prints: a closed stdout ends it quietly (SIGPIPE's default disposition).
    pub prints_only: bool,
    /// It reads or changes the state under `--root`, which must then be root's alone.
    pub uses_state: bool,
}

impl Command {
    /// The traits of this verb.
    pub fn traits(&self) -> VerbTraits {
        let t = |starts, widens, prints_only, uses_state| VerbTraits {
            starts_container_processes: starts,
            widens,
            prints_only,
            uses_state,
        };
        match self {
            Command::Create(_) | Command::Run { .. } | Command::Exec(_) => {
                t(true, true, false, true)
            }
            Command::Start { .. } | Command::Update(_) => t(false, true, false, true),
            Command::Spec { .. } => t(false, true, false, false),
            Command::Policy { .. } => t(false, true, true, false),
            Command::State { .. }
            | Command::List { .. }
            | Command::Ps { .. }
            | Command::Events { .. } => t(false, false, true, true),
            Command::Features | Command::Doctor { .. } => t(false, false, true, false),
            Command::Kill { .. }
            | Command::Delete { .. }
            | Command::Pause { .. }
            | Command::Resume { .. } => t(false, false, false, true),
            Command::Checkpoint(_) | Command::Restore(_) => t(false, false, false, false),
        }
    }
}

/// Any arguments, for verbs that answer with a clear "not implemented" error.
#[derive(Debug, clap::Args)]
pub struct Unimplemented {
    /// Ignored.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// The `--version` text, in runc's three-line form that go-runc parses.
pub fn version_text() -> String {
    format!(
        "rloxsc version {}\ncommit: {}\nspec: {}",
        env!("CARGO_PKG_VERSION"),
        option_env!("RLOXSC_GIT_COMMIT").unwrap_or("unknown"),
        SPEC_VERSION
    )
}

/// Global flags that take a value (so the word after them is not the verb).
const GLOBAL_FLAGS_WITH_VALUE: &[&str] = &["--root", "--log", "--log-format", "--policy", "--criu"];

/// What `-h`/`--help` asks for, when it comes right after the global flags (`rloxsc -h`) or right
/// after the verb (`rloxsc delete -h`), and `rloxsc help [VERB]`: `Some(None)` for the whole program,
/// `Some(Some(verb))` for one verb. Help asked for anywhere else is clap's.
fn help_request(args: &[String]) -> Option<Option<String>> {
    let is_help = |a: &str| a == "-h" || a == "--help";
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if is_help(a) {
            return Some(None);
        }
        if GLOBAL_FLAGS_WITH_VALUE.contains(&a) {
            i += 2;
            continue;
        }
        if a.starts_with('-') {
            i += 1;
            continue;
        }
        let next = args.get(i + 1).map(String::as_str);
        if a == "help" {
            return Some(next.map(str::to_string));
        }
        return next.filter(|n| is_help(n)).map(|_| Some(a.to_string()));
    }
    None
}

/// runc's help text (urfave/cli's layout: `NAME:`, `USAGE:`, `COMMANDS:` / `OPTIONS:`), made from the
/// same clap definitions that parse the command line; `Err` for a verb that does not exist, worded as
/// runc words it.
fn help_text(verb: Option<&str>) -> std::result::Result<String, String> {
    use clap::CommandFactory;
    use std::fmt::Write as _;
    let app = Cli::command();
    let name = app.get_name().to_string();
    let mut out = String::new();
    let options = |out: &mut String, cmd: &clap::Command, title: &str| {
        let rows: Vec<(String, String)> = cmd
            .get_arguments()
            .filter(|a| !a.is_positional() && !a.is_hide_set())
            .filter_map(|a| {
                let long = a.get_long()?;
                let mut flag = format!("--{long}");
                if let Some(sh) = a.get_short() {
                    let _ = write!(flag, ", -{sh}");
                }
                if a.get_action().takes_values() {
                    flag.push_str(" value");
                }
                Some((
                    flag,
                    a.get_help().map(|h| h.to_string()).unwrap_or_default(),
                ))
            })
            .collect();
        if rows.is_empty() {
            return;
        }
        let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        let _ = writeln!(out, "\n{title}:");
        for (f, h) in rows {
            let _ = writeln!(out, "   {f:width$}  {h}");
        }
    };
    match verb {
        None => {
            let about = "Open Container Initiative runtime, hardened (called exactly like runc)";
            let _ = writeln!(out, "NAME:\n   {name} - {about}\n");
            let _ = writeln!(
                out,
                "USAGE:\n   {name} [global options] command [command options] [arguments...]\n"
            );
            let _ = writeln!(
                out,
                "VERSION:\n   {}\n",
                version_text().replace('\n', "\n   ")
            );
            let _ = writeln!(out, "COMMANDS:");
            let cmds: Vec<&clap::Command> = app.get_subcommands().collect();
            let width = cmds.iter().map(|c| c.get_name().len()).max().unwrap_or(0);
            for c in cmds {
                let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
                let _ = writeln!(out, "   {:width$}  {about}", c.get_name());
            }
            let _ = writeln!(
                out,
                "   {:width$}  Shows a list of commands or help for one command",
                "help"
            );
            options(&mut out, &app, "GLOBAL OPTIONS");
        }
        Some(v) => {
            let Some(cmd) = app.find_subcommand(v) else {
                return Err(format!("No help topic for '{v}'"));
            };
            let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
            let _ = writeln!(out, "NAME:\n   {name} {v} - {about}\n");
            let positional: Vec<String> = cmd
                .get_arguments()
                .filter(|a| a.is_positional())
                .map(|a| match a.get_id().as_str() {
                    "id" => "<container-id>".to_string(),
                    other => format!("[{other}...]"),
                })
                .collect();
            let _ = writeln!(
                out,
                "USAGE:\n   {name} {v} [command options] {}",
                positional.join(" ")
            );
            options(&mut out, cmd, "OPTIONS");
        }
    }
    Ok(out)
}

/// Parses the command line, runs the verb and returns the process exit status.
pub fn main() -> i32 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(crate::limits::cpu::WATCH_ARG) {
        return crate::limits::cpu::watch_main(&args);
    }
    if let Some(verb) = help_request(&args) {
        // SAFETY: single-threaded at this point; restores the default disposition of one signal
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        return match help_text(verb.as_deref()) {
            Ok(text) => {
                print!("{text}");
                0
            }
            Err(e) => {
                eprintln!("{e}");
                3
            }
        };
    }
    let cli = Cli::parse();
    let traits = cli.command.as_ref().map(Command::traits);
    // Rust ignores SIGPIPE, so `println!` panics when the reader has gone (`rloxsc list -q | grep -q`):
    // verbs that only print end quietly instead, like any Unix tool (never those that own a container)
    if cli.version || traits.is_some_and(|t| t.prints_only) {
        // SAFETY: single-threaded at this point; restores the default disposition of one signal
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    if cli.version {
        println!("{}", version_text());
        return 0;
    }
    let logger = match Logger::init(cli.log.as_deref(), cli.log_format, cli.debug) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("rloxsc: {e:#}");
            return 1;
        }
    };
    // every verb that puts a clone of this process into a container: `exec` too, whose tenant process
    // joins the container's pid namespace, and whose `#!/proc/self/exe` payload would otherwise run
    // (and let the container reopen for writing) the unsealed binary (CVE-2019-5736)
    // runc's `exec` fails with 255, so that callers can tell its own failures from the exit status of
    // the process it ran (`exec ID false` exits 1)
    let failed = if matches!(cli.command, Some(Command::Exec(_))) {
        255
    } else {
        1
    };
    // without the host's root there is no containment to give (no id pool, no cgroups, no trusted
    // state): refused with the reason before anything else is looked at
    if traits.is_some_and(|t| t.uses_state || t.starts_container_processes) {
        if let Some(why) = crate::rootless::reason() {
            logger.error(&crate::rootless::refusal(&why));
            return failed;
        }
    }
    if traits.is_some_and(|t| t.starts_container_processes) {
        if let Err(e) = crate::exeseal::ensure_sealed(&cli.root.join("empty")) {
            logger.error(&format!(
                "refusing to create container processes: {e:#} (policy key {})",
                keys::EXE_SEAL
            ));
            return failed;
        }
    }
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            logger.error(&format!("{e:#}"));
            failed
        }
    }
}

/// Runs the verb of a parsed command line; returns the process exit status.
fn dispatch(cli: Cli) -> Result<i32> {
    let (ctx, policy_source) = build_context(&cli)?;
    if cli
        .rootless
        .as_deref()
        .is_some_and(|v| v != "false" && v != "auto")
    {
        bail!("--rootless is not supported yet: rloxsc runs as root");
    }
    let driver = if cli.systemd_cgroup {
        crate::cgroups::Driver::Systemd
    } else {
        crate::cgroups::Driver::Cgroupfs
    };
    let Some(command) = cli.command else {
        bail!("no command given; see rloxsc --help");
    };
    match command {
        Command::Create(a) => commands::create::create(&ctx, &create_options(&a, true, driver)?)?,
        Command::Start { id } => commands::start::start(&ctx, &id)?,
        Command::Run {
            create,
            detach,
            timeout,
            record,
            keep,
            output,
        } => {
            let extra = run_options(output, timeout, record, keep)?;
            return commands::run::run(&ctx, create_options(&create, detach, driver)?, extra);
        }
        Command::State { id } => commands::state::state(&ctx, &id)?,
        Command::Kill { all, id, signal } => commands::kill::kill(&ctx, &id, &signal, all)?,
        Command::Delete { force, id } => commands::delete::delete(&ctx, &id, force)?,
        Command::List { format, quiet } => commands::list::list(&ctx, format, quiet)?,
        Command::Spec { bundle } => commands::spec::spec(&ctx, &bundle)?,
        Command::Features => commands::features::features(&ctx)?,
        Command::Policy {
            action: PolicyAction::Show,
        } => commands::policy::show(&ctx, policy_source.as_deref())?,
        Command::Policy {
            action: PolicyAction::Check { path },
        } => return commands::policy::check(&ctx, &path),
        Command::Doctor { fix } => return commands::doctor::doctor(fix),
        Command::Exec(opts) => {
            if opts.preserve_fds < 0 {
                bail!("--preserve-fds must not be negative");
            }
            return commands::exec::exec(&ctx, &opts);
        }
        Command::Ps {
            format,
            id,
            ps_args,
        } => commands::ps::ps(&ctx, &id, format, &ps_args)?,
        Command::Pause { id } => commands::pause::pause(&ctx, &id)?,
        Command::Resume { id } => commands::pause::resume(&ctx, &id)?,
        Command::Update(a) => update_verb(&ctx, &a)?,
        Command::Events {
            stats,
            interval,
            id,
        } => {
            let interval = crate::duration::parse_interval(&interval)?;
            commands::events::events(&ctx, &id, stats, interval)?
        }
        Command::Checkpoint(_) | Command::Restore(_) => {
            bail!("rloxsc does not support checkpoint/restore")
        }
    }
    Ok(0)
}

/// The verbs' context (state layout, policy, faults) and where the policy came from; refuses an
/// untrusted state root, and an unusable policy file for verbs that start or widen a container.
fn build_context(cli: &Cli) -> Result<(Context, Option<PathBuf>)> {
    // root's rloxsc acts on state (pids, cgroup paths, bundles) it reads from --root: only a root
    // could have written it
    // SAFETY: geteuid has no preconditions
    if unsafe { libc::geteuid() } == 0
        && cli.command.as_ref().is_some_and(|c| c.traits().uses_state)
    {
        crate::trust::require_root_only(&cli.root, "state root")?;
    }
    // an invalid or unreadable policy file refuses everything that starts or widens a container;
    // inspecting and cleaning up existing containers stays possible
    let (policy, policy_source) = match crate::policy_file::load(cli.policy.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            if cli.command.as_ref().is_none_or(|c| c.traits().widens) {
                return Err(e.context("refusing to run anything until the policy file is fixed"));
            }
            tracing::warn!("{e:#}; using the built-in policy for this cleanup verb");
            (Policy::default(), None)
        }
    };
    let ctx = Context {
        layout: Layout::new(&cli.root),
        policy,
        faults: Faults::from_env(),
    };
    Ok((ctx, policy_source))
}

/// `run`'s own options (`--output`, `--timeout`, `--record`, `--keep`), parsed.
fn run_options(
    output: Option<String>,
    timeout: Option<String>,
    record: Option<PathBuf>,
    keep: bool,
) -> Result<commands::run::RunOptions> {
    Ok(commands::run::RunOptions {
        output: output
            .as_deref()
            .map(|v| {
                crate::size::parse(v)
                    .filter(|&n| n > 0)
                    .ok_or_else(|| anyhow::anyhow!("invalid --output {v:?} (e.g. 1M)"))
            })
            .transpose()?,
        timeout: timeout
            .as_deref()
            .map(crate::duration::parse_duration)
            .transpose()?,
        record,
        keep,
    })
}

/// `update`: applies the resource flags (or `--resources`) unless only `--egress-allow` is given,
/// then the egress allow list.
fn update_verb(ctx: &Context, a: &UpdateArgs) -> Result<()> {
    let flags = update_flags(a);
    let resources_given = a.resources.is_some()
        || commands::update::apply_flags(Default::default(), &flags) != Default::default();
    if a.egress_allow.is_none() || resources_given {
        commands::update::update(ctx, &a.id, a.resources.as_deref(), &flags)?;
    }
    if let Some(list) = &a.egress_allow {
        commands::update::egress(ctx, &a.id, list)?;
    }
    Ok(())
}

/// The resource flags of `update` (runc's `--memory`, `--cpu-quota` and so on).
fn update_flags(a: &UpdateArgs) -> commands::update::UpdateFlags {
    commands::update::UpdateFlags {
        memory: a.memory,
        memory_swap: a.memory_swap,
        memory_reservation: a.memory_reservation,
        pids_limit: a.pids_limit,
        cpu_quota: a.cpu_quota,
        cpu_period: a.cpu_period,
        cpu_shares: a.cpu_shares,
        cpu_rt_period: a.cpu_rt_period,
        cpu_rt_runtime: a.cpu_rt_runtime,
        cpuset_cpus: a.cpuset_cpus.clone(),
        cpuset_mems: a.cpuset_mems.clone(),
    }
}

fn create_options(
    a: &CreateArgs,
    detach: bool,
    cgroup_driver: crate::cgroups::Driver,
) -> Result<CreateOptions> {
    if a.no_pivot {
        bail!("--no-pivot is refused: without pivot_root the host's root filesystem stays reachable from the container (policy key {})", keys::CLI);
    }
    if a.no_new_keyring {
        tracing::info!("--no-new-keyring ignored: the container gets a new session keyring and keyring syscalls are denied");
    }
    if a.preserve_fds < 0 {
        bail!("--preserve-fds must not be negative");
    }
    let limits = crate::limits::Requested {
        cpu_time: a
            .cpu_time
            .as_deref()
            .map(crate::duration::parse_duration)
            .transpose()?,
        file_size: a
            .file_size
            .as_deref()
            .map(|v| {
                crate::size::parse(v)
                    .filter(|&n| n > 0)
                    .ok_or_else(|| anyhow::anyhow!("invalid --file-size {v:?} (e.g. 2M, 1048576)"))
            })
            .transpose()?,
    };
    Ok(CreateOptions {
        limits,
        stdio: None,
        id: a.id.clone(),
        bundle: a.bundle.clone(),
        pid_file: a.pid_file.clone(),
        console_socket: a.console_socket.clone(),
        preserve_fds: a.preserve_fds,
        detach,
        allocate_terminal: !detach,
        die_with_runtime: false,
        deadline: None,
        cgroup_driver,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_docker_create_argv() {
        let c = Cli::try_parse_from([
            "rloxsc",
            "--root",
            "/var/run/docker/runtime-runc/moby",
            "--log",
            "/x/log.json",
            "--log-format",
            "json",
            "create",
            "--bundle",
            "/b",
            "--pid-file",
            "/b/init.pid",
            "abc",
        ])
        .unwrap();
        assert_eq!(c.log_format, LogFormat::Json);
        assert!(
            matches!(c.command, Some(Command::Create(ref a)) if a.id == "abc" && a.pid_file.is_some())
        );
    }

    #[test]
    fn parses_podman_argv_with_equals() {
        let c = Cli::try_parse_from([
            "rloxsc",
            "--log-format=json",
            "--log",
            "/l",
            "create",
            "--bundle",
            "/b",
            "--pid-file",
            "/p",
            "--console-socket",
            "/s",
            "id1",
        ])
        .unwrap();
        assert!(matches!(c.command, Some(Command::Create(ref a)) if a.console_socket.is_some()));
    }

    #[test]
    fn parses_kill_forms() {
        let c = Cli::try_parse_from(["rloxsc", "kill", "--all", "id", "9"]).unwrap();
        assert!(
            matches!(c.command, Some(Command::Kill { all: true, ref signal, .. }) if signal == "9")
        );
        let c = Cli::try_parse_from(["rloxsc", "kill", "id"]).unwrap();
        assert!(matches!(c.command, Some(Command::Kill { ref signal, .. }) if signal == "SIGTERM"));
    }

    #[test]
    fn spec_and_global_rootless_parse() {
        let c = Cli::try_parse_from(["rloxsc", "spec", "--rootless"]).unwrap();
        assert_eq!(c.rootless.as_deref(), Some("true"));
        let c = Cli::try_parse_from(["rloxsc", "--rootless", "false", "state", "x"]).unwrap();
        assert_eq!(c.rootless.as_deref(), Some("false"));
        Cli::try_parse_from(["rloxsc", "spec", "--bundle", "/b"]).unwrap();
    }

    #[test]
    fn help_is_in_runcs_layout_for_the_program_every_verb_and_an_unknown_verb() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(help_request(&a(&["-h"])), Some(None));
        assert_eq!(help_request(&a(&["--root", "/r", "--help"])), Some(None));
        assert_eq!(
            help_request(&a(&["delete", "-h"])),
            Some(Some("delete".into()))
        );
        assert_eq!(
            help_request(&a(&["--log", "-h", "delete", "-h"])),
            Some(Some("delete".into()))
        );
        assert_eq!(
            help_request(&a(&["help", "exec"])),
            Some(Some("exec".into()))
        );
        assert_eq!(help_request(&a(&["exec", "id", "sh", "-h"])), None);
        assert_eq!(help_request(&a(&["state", "id"])), None);
        let top = help_text(None).unwrap();
        let lines: Vec<&str> = top.lines().collect();
        assert_eq!(lines[0], "NAME:");
        assert!(
            lines[1].starts_with("   rloxsc - Open Container Initiative runtime"),
            "{top}"
        );
        assert!(
            top.contains("\nCOMMANDS:\n") && top.contains("\nGLOBAL OPTIONS:\n"),
            "{top}"
        );
        for v in [
            "checkpoint",
            "create",
            "delete",
            "events",
            "exec",
            "kill",
            "list",
            "pause",
            "ps",
            "restore",
            "resume",
            "run",
            "spec",
            "start",
            "state",
            "update",
        ] {
            let h = help_text(Some(v)).unwrap();
            let lines: Vec<&str> = h.lines().collect();
            assert_eq!(lines[0], "NAME:", "{v}: {h}");
            assert!(
                lines[1].starts_with(&format!("   rloxsc {v} - ")),
                "{v}: {h}"
            );
            assert!(h.contains("\nUSAGE:\n"), "{v}: {h}");
        }
        assert!(help_text(Some("delete")).unwrap().contains("--force, -f"));
        assert_eq!(
            help_text(Some("foo")).unwrap_err(),
            "No help topic for 'foo'"
        );
    }

    #[test]
    fn version_has_three_runc_lines() {
        let v = version_text();
        let lines: Vec<&str> = v.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("rloxsc version "));
        assert!(lines[1].starts_with("commit: "));
        assert!(lines[2].starts_with("spec: 1."));
    }

    #[test]
    fn only_create_run_and_exec_start_container_processes() {
        for argv in [
            vec!["rloxsc", "create", "x"],
            vec!["rloxsc", "run", "x"],
            vec!["rloxsc", "exec", "x", "sh"],
        ] {
            let c = Cli::try_parse_from(&argv).unwrap().command.unwrap();
            assert!(c.traits().starts_container_processes, "{argv:?}");
            assert!(c.traits().widens, "{argv:?}");
        }
        for argv in [
            vec!["rloxsc", "start", "x"],
            vec!["rloxsc", "kill", "x"],
            vec!["rloxsc", "delete", "x"],
            vec!["rloxsc", "state", "x"],
            vec!["rloxsc", "list"],
            vec!["rloxsc", "update", "x"],
            vec!["rloxsc", "ps", "x"],
        ] {
            let c = Cli::try_parse_from(&argv).unwrap().command.unwrap();
            assert!(!c.traits().starts_container_processes, "{argv:?}");
        }
    }

    #[test]
    fn no_pivot_is_refused() {
        let a = CreateArgs {
            bundle: ".".into(),
            console_socket: None,
            pid_file: None,
            no_pivot: true,
            no_new_keyring: false,
            preserve_fds: 0,
            cpu_time: None,
            file_size: None,
            id: "x".into(),
        };
        assert!(create_options(&a, true, crate::cgroups::Driver::Cgroupfs)
            .unwrap_err()
            .to_string()
            .contains("--no-pivot is refused"));
    }
}
