//! `list`: every container under the root, as runc's table, JSON or ids only.

use anyhow::Result;

use super::state::{runc_state, RuncState};
use super::Context;
use crate::container;

/// Output formats of `list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ListFormat {
    /// runc's aligned table.
    Table,
    /// A JSON array of state objects.
    Json,
}

/// Lists containers.
pub fn list(ctx: &Context, format: ListFormat, quiet: bool) -> Result<()> {
    let mut states: Vec<RuncState> = Vec::new();
    if let Ok(rd) = std::fs::read_dir(ctx.layout.containers()) {
        let mut ids: Vec<String> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        ids.sort();
        for id in ids {
            // one whose state cannot be read is named on stderr and left out, as runc does (one
            // being created or deleted, without a state file, is left out silently)
            match container::load(&ctx.layout, &id) {
                Ok(c) => states.push(runc_state(ctx, &c)),
                Err(e) if ctx.layout.container_dir(&id).join("state.json").exists() => {
                    eprintln!("load container {id}: {e:#}")
                }
                Err(_) => {}
            }
        }
    }
    if quiet {
        for s in &states {
            println!("{}", s.id);
        }
        return Ok(());
    }
    match format {
        ListFormat::Json => println!("{}", serde_json::to_string(&states)?),
        ListFormat::Table => {
            let rows: Vec<[String; 6]> = std::iter::once(
                ["ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER"].map(String::from),
            )
            .chain(states.iter().map(|s| {
                [
                    s.id.clone(),
                    s.pid.to_string(),
                    s.status.clone(),
                    s.bundle.clone(),
                    s.created.clone(),
                    if s.owner.is_empty() {
                        "root".into()
                    } else {
                        s.owner.clone()
                    },
                ]
            }))
            .collect();
            let mut w = [0usize; 6];
            for r in &rows {
                for (i, c) in r.iter().enumerate() {
                    w[i] = w[i].max(c.len());
                }
            }
            for r in rows {
                let line: Vec<String> = r
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        if i < 5 {
                            format!("{c:<width$}", width = w[i])
                        } else {
                            c.clone()
                        }
                    })
                    .collect();
                println!("{}", line.join("   "));
            }
        }
    }
    Ok(())
}
