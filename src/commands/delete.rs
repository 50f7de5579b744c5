//! `delete`: remove a stopped (or, with `--force`, any) container, its cgroups, its state and rloxsc's
//! private bundle. With `--force` it also cleans up after a create that was killed halfway.

use anyhow::{bail, Result};
use libcontainer::container::Container;

use super::Context;
use crate::container;

/// Deletes container `id`: checks that it may be deleted (stopped, or `--force`), writes its record
/// where the policy keeps records, and gives back everything it holds through the one release
/// ([`crate::footprint::release`]), as a failed create does.
pub fn delete(ctx: &Context, id: &str, force: bool) -> Result<()> {
    container::validate_id(id)?;
    let dir = ctx.layout.container_dir(id);
    let has_state = dir.join("state.json").exists();
    let leftovers = dir.exists() || ctx.layout.bundle_dir(id).exists();
    if !has_state {
        // no libcontainer state: maybe a create killed halfway left rloxsc's bundle (its footprint)
        // or an empty dir; with --force, whatever a create killed before it wrote anything may hold
        if force {
            release(ctx, id)?;
            return Ok(());
        }
        if !leftovers {
            bail!("container {id:?} does not exist");
        }
        bail!(
            "container {id:?} does not exist (a create of it was interrupted: use delete --force)"
        );
    }
    match container::load(&ctx.layout, id) {
        Ok(mut c) => {
            // an init that has ended but is still tearing down its namespaces (unmounting the
            // container's mounts waits for RCU grace periods: milliseconds) is no longer running
            // anything: its delete waits for the exit to finish instead of refusing
            if !force && c.status() == libcontainer::container::ContainerStatus::Running {
                if let Some(pid) = c.pid() {
                    if wait_for_exit(pid.as_raw()) {
                        c = container::load(&ctx.layout, id)?;
                    }
                }
            }
            // A create killed before libcontainer recorded the init's pid leaves state `creating`
            // without a pid, which libcontainer's refresh reports as `stopped`, while its orphaned
            // intermediate process carries on creating the cgroups (found by
            // tests/killed_runtime.rs under load, confirmed with ftrace). The status on disk tells;
            // with --force the release kills the orphans first, without it the delete is refused
            // while they run.
            let unfinished = crate::footprint::recorded_status(&ctx.layout, id)
                .is_some_and(|s| s.eq_ignore_ascii_case("creating"))
                || c.status() == libcontainer::container::ContainerStatus::Creating;
            if !force
                && unfinished
                && !crate::footprint::unfinished_create_processes(
                    &crate::footprint::canonical_root(&ctx.layout),
                    id,
                )
                .is_empty()
            {
                bail!("cannot delete container {id:?} that is not stopped: creating (its create was interrupted and its processes still run; use delete --force)");
            }
            if !force
                && !unfinished
                && !c.can_delete()
                && c.status() != libcontainer::container::ContainerStatus::Created
            {
                bail!(
                    "cannot delete container {id:?} that is not stopped: {}",
                    c.status().to_string().to_lowercase()
                );
            }
            // the records directory of the container's own policy (the one it was created under)
            let records_dir = match ctx.layout.read_record(id) {
                Ok(r) => r.policy.records_dir,
                Err(_) => ctx.policy.records_dir.clone(),
            };
            if let Some(rd) = &records_dir {
                if let Err(e) = write_delete_record(ctx, &c, rd) {
                    tracing::warn!(
                        "container {id}: cannot write its record in {}: {e:#}",
                        rd.display()
                    );
                }
            }
        }
        Err(e) if force => {
            // a state file cut short by a killed create: the release works from rloxsc's footprint
            tracing::warn!("container {id}: {e:#}; removing what it holds from rloxsc's footprint");
        }
        Err(e) => return Err(e),
    }
    release(ctx, id)
}

/// The release. Anything it could not give back fails the delete, naming each (a cgroup that still
/// holds processes after SIGKILL among them: the release's cgroup step fails while the cgroup
/// exists); a later `delete --force` retries.
fn release(ctx: &Context, id: &str) -> Result<()> {
    let left = crate::footprint::release(&ctx.layout, id);
    if !left.is_empty() {
        bail!(
            "cannot delete container {id:?} completely: {}",
            left.join("; ")
        );
    }
    Ok(())
}

/// How long a delete waits for an init that is exiting to finish its exit.
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// Whether process `pid` is exiting ([`container::process_state`]), in which case this waits
/// (bounded) until it has become a zombie or is gone; true when it waited.
fn wait_for_exit(pid: i32) -> bool {
    match container::process_state(pid) {
        Some((state, true)) if state != 'Z' => {}
        _ => return false,
    }
    let until = std::time::Instant::now() + EXIT_WAIT;
    while std::time::Instant::now() < until {
        match container::process_state(pid) {
            Some((state, _)) if state != 'Z' && state != 'X' => {
                std::thread::sleep(std::time::Duration::from_micros(500))
            }
            _ => break,
        }
    }
    true
}

/// For containers started by a client (Docker, Podman, containerd), the record written at delete into
/// the policy's records directory: the init was reaped by the client, so the exit code is unknown here
/// (null); OOM kills, the pids limit, CPU time and peak memory come from the cgroup as for `run`.
fn write_delete_record(ctx: &Context, c: &Container, dir: &std::path::Path) -> Result<()> {
    let id = c.id();
    let wall = c
        .created()
        .map(|t| (chrono::Utc::now() - t).num_milliseconds() as f64 / 1000.0)
        .unwrap_or(0.0);
    let rec =
        crate::record::RunRecord::of_container(&ctx.layout, id, None, false, wall, None, None)?;
    crate::trust::require_root_only(dir, "records directory")?;
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{id}.json"));
    rec.write(&path)?;
    tracing::info!(
        "container {id}: record {} status={} oom_kills={:?} pids_limit_hit={:?} peak_memory_bytes={:?}",
        path.display(),
        rec.status,
        rec.oom_kills,
        rec.pids_limit_hit,
        rec.peak_memory_bytes
    );
    Ok(())
}
