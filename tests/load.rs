//! Load: 1000 sequential `rloxsc run` lifecycles of /bin/true, then 200 more with 8 at a time. Every
//! run must succeed and afterwards nothing may be left (state directories, private bundles, cgroups,
//! processes, mounts). Latencies are reported, never asserted:
//!
//!     cargo test --release --test load -- --nocapture
//!
//! The report is also written to `$CARGO_TARGET_TMPDIR/load-report.txt`. `RLOXSC_LOAD_SEQUENTIAL`,
//! `RLOXSC_LOAD_CONCURRENT` and `RLOXSC_LOAD_PARALLEL` change the counts (1000, 200, 8).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::*;

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One `rloxsc run` of `bundle` as `id`; returns its wall time, or the failure with its output.
fn one_run(env: &TestEnv, bundle: &Path, id: &str) -> Result<Duration, String> {
    let out_path = env.dir.join(format!("{id}.out"));
    let err_path = env.dir.join(format!("{id}.err"));
    let mut cmd = env.command(
        &rloxsc_bin(),
        &["run", "--bundle", bundle.to_str().unwrap(), id],
    );
    cmd.stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{id}: cannot spawn: {e}"))?;
    let st = wait_child(&mut child, COMMAND_TIMEOUT, id);
    let took = t0.elapsed();
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    if !st.success() || !stdout.is_empty() {
        return Err(format!(
            "{id}: exit {}\nstdout: {stdout}\nstderr: {stderr}",
            exit_code(st)
        ));
    }
    Ok(took)
}

/// Nearest-rank percentile of sorted `v`.
fn pct(v: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

fn summary(name: &str, mut v: Vec<Duration>, wall: Duration) -> String {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mean = v.iter().sum::<Duration>() / v.len().max(1) as u32;
    format!(
        "{name}: {} runs in {:.1} s ({:.1} runs/s): p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms, mean {:.1} ms",
        v.len(),
        wall.as_secs_f64(),
        v.len() as f64 / wall.as_secs_f64(),
        ms(pct(&v, 50.0)),
        ms(pct(&v, 90.0)),
        ms(pct(&v, 99.0)),
        ms(*v.last().unwrap()),
        ms(mean)
    )
}

/// Pids whose parent is the test process.
fn children() -> BTreeSet<i32> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                .filter(|pid| {
                    std::fs::read_to_string(format!("/proc/{pid}/status"))
                        .is_ok_and(|s| status_field(&s, "PPid").as_deref() == Some(me.as_str()))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn entries(dir: PathBuf) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Everything the runs of `env` could have left behind.
fn leftovers(env: &TestEnv) -> Vec<String> {
    let prefix = env.id_prefix();
    let mut left: Vec<String> = Vec::new();
    left.extend(
        entries(env.root.join("containers"))
            .into_iter()
            .map(|e| format!("state directory {e}")),
    );
    left.extend(
        entries(env.root.join("bundles"))
            .into_iter()
            .map(|e| format!("private bundle {e}")),
    );
    left.extend(
        rloxsc_cgroup_children()
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix))
            })
            .map(|p| format!("cgroup {}", p.display())),
    );
    left.extend(
        mount_points_under(&env.dir)
            .into_iter()
            .chain(mount_points_under(&test_rootfs()))
            .map(|m| format!("mount {m}")),
    );
    left.extend(children().into_iter().map(|p| format!("child process {p}")));
    // processes in any cgroup of ours (/rloxsc/<id>)
    let marker = format!("/rloxsc/{prefix}");
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            if let Ok(cg) = std::fs::read_to_string(e.path().join("cgroup")) {
                if cg.contains(&marker) {
                    left.push(format!("process {:?} in {marker}*", e.file_name()));
                }
            }
        }
    }
    left
}

fn assert_nothing_left_by(env: &TestEnv, context: &str) {
    let mut left = Vec::new();
    let gone = poll_until(Duration::from_secs(5), || {
        left = leftovers(env);
        left.is_empty()
    });
    assert!(gone, "{context}: left {left:?}");
}

#[test]
fn thousand_sequential_and_two_hundred_concurrent_lifecycles() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let sequential = count("RLOXSC_LOAD_SEQUENTIAL", 1000);
    let concurrent = count("RLOXSC_LOAD_CONCURRENT", 200);
    let parallel = count("RLOXSC_LOAD_PARALLEL", 8).max(1);
    let env = TestEnv::new("load");
    let bundle = env.bundle(&base_spec(&["true"]));
    // warm-up (the state root, the parent cgroups, the sealed binary), not counted
    let warm = env.id();
    one_run(&env, &bundle, &warm).unwrap();
    let mut report = Vec::new();

    // sequential
    let mut lat = Vec::with_capacity(sequential);
    let t0 = Instant::now();
    for _ in 0..sequential {
        // no guard: a guard's `delete --force` would hide what `run` itself failed to clean up
        let id = env.id();
        match one_run(&env, &bundle, &id) {
            Ok(d) => lat.push(d),
            Err(e) => {
                drop(env.guard(&id));
                panic!(
                    "sequential run {} of {sequential} failed: {e}",
                    lat.len() + 1
                )
            }
        }
    }
    let line = summary("sequential", lat, t0.elapsed());
    eprintln!("{line}");
    report.push(line);
    assert_nothing_left_by(&env, "after the sequential runs");

    // concurrent
    let next = AtomicUsize::new(0);
    let lat = Mutex::new(Vec::with_capacity(concurrent));
    let failures = Mutex::new(Vec::new());
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..parallel {
            s.spawn(|| loop {
                if next.fetch_add(1, Ordering::SeqCst) >= concurrent {
                    return;
                }
                let id = env.id();
                match one_run(&env, &bundle, &id) {
                    Ok(d) => lat.lock().unwrap().push(d),
                    Err(e) => {
                        drop(env.guard(&id));
                        failures.lock().unwrap().push(e)
                    }
                }
            });
        }
    });
    let wall = t0.elapsed();
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {concurrent} concurrent runs failed; first: {}",
        failures.len(),
        failures[0]
    );
    let line = summary(
        &format!("concurrent ({parallel} at a time)"),
        lat.into_inner().unwrap(),
        wall,
    );
    eprintln!("{line}");
    report.push(line);
    assert_nothing_left_by(&env, "after the concurrent runs");

    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("load-report.txt");
    let _ = std::fs::write(&path, report.join("\n") + "\n");
}
