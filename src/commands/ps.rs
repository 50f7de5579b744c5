//! `ps`: the processes of a container, as runc prints them (`--format json`: a JSON array of pids, which
//! `docker top` reads; `table`: the host's `ps` output filtered to the container's processes). A stopped
//! container has no processes: runc prints the header alone (or `[]`) and succeeds, and so does rloxsc.

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
    let pids = if c.status() == libcontainer::container::ContainerStatus::Stopped {
        Vec::new()
    } else {
        container::pids(&ctx.layout, id)?
    };
    match format {
        PsFormat::Json => println!("{}", serde_json::to_string(&pids)?),
        PsFormat::Table => {
            let args = ps_argv(ps_args, &pids);
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

/// The host `ps` argv for `ps_args` (runc's default `-ef`), with the container's pids selected
/// explicitly: the container's processes run as its own block of host ids (`userns.mode`), never as
/// root, and a BSD-style option such as `x` restricts procps to the caller's own processes, which
/// would hide every one of them (`ps ID -e -x` printed no rows).
fn ps_argv(ps_args: &[String], pids: &[i32]) -> Vec<String> {
    let mut args: Vec<String> = if ps_args.is_empty() {
        vec!["-ef".into()]
    } else {
        ps_args.to_vec()
    };
    if !pids.is_empty() {
        let list: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
        args.push("-p".into());
        args.push(list.join(","));
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_containers_pids_are_always_selected() {
        assert_eq!(ps_argv(&[], &[]), ["-ef"]);
        assert_eq!(ps_argv(&[], &[7, 9]), ["-ef", "-p", "7,9"]);
        let a = ["-e".to_string(), "-x".to_string()];
        assert_eq!(ps_argv(&a, &[7]), ["-e", "-x", "-p", "7"]);
    }
}
