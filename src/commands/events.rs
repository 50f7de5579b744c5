//! `events`: runc's event stream for a container: `{"type":"stats","id":...,"data":{...}}` every
//! interval and `{"type":"oom","id":...}` whenever the kernel OOM-kills a process of the container
//! (read from the cgroup's own counter: v1 `memory.oom_control`, v2 `memory.events`). `--stats` prints
//! one stats event and exits. The stream ends when the container stops.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use libcgroups::common::CgroupManager;

use super::Context;
use crate::container;

/// One event in runc's envelope, its keys in runc's order (`type`, `id`, `data`; no `data` for an
/// OOM event), which clients that match the line as text depend on: a `serde_json::Value` object
/// would print them sorted.
#[derive(Debug, serde::Serialize)]
struct Event<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<serde_json::Value>,
}

fn emit(e: &Event) -> Result<()> {
    let line = serde_json::to_string(e)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(())
}

/// Streams events of container `id`.
pub fn events(ctx: &Context, id: &str, stats_only: bool, interval: Duration) -> Result<()> {
    let c = container::load(&ctx.layout, id)?;
    if c.status() == libcontainer::container::ContainerStatus::Stopped {
        return Err(anyhow!("container {id:?}: container not running"));
    }
    let manager = container::cgroup_manager(&ctx.layout, id)?;
    let stats = |m: &libcgroups::common::AnyCgroupManager| -> Result<Event> {
        let s = m
            .stats()
            .map_err(|e| anyhow!("cannot read the stats of container {id:?}: {e}"))?;
        Ok(Event {
            kind: "stats",
            id,
            data: Some(serde_json::to_value(s)?),
        })
    };
    if stats_only {
        return emit(&stats(&manager)?);
    }
    let oom = crate::footprint::placement(&ctx.layout, id).and_then(|p| p.oom_counter());
    let mut last_oom = oom
        .as_ref()
        .and_then(|(p, k)| crate::cgroups::read_key(p, k))
        .unwrap_or(0);
    let mut next_stats = Instant::now();
    let poll = interval.min(Duration::from_millis(200));
    loop {
        if let Some((p, k)) = &oom {
            if let Some(n) = crate::cgroups::read_key(p, k) {
                if n > last_oom {
                    last_oom = n;
                    emit(&Event {
                        kind: "oom",
                        id,
                        data: None,
                    })?;
                }
            }
        }
        match container::load(&ctx.layout, id) {
            Ok(c) if c.status() != libcontainer::container::ContainerStatus::Stopped => {}
            _ => return Ok(()),
        }
        if Instant::now() >= next_stats {
            if let Ok(v) = stats(&manager) {
                emit(&v)?;
            }
            next_stats = Instant::now() + interval;
        }
        std::thread::sleep(poll);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_keep_runcs_key_order() {
        let e = Event {
            kind: "stats",
            id: "c",
            data: Some(serde_json::json!({"cpu": 1})),
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"type":"stats","id":"c","data":{"cpu":1}}"#
        );
        let e = Event {
            kind: "oom",
            id: "c",
            data: None,
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"type":"oom","id":"c"}"#
        );
    }
}
