//! `ps`: the processes of a container, as runc prints them (`--format json`: a JSON array of pids, which
//! `docker top` reads; `table`: the host's `ps` output filtered to the container's processes).

use anyhow::{anyhow, bail, Result};

use super::Context;
use crate::container;

/// Output formats of `ps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PsFormat {
    /// `ps` output filtered to the container.
    Table,
    /// JSON array of pids.
    Json,
}

/// Prints the processes of container `id`; `ps_args` are passed to the host's `ps` (default `-ef`).
pub fn ps(ctx: &Context, id: &str, format: PsFormat, ps_args: &[String]) -> Result<()> {
    let c = container::load(&ctx.layout, id)?;
    if c.status() == libcontainer::container::ContainerStatus::Stopped {
        bail!("container {id:?}: container not running");
    }
    let pids = container::pids(&ctx.layout, id)?;
    match format {
        PsFormat::Json => println!("{}", serde_json::to_string(&pids)?),
        PsFormat::Table => {
            let args: Vec<String> = if ps_args.is_empty() {
                vec!["-ef".into()]
            } else {
                ps_args.to_vec()
            };
            let out = std::process::Command::new("ps")
                .args(&args)
                .output()
                .map_err(|e| anyhow!("cannot run ps: {e}"))?;
            if !out.status.success() {
                bail!(
                    "ps {} failed: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            let text = String::from_utf8_lossy(&out.stdout);
            let mut lines = text.lines();
            let header = lines.next().unwrap_or_default();
            let col = header
                .split_whitespace()
                .position(|h| h == "PID")
                .ok_or_else(|| anyhow!("ps output has no PID column"))?;
            println!("{header}");
            for l in lines {
                if l.split_whitespace()
                    .nth(col)
                    .and_then(|p| p.parse::<i32>().ok())
                    .is_some_and(|p| pids.contains(&p))
                {
                    println!("{l}");
                }
            }
        }
    }
    Ok(())
}
