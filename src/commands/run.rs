//! `run`: create, start and (unless `--detach`) wait for the container in one process, forwarding
//! signals to it; the exit status is the container's (128+N when a signal ended it). The container is
//! deleted when it ends. `--timeout` kills every process of the container when the wall time is up
//! (exit status 124); `--record FILE` writes the run's record (see [`crate::record`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use nix::errno::Errno;
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;

use super::create::{cleanup_failed_create, create_with_console, CreateOptions};
use super::start::start_checked;
use super::Context;
use crate::record::{read_cgroup, Ending, Limits, RunRecord};

static PENDING: AtomicI32 = AtomicI32::new(0);
static TIMER_FIRED: AtomicBool = AtomicBool::new(false);

/// Exit status of a `run` that rloxsc ended because `--timeout` passed (as timeout(1)).
pub const TIMEOUT_EXIT: i32 = 124;

extern "C" fn remember(sig: libc::c_int) {
    if sig == libc::SIGALRM {
        TIMER_FIRED.store(true, Ordering::SeqCst);
    } else {
        PENDING.store(sig, Ordering::SeqCst);
    }
}

/// Signals a foreground `run` forwards to the container.
const FORWARDED: &[Signal] = &[
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
];

fn install_forwarding() -> Result<()> {
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
    Ok(())
}

