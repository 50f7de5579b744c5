//! `spec`: write a config.json that is already hardened (what rloxsc would run anyway).

use std::path::Path;

use anyhow::{bail, Context as _, Result};
use oci_spec::runtime::Spec;

use super::Context;
use crate::harden::{harden, HostFacts};

/// A starting spec like runc's `spec`: busybox-style `sh` on a terminal, as runc writes it (callers
/// such as runc's own test suite pass `--console-socket` to it; a foreground `run` without one gets
/// its terminal from rloxsc).
fn base_spec() -> Spec {
    let mut spec = Spec::default();
    spec.set_version("1.0.2".into());
    if let Some(p) = spec.process_mut() {
        p.set_terminal(Some(true));
        p.set_args(Some(vec!["sh".into()]));
    }
    if let Some(root) = spec.root_mut() {
        root.set_path("rootfs".into());
    }
    spec.set_hostname(Some("rloxsc".into()));
    spec
}

/// Writes `<bundle>/config.json`.
pub fn spec(ctx: &Context, bundle: &Path) -> Result<()> {
    let path = bundle.join("config.json");
    if path.exists() {
        bail!("File {} exists. Remove it first", path.display());
    }
    let facts = HostFacts {
        rootfs: "rootfs".into(),
        has_cgroup_namespace: true,
        cgroup_v1_hierarchies: crate::facts::cgroup_v1_hierarchies(),
        runtime_root: ctx.layout.root().to_path_buf(),
        // a stand-in block: the written spec leaves the mapping to create (below)
        userns_base: Some(ctx.policy.userns_pool.start),
        ..Default::default()
    };
    let mut hardened = harden(&base_spec(), "spec", &ctx.policy, &facts)
        .map_err(|r| anyhow::anyhow!("{r}"))?
        .spec;
    if let Some(l) = hardened.linux_mut() {
        // rloxsc places the container's cgroup itself at create time, and gives each container a
        // block of host ids of its own (a mapping written here would be every container's)
        l.set_cgroups_path(None);
        l.set_uid_mappings(None);
        l.set_gid_mappings(None);
    }
    let json = serde_json::to_string_pretty(&hardened)?;
    std::fs::write(&path, json + "\n").with_context(|| format!("cannot write {}", path.display()))
}
