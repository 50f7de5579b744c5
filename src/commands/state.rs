//! `state` and the runc state JSON shared with `list`.

use anyhow::Result;
use libcontainer::container::{Container, ContainerStatus};
use serde::Serialize;

use super::Context;
use crate::container;

/// runc's state object.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuncState {
    /// OCI spec version.
    pub oci_version: String,
    /// Container id.
    pub id: String,
    /// Init pid (0 once stopped).
    pub pid: i32,
    /// created, running, paused, stopped.
    pub status: String,
    /// The caller's bundle.
    pub bundle: String,
    /// The root filesystem.
    pub rootfs: String,
    /// Creation time, RFC 3339.
    pub created: String,
    /// Owner (empty: runc reports it only for rootless containers).
    pub owner: String,
    /// The spec's annotations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<std::collections::HashMap<String, String>>,
}

/// Lower-case status as runc prints it.
pub fn status_name(s: ContainerStatus) -> &'static str {
    match s {
        ContainerStatus::Creating => "creating",
        ContainerStatus::Created => "created",
        ContainerStatus::Running => "running",
        ContainerStatus::Stopped => "stopped",
        ContainerStatus::Paused => "paused",
    }
}

/// Builds the runc state of a loaded container.
pub fn runc_state(ctx: &Context, c: &Container) -> RuncState {
    let meta = ctx.layout.read_record(c.id()).ok();
    let spec = ctx.layout.read_spec(c.id()).ok();
    let stopped = c.status() == ContainerStatus::Stopped;
    RuncState {
        oci_version: spec
            .as_ref()
            .map(|s| s.version().clone())
            .unwrap_or_else(|| "1.0.2".into()),
        id: c.id().to_string(),
        pid: if stopped {
            0
        } else {
            c.pid().map(|p| p.as_raw()).unwrap_or(0)
        },
        status: status_name(c.status()).to_string(),
        bundle: meta
            .map(|m| m.caller_bundle.display().to_string())
            .unwrap_or_else(|| c.bundle().display().to_string()),
        rootfs: spec
            .as_ref()
            .and_then(|s| s.root().as_ref().map(|r| r.path().display().to_string()))
            .unwrap_or_default(),
        created: c
            .created()
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true))
            .unwrap_or_default(),
        owner: String::new(),
        annotations: spec.and_then(|s| s.annotations().clone()),
    }
}

/// Prints the state of container `id` as JSON.
pub fn state(ctx: &Context, id: &str) -> Result<()> {
    let c = container::load(&ctx.layout, id)?;
    println!("{}", serde_json::to_string_pretty(&runc_state(ctx, &c))?);
    Ok(())
}