fn arm_timer(d: Duration) -> Result<()> {
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
    // SAFETY: setitimer with a valid struct.
    if unsafe { libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut()) } != 0 {
        bail!(
            "cannot arm the timeout: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Parses a duration: `30`, `1.5s`, `500ms`, `2m`, `1h`.
pub fn parse_duration(s: &str) -> Result<Duration> {
    crate::commands::events::parse_interval(s)
        .map_err(|_| anyhow!("invalid duration {s:?} (e.g. 30s, 500ms, 2m)"))
}

/// Options of `run` beyond create's.
#[derive(Debug, Default)]
pub struct RunOptions {
    /// Kill the whole container after this wall time.
    pub timeout: Option<Duration>,
    /// Write the run's record here.
    pub record: Option<PathBuf>,
}

/// Runs the container described by `opts`; returns the exit status `rloxsc run` should exit with.
pub fn run(ctx: &Context, opts: CreateOptions, extra: RunOptions) -> Result<i32> {
    let id = opts.id.clone();
    if opts.detach && (extra.timeout.is_some() || extra.record.is_some()) {
        bail!("--timeout and --record need a foreground run (not --detach)");
    }
    let t0 = Instant::now();
    let (c, console) = create_with_console(ctx, &opts)?;
    let pid = c
        .pid()
        .ok_or_else(|| anyhow!("container {id:?} has no init pid"))?;
    let master = match &console {
        Some(sock) => match sock.receive_master() {
            Ok(m) => Some(m),
            Err(e) => {
                cleanup_failed_create(ctx, &id);
                return Err(e.context("cannot set up the container's terminal"));
            }
        },
        None => None,
    };
    if !opts.detach {
        install_forwarding()?;
    }
    // create verified the container a moment ago in this very process
    if let Err(e) = start_checked(ctx, &id, false) {
        cleanup_failed_create(ctx, &id);
        return Err(e);
    }
    if opts.detach {
        return Ok(0);
    }
    if let Some(t) = extra.timeout {
        arm_timer(t.saturating_sub(t0.elapsed()).max(Duration::from_millis(1)))?;
    }
    tracing::debug!("run {id}: started at {:?}", t0.elapsed());
    let (_raw, output) = match master {
        Some(m) => {
            crate::tty::copy_window_size(&m);
            let raw = crate::tty::RawMode::enter();
            (Some(raw), Some(crate::tty::proxy(m)?))
        }
        None => (None, None),
    };
    let ending = wait_forwarding(pid, Some((ctx, id.as_str())));
    finish_output(output);
    let wall = t0.elapsed();
    tracing::debug!("run {id}: container ended at {:?}", wall);
    let timed_out = TIMER_FIRED.load(Ordering::SeqCst);
    if let (Some(path), Ok(ending)) = (&extra.record, &ending) {
        if let Err(e) = write_record(ctx, &id, *ending, timed_out, wall, extra.timeout, path) {
            tracing::warn!("container {id}: cannot write the run record: {e:#}");
            eprintln!(
                "rloxsc: cannot write the run record {}: {e:#}",
                path.display()
            );
        }
    }
    if let Err(e) = super::delete::delete(ctx, &id, true) {
        tracing::warn!("container {id}: cleanup after run failed: {e:#}");
    }
    tracing::debug!("run {id}: deleted at {:?}", t0.elapsed());
    let ending = ending?;
    if timed_out {
        return Ok(TIMEOUT_EXIT);
    }
    Ok(match ending {
        Ending::Exited(c) => c,
        Ending::Signaled(s) => 128 + s,
    })
}

fn write_record(
    ctx: &Context,
    id: &str,
    ending: Ending,
    timed_out: bool,
    wall: Duration,
    timeout: Option<Duration>,
    path: &std::path::Path,
) -> Result<()> {
    let spec = ctx.layout.read_spec(id)?;
    let cg = spec
        .linux()
        .as_ref()
        .and_then(|l| l.cgroups_path().clone())
        .context("no cgroup path")?;
    let readings = read_cgroup(&cg);
    let limits = Limits {
        pids: crate::harden::resources::pids_limit(&spec),
        memory_bytes: crate::harden::resources::memory_limit(&spec),
        timeout_s: timeout.map(|t| t.as_secs_f64()),
    };
    let tightenings = ctx
        .layout
        .read_meta(id)
        .map(|m| m.changes)
        .unwrap_or_default();
    let rec = RunRecord::new(
        id,
        ending,
        timed_out,
        wall.as_secs_f64(),
        &readings,
        limits,
        tightenings,
    );
    let tmp = path.with_extension(format!("rloxsc-tmp-{}", std::process::id()));
    let mut json = serde_json::to_vec_pretty(&rec)?;
    json.push(b'\n');
    std::fs::write(&tmp, json).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// Lets the terminal's output thread drain what the process wrote (bounded: a process left behind in
/// the container may keep the terminal open).
pub fn finish_output(output: Option<std::thread::JoinHandle<()>>) {
    if let Some(h) = output {
        let deadline = Instant::now() + Duration::from_millis(500);
        while !h.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if h.is_finished() {
            let _ = h.join();
        }
    }
}

/// Forwards the usual signals to `pid` and waits for it; returns its exit status (128+N for signal N).
pub fn forward_and_wait(pid: Pid) -> Result<i32> {
    install_forwarding()?;
    Ok(match wait_forwarding(pid, None)? {
        Ending::Exited(c) => c,
        Ending::Signaled(s) => 128 + s,
    })
}

/// Waits for `pid`, forwarding signals; when the timeout fires, kills every process of container
/// `timeout_target` (the whole cgroup, not only the init) and keeps waiting.
fn wait_forwarding(pid: Pid, timeout_target: Option<(&Context, &str)>) -> Result<Ending> {
    let mut killed = false;
    loop {
        match waitpid(pid, None) {
            Ok(WaitStatus::Exited(_, code)) => return Ok(Ending::Exited(code)),
            Ok(WaitStatus::Signaled(_, sig, _)) => return Ok(Ending::Signaled(sig as i32)),
            Ok(_) => continue,
            Err(Errno::EINTR) => {
                if TIMER_FIRED.load(Ordering::SeqCst) && !killed {
                    killed = true;
                    if let Some((ctx, id)) = timeout_target {
                        tracing::info!("container {id}: --timeout passed, killing every process");
                        let pids = crate::container::pids(&ctx.layout, id).unwrap_or_default();
                        for p in pids {
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
                    "waiting for the container's init {pid} failed: {e}"
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("soon").is_err());
    }
}
