//! `delete`: remove a stopped (or, with `--force`, any) container, its cgroups, its state and rloxsc's
//! private bundle. With `--force` it also cleans up after a create that was killed halfway.

use anyhow::{bail, Result};
use libcontainer::container::Container;

use super::Context;
use crate::container;

/// Deletes container `id`.
pub fn delete(ctx: &Context, id: &str, force: bool) -> Result<()> {
    container::validate_id(id)?;
    let dir = ctx.layout.container_dir(id);
    if !dir.join("state.json").exists() {
        // no libcontainer state: maybe a create killed halfway left rloxsc's bundle or an empty dir
        let leftovers = dir.exists() || ctx.layout.bundle_dir(id).exists();
        if leftovers && force {
            kill_unfinished_create(ctx, id);
            remove_cgroups_of(ctx, id);
            let _ = std::fs::remove_dir_all(&dir);
            crate::launch::release_host_resources(ctx, id);
            ctx.layout.remove_bundle(id)?;
            return Ok(());
        }
        if force {
            // a create killed before it wrote anything in the state root may still hold a block of
            // host ids or a view directory
            crate::launch::release_host_resources(ctx, id);
            return Ok(());
        }
        bail!("container {id:?} does not exist");
    }
    let mut c: Container = match container::load(&ctx.layout, id) {
        Ok(c) => c,
        Err(e) if force => {
            // a state file cut short by a killed create: clean up from rloxsc's own bundle
            tracing::warn!("container {id}: {e:#}; removing its cgroup, state and bundle directly");
            kill_unfinished_create(ctx, id);
            remove_cgroups_of(ctx, id);
            if cgroup_still_exists(ctx, id) {
                bail!("cannot delete container {id:?}: its cgroup still holds processes after SIGKILL");
            }
            let _ = std::fs::remove_dir_all(&dir);
            crate::launch::release_host_resources(ctx, id);
            ctx.layout.remove_bundle(id)?;
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    // A create killed before libcontainer recorded the init's pid leaves state `creating` without a
    // pid, which libcontainer's refresh reports as `stopped`, while its orphaned intermediate process
    // carries on creating the cgroups (found by tests/killed_runtime.rs under load, confirmed with
    // ftrace). The status on disk tells; with --force the orphans are killed first, without it the
    // delete is refused while they run.
    let unfinished = recorded_status_is_creating(&dir)
        || c.status() == libcontainer::container::ContainerStatus::Creating;
    if force && unfinished {
        kill_unfinished_create(ctx, id);
    } else if unfinished && !unfinished_create_processes(&canonical_root(ctx), id).is_empty() {
        bail!("cannot delete container {id:?} that is not stopped: creating (its create was interrupted and its processes still run; use delete --force)");
    }
    if !force && !c.can_delete() && c.status() != libcontainer::container::ContainerStatus::Created
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
    if let Some(dir) = &records_dir {
        if let Err(e) = write_delete_record(ctx, &c, dir) {
            tracing::warn!(
                "container {id}: cannot write its record in {}: {e:#}",
                dir.display()
            );
        }
    }
    if let Err(e) = c.delete(force) {
        let msg = crate::errors::error_chain(&e);
        if !force {
            bail!("cannot delete container {id:?}: {msg}");
        }
        // A create killed halfway leaves a state without a pid and a container init waiting in the
        // cgroup, which libcontainer cannot see: kill what the cgroup holds and remove it ourselves.
        tracing::warn!("container {id}: libcontainer could not delete it ({msg}); removing its cgroup, state and bundle directly");
        remove_cgroups_of(ctx, id);
        if cgroup_still_exists(ctx, id) {
            bail!("cannot delete container {id:?}: its cgroup still holds processes after SIGKILL ({msg})");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    crate::launch::release_host_resources(ctx, id);
    ctx.layout.remove_bundle(id)?;
    Ok(())
}

/// Whether the state file in `dir` records the status `creating` (before libcontainer's refresh,
/// which turns a pid-less `creating` into `stopped`).
fn recorded_status_is_creating(dir: &std::path::Path) -> bool {
    std::fs::read(dir.join("state.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("status").and_then(|s| s.as_str()).map(str::to_string))
        .is_some_and(|s| s.eq_ignore_ascii_case("creating"))
}

/// Whether any v1 hierarchy or the v2 tree still has the container's cgroup directory.
fn cgroup_still_exists(ctx: &Context, id: &str) -> bool {
    let Ok(spec) = ctx.layout.read_spec(id) else {
        return false;
    };
    let Some(path) = spec.linux().as_ref().and_then(|l| l.cgroups_path().clone()) else {
        return false;
    };
    let rel = path.to_string_lossy().trim_start_matches('/').to_string();
    let Ok(rd) = std::fs::read_dir("/sys/fs/cgroup") else {
        return false;
    };
    let mut dirs: Vec<std::path::PathBuf> = rd.flatten().map(|e| e.path().join(&rel)).collect();
    dirs.push(std::path::Path::new("/sys/fs/cgroup").join(&rel));
    dirs.iter().any(|d| d.join("cgroup.procs").exists())
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
    let rec = crate::record::RunRecord::of_container(&ctx.layout, id, None, false, wall, None)?;
    crate::trust::require_root_only(dir, "records directory")?;
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{id}.json"));
    rec.write(&path)?;
    tracing::info!(
        "container {id}: record {} status={} oom_kills={} pids_limit_hit={} peak_memory_bytes={}",
        path.display(),
        rec.status,
        rec.oom_kills,
        rec.pids_limit_hit,
        rec.peak_memory_bytes
    );
    Ok(())
}

/// Kills what a `create` or `run` of `id` that never finished (rloxsc SIGKILLed halfway) left running
/// outside the container's cgroup. libcontainer's intermediate and init processes are clones of
/// rloxsc (same binary, same argv) that carry on alone: they create the cgroups and the init waits
/// for `start`. Unless they are killed first they recreate what `delete --force` removes (found by
/// tests/killed_create.rs: empty cgroup directories left behind). Matched by the rloxsc binary, the
/// verb, the id and the same `--root`; repeated until none is left (one may be cloning).
fn kill_unfinished_create(ctx: &Context, id: &str) {
    let root = canonical_root(ctx);
    for _ in 0..100 {
        let pids = unfinished_create_processes(&root, id);
        if pids.is_empty() {
            return;
        }
        for p in pids {
            tracing::warn!("container {id}: killing process {p} of a create that never finished");
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The state root, canonical (as matched against the `--root` of other rloxsc processes).
fn canonical_root(ctx: &Context) -> std::path::PathBuf {
    std::fs::canonicalize(ctx.layout.root()).unwrap_or_else(|_| ctx.layout.root().to_path_buf())
}

/// Processes running the rloxsc binary as `create`/`run` of `id` under state root `root`.
fn unfinished_create_processes(root: &std::path::Path, id: &str) -> Vec<i32> {
    use std::os::unix::fs::MetadataExt;
    let me = std::process::id() as i32;
    let own = std::fs::metadata("/proc/self/exe").ok();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let proc_dir = e.path();
        // the sealed binary is a bind mount of this very file, and its path may not resolve from
        // here once the process has its own mount namespace: the file is compared, not only the name
        let same_file = std::fs::metadata(proc_dir.join("exe"))
            .ok()
            .zip(own.as_ref())
            .is_some_and(|(a, b)| a.dev() == b.dev() && a.ino() == b.ino());
        // a binary of another version is matched by name, and only when root runs it: a local
        // user's own program named rloxsc, with the same arguments, is never killed
        let by_root = std::fs::metadata(&proc_dir).is_ok_and(|m| m.uid() == 0);
        let is_rloxsc = same_file
            || by_root
                && std::fs::read_link(proc_dir.join("exe")).is_ok_and(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.contains("rloxsc"))
                });
        if !is_rloxsc {
            continue;
        }
        let Ok(raw) = std::fs::read(proc_dir.join("cmdline")) else {
            continue;
        };
        let argv: Vec<String> = raw
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if !argv.iter().any(|a| a == id) || !argv.iter().any(|a| a == "create" || a == "run") {
            continue;
        }
        let theirs = argv
            .windows(2)
            .find(|w| w[0] == "--root")
            .map(|w| w[1].clone())
            .or_else(|| {
                argv.iter()
                    .find_map(|a| a.strip_prefix("--root=").map(str::to_string))
            })
            .unwrap_or_else(|| "/run/rloxsc".to_string());
        let theirs = std::fs::read_link(proc_dir.join("cwd"))
            .map(|cwd| cwd.join(&theirs))
            .unwrap_or_else(|_| theirs.into());
        if std::fs::canonicalize(&theirs).unwrap_or(theirs) == root {
            out.push(pid);
        }
    }
    out
}

/// Kills every process left in the cgroup the hardened spec named and removes the cgroup.
fn remove_cgroups_of(ctx: &Context, id: &str) {
    let Ok(spec) = ctx.layout.read_spec(id) else {
        return;
    };
    let Some(path) = spec.linux().as_ref().and_then(|l| l.cgroups_path().clone()) else {
        return;
    };
    let config = libcgroups::common::CgroupConfig {
        cgroup_path: path,
        systemd_cgroup: false,
        container_name: id.to_string(),
    };
    if let Ok(manager) = libcgroups::common::create_cgroup_manager(config) {
        use libcgroups::common::CgroupManager;
        if let Ok(pids) = manager.get_all_pids() {
            for p in pids {
                let _ = nix::sys::signal::kill(p, nix::sys::signal::Signal::SIGKILL);
            }
        }
        for _ in 0..50 {
            if manager.remove().is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
