//! `run`: create, start and (unless `--detach`) wait for the container in one process, forwarding
//! signals to it; the exit status is the container's (128+N when a signal ended it). The container is
//! deleted when it ends, unless `--keep` asks to keep it (stopped, for `state`, until `delete`). `--timeout` kills every process of the container when the wall time is up
//! (exit status 124); `--record FILE` writes the run's record (see [`crate::record`]).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::Context;
use crate::launch::{self, CreateOptions, TerminalSession, Waiter};
use crate::record::{Ending, RunRecord};

/// Exit status of a `run` that rloxsc ended because `--timeout` passed (as timeout(1)).
pub const TIMEOUT_EXIT: i32 = 124;

/// Options of `run` beyond create's.
#[derive(Debug, Default)]
pub struct RunOptions {
    /// Kill the whole container after this wall time.
    pub timeout: Option<Duration>,
    /// Write the run's record here.
    pub record: Option<PathBuf>,
    /// Keep the stopped container (runc's `--keep`): `delete` removes it.
    pub keep: bool,
    /// `--output`: the bytes of stdout and stderr passed to the caller before the container is
    /// killed ([`crate::limits::output`]).
    pub output: Option<u64>,
}

/// Runs the container described by `opts`; returns the exit status `rloxsc run` should exit with.
/// `--timeout` counts from here: a create that does not finish in time is killed and recorded.
pub fn run(ctx: &Context, mut opts: CreateOptions, extra: RunOptions) -> Result<i32> {
    let id = opts.id.clone();
    refuse_detached_with(&opts, &extra)?;
    let pipes = extra
        .output
        .map(crate::limits::output::Pipes::new)
        .transpose()?;
    opts.stdio = pipes.as_ref().map(|p| p.writer_fds());
    let t0 = Instant::now();
    // a foreground run owns its container: if rloxsc is killed, its container dies with it
    opts.die_with_runtime = !opts.detach;
    opts.deadline = extra.timeout.map(|t| t0 + t);
    let created = match launch::create(ctx, &opts) {
        Ok(c) => c,
        Err(e) => return create_failed(&id, e, &extra, t0),
    };
    let (container, console, pid, guard, mut custodian) = created.split();
    let relay = pipes.map(|p| p.start(pid.as_raw())).transpose()?;
    let terminal = console.as_ref().map(TerminalSession::attach).transpose()?;
    let mut waiter = if opts.detach {
        None
    } else {
        Some(Waiter::install()?)
    };
    // create verified the container a moment ago in this very process, and returned it
    super::start::start_checked(ctx, &id, container, false)?;
    guard.disarm();
    let Some(waiter) = waiter.as_mut() else {
        return Ok(0);
    };
    if let Some(t) = extra.timeout {
        waiter.arm(t0 + t)?;
    }
    tracing::debug!("run {id}: started at {:?}", t0.elapsed());
    let ending = waiter.wait(pid, Some((&ctx.layout, id.as_str())));
    if let Some(t) = terminal {
        t.finish();
    }
    let output = relay.map(|r| (r.limit(), r.finish()));
    let wall = t0.elapsed();
    tracing::debug!("run {id}: container ended at {:?}", wall);
    let timed_out = waiter.timed_out();
    if let Ok(ending) = &ending {
        write_record(ctx, &id, *ending, timed_out, wall, &extra, output);
    }
    clean_up(ctx, &id, extra.keep);
    custodian.finish();
    tracing::debug!("run {id}: deleted at {:?}", t0.elapsed());
    let ending: Ending = ending?;
    if timed_out {
        return Ok(TIMEOUT_EXIT);
    }
    Ok(launch::exit_status(ending))
}

/// Refuses the options that need a foreground run (or contradict `--detach`) with `--detach`.
fn refuse_detached_with(opts: &CreateOptions, extra: &RunOptions) -> Result<()> {
    if opts.detach && (extra.timeout.is_some() || extra.record.is_some()) {
        bail!("--timeout and --record need a foreground run (not --detach)");
    }
    if opts.detach && extra.keep {
        bail!("--detach and --keep cannot both be given");
    }
    if opts.detach && extra.output.is_some() {
        bail!("--output needs a foreground run (not --detach)");
    }
    Ok(())
}

/// A failed create: a late one is recorded; one past `--timeout` ends the run with status 124.
fn create_failed(id: &str, e: anyhow::Error, extra: &RunOptions, t0: Instant) -> Result<i32> {
    let Some(late) = e.downcast_ref::<launch::CreateTimedOut>() else {
        return Err(e);
    };
    if let Some(path) = &extra.record {
        let rec = RunRecord::create_timed_out(
            id,
            late.by_run_timeout,
            t0.elapsed().as_secs_f64(),
            extra.timeout,
        );
        if let Err(w) = rec.write(path) {
            eprintln!(
                "rloxsc: cannot write the run record {}: {w:#}",
                path.display()
            );
        }
    }
    if late.by_run_timeout {
        tracing::info!("container {id}: {late}");
        eprintln!("rloxsc: {late}");
        return Ok(TIMEOUT_EXIT);
    }
    Err(e)
}

/// Writes the run's record where `--record` asks; failing to is reported but does not fail the run.
fn write_record(
    ctx: &Context,
    id: &str,
    ending: Ending,
    timed_out: bool,
    wall: Duration,
    extra: &RunOptions,
    output: Option<(u64, bool)>,
) {
    let Some(path) = &extra.record else {
        return;
    };
    let written = RunRecord::of_container(
        &ctx.layout,
        id,
        Some(ending),
        timed_out,
        wall.as_secs_f64(),
        extra.timeout,
        output,
    )
    .and_then(|r| r.write(path));
    if let Err(e) = written {
        tracing::warn!("container {id}: cannot write the run record: {e:#}");
        eprintln!(
            "rloxsc: cannot write the run record {}: {e:#}",
            path.display()
        );
    }
}

/// Deletes the ended container, unless `--keep` keeps it (a failure is logged).
fn clean_up(ctx: &Context, id: &str, keep: bool) {
    // the cleanup does not grow with what the container wrote (nothing is written back)
    if keep {
        tracing::debug!("run {id}: kept (--keep)");
    } else if let Err(e) = super::delete::delete(ctx, id, true) {
        tracing::warn!("container {id}: cleanup after run failed: {e:#}");
    }
}
