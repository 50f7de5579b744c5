//! `pause` and `resume`: freeze and thaw every process of a container (cgroup freezer).

use anyhow::{anyhow, bail, Result};

use super::Context;
use crate::container;

/// Freezes container `id`.
pub fn pause(ctx: &Context, id: &str) -> Result<()> {
    let mut c = container::load(&ctx.layout, id)?;
    if !c.can_pause() {
        bail!(
            "cannot pause container {id:?}: it is {}",
            c.status().to_string().to_lowercase()
        );
    }
    c.pause().map_err(|e| {
        anyhow!(
            "cannot pause container {id:?}: {}",
            crate::errors::error_chain(&e)
        )
    })
}

/// Thaws container `id`.
pub fn resume(ctx: &Context, id: &str) -> Result<()> {
    let mut c = container::load(&ctx.layout, id)?;
    if !c.can_resume() {
        bail!(
            "cannot resume container {id:?}: it is {}, not paused",
            c.status().to_string().to_lowercase()
        );
    }
    c.resume().map_err(|e| {
        anyhow!(
            "cannot resume container {id:?}: {}",
            crate::errors::error_chain(&e)
        )
    })
}
