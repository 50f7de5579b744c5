//! Durations as runc's and rloxsc's flags and the policy file write them: `30`, `1.5s`, `500ms`,
//! `2m`, `1h` (`--interval`, `--timeout`, `limits.create_timeout`).

use std::time::Duration;

use anyhow::{anyhow, Result};

/// Parses runc's `--interval` (`5s`, `500ms`, `1m`, or plain seconds).
pub fn parse_interval(s: &str) -> Result<Duration> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map(|i| s.split_at(i))
        .unwrap_or((s, "s"));
    let v: f64 = num.parse().map_err(|_| anyhow!("invalid interval {s:?}"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" | "" => v,
        "m" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(anyhow!("invalid interval {s:?}")),
    };
    if secs <= 0.0 {
        return Err(anyhow!("interval must be positive"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a duration: `30`, `1.5s`, `500ms`, `2m`, `1h`.
pub fn parse_duration(s: &str) -> Result<Duration> {
    parse_interval(s).map_err(|_| anyhow!("invalid duration {s:?} (e.g. 30s, 500ms, 2m)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_interval("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_interval("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_interval("1m").unwrap(), Duration::from_secs(60));
        assert!(parse_interval("0s").is_err());
        assert!(parse_interval("x").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("soon").is_err());
    }
}
