//! `delete`: remove a stopped (or, with `--force`, any) container, its cgroups, its state and rloxsc's
//! private bundle. With `--force` it also cleans up after a create that was killed halfway.

use anyhow::{anyhow, bail, Result};
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
            remove_cgroups_of(ctx, id);
            let _ = std::fs::remove_dir_all(&dir);
            ctx.layout.remove_bundle(id)?;
            return Ok(());
        }
        if force {
            return Ok(());
        }
        bail!("container {id:?} does not exist");
    }
    let mut c: Container = container::load(&ctx.layout, id)?;
    if !force && !c.can_delete() && c.status() != libcontainer::container::ContainerStatus::Created
    {
        bail!(
            "cannot delete container {id:?} that is not stopped: {}",
            c.status().to_string().to_lowercase()
        );
    }
    c.delete(force).map_err(|e| {
        anyhow!(
            "cannot delete container {id:?}: {}",
            super::create::error_chain(&e)
        )
    })?;
    ctx.layout.remove_bundle(id)?;
    Ok(())
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
