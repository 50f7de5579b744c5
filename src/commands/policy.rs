//! `policy show` and `policy check PATH`: what the policy is, and what rloxsc would do to a bundle or a
//! config.json, without root and without creating anything.

use std::path::Path;

use anyhow::{anyhow, Result};

use super::Context;
use crate::harden::{harden, HostFacts};

/// Prints the effective policy as a policy file.
pub fn show(ctx: &Context, source: Option<&Path>) -> Result<()> {
    print!("{}", crate::policy_file::render(&ctx.policy, source));
    for (dir, why) in crate::limits::disk::clients_storage() {
        match why {
            None => println!(
                "# limits.disk here: {} enforces project quotas: what a container writes into a client's layer there is bounded",
                dir.display()
            ),
            Some(cause) => println!(
                "# limits.disk here: {}: {cause}: a client's layer there is as large as its filesystem{}",
                dir.display(),
                if ctx.policy.disk_required { " (refused: required = true)" } else { "" }
            ),
        }
    }
    Ok(())
}

/// Prints what rloxsc would change in, or refuse about, the config at `path` (a bundle directory or a
/// config.json). Returns 0 when it would run it, 1 when it would refuse.
pub fn check(ctx: &Context, path: &Path) -> Result<i32> {
    let (bundle, config) = if path.is_dir() {
        (path.to_path_buf(), path.join("config.json"))
    } else {
        (
            path.parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| ".".into()),
            path.to_path_buf(),
        )
    };
    let spec = crate::bundle::load_caller_spec_file(&config)?;
    let facts = match crate::facts::gather(&spec, &bundle, ctx.layout.root(), &ctx.policy.writable)
    {
        Ok(f) => f,
        Err(e) => {
            println!("refuse: {e:#}");
            return Ok(1);
        }
    };
    check_with_facts(ctx, &spec, &facts)
}

fn check_with_facts(
    ctx: &Context,
    spec: &oci_spec::runtime::Spec,
    facts: &HostFacts,
) -> Result<i32> {
    // what create would allocate: a block of the pool (only its first is named here)
    let mut facts = facts.clone();
    if facts.userns_base.is_none() {
        facts.userns_base = Some(ctx.policy.userns_pool.start);
    }
    match harden(spec, "policy-check", &ctx.policy, &facts) {
        Ok(h) => {
            for c in &h.changes {
                println!("change: {c}");
            }
            println!(
                "verdict: rloxsc would run this container with {} change(s)",
                h.changes.len()
            );
            Ok(0)
        }
        Err(r) => {
            println!("refuse: {r}");
            Ok(1)
        }
    }
    .map_err(|e: anyhow::Error| anyhow!(e))
}
