//! `limits.cpu_time`: the CPU time of the whole container, every process, counted by its cgroup
//! (v1 `cpuacct.usage`, v2 `cpu.stat` `usage_usec`), and the container killed when it is spent.
//!
//! A watchdog process enforces it, started by `create` (for `run` and for every client alike) once
//! the container is verified and before the payload can run. It holds four descriptors the runtime
//! opened and nothing else: a pidfd of the init (its end is the watchdog's end, and SIGKILL through
//! it cannot reach a recycled pid), the cgroup's usage file and `cgroup.procs`, and the verdict file
//! in the container's state directory. It sleeps `left / CPUs` (at least 1 ms, at most 200 ms)
//! between readings, as a SCHED_FIFO process where the host allows it (woken on time however busy
//! the container keeps the CPUs), so the container can overshoot by about the host's CPUs times a
//! millisecond plus the kill's own latency; it SIGKILLs the init and every process of the cgroup.
//! The verdict file says `exceeded` with the CPU time read, which the run record turns into
//! `cpu_time_exceeded`: the container cannot forge it (the file is rloxsc's, in rloxsc's state).

use std::fs::File;
use std::io::Write as _;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};

use crate::cgroups::Placement;
use crate::policy::keys;

/// The verdict file in the container's state directory.
pub const VERDICT: &str = "cpu-time";
/// The hidden first argument that makes the rloxsc binary the watchdog.
pub const WATCH_ARG: &str = "--internal-cpu-watch";

/// How the usage file counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Usage {
    /// cgroup v1 `cpuacct.usage`: nanoseconds.
    V1Nanos,
    /// cgroup v2 `cpu.stat`: the `usage_usec` line.
    V2Stat,
}

/// Starts the watchdog of container `id` whose init is `pid` and whose cgroup is `placement`, with
/// `limit_ms` of CPU time; the verdict goes to `state_dir`. Fails (and the create with it) when the
/// usage cannot be read or the watchdog cannot start: the limit is never silently absent.
pub fn spawn(
    id: &str,
    pid: i32,
    placement: &Placement,
    limit_ms: u64,
    state_dir: &Path,
) -> Result<()> {
    let counters = open_counters(placement)?;
    let pidfd = open_init_pidfd(pid)?;
    let verdict = create_verdict(state_dir)?;
    let fds = [
        pidfd.as_raw_fd(),
        counters.usage.as_raw_fd(),
        verdict.as_raw_fd(),
        counters.procs.as_raw_fd(),
    ];
    let mut cmd = watchdog_command(id, limit_ms, counters.kind, fds);
    let child = cmd
        .spawn()
        .map_err(|e| refuse(format!("cannot start the CPU-time watchdog: {e}")))?;
    tracing::debug!(
        "cpu-time watchdog {} for init {pid}: {limit_ms} ms of CPU",
        child.id()
    );
    Ok(())
}

/// A refusal of the create for `what`, naming the policy key.
fn refuse(what: String) -> anyhow::Error {
    anyhow!("{what} (policy key {})", keys::CPU_TIME)
}

/// The cgroup files the watchdog reads, open.
struct Counters {
    /// The usage file (`cpuacct.usage` or `cpu.stat`).
    usage: File,
    /// How `usage` counts.
    kind: Usage,
    /// The cgroup's `cgroup.procs`.
    procs: File,
}

/// Opens the container's CPU usage file (v1 when the cpuacct hierarchy has it, else v2) and its
/// `cgroup.procs`, and reads the usage once to know it can.
fn open_counters(placement: &Placement) -> Result<Counters> {
    let v1 = placement.v1_dir("cpuacct").join("cpuacct.usage");
    let (path, kind) = if v1.exists() {
        (v1, Usage::V1Nanos)
    } else {
        (placement.v2_dir().join("cpu.stat"), Usage::V2Stat)
    };
    let procs_path = path.with_file_name("cgroup.procs");
    let procs = File::open(&procs_path).map_err(|e| {
        refuse(format!(
            "cannot read the container's processes from {}: {e}",
            procs_path.display()
        ))
    })?;
    let usage = File::open(&path).map_err(|e| {
        refuse(format!(
            "cannot read the container's CPU time from {}: {e}",
            path.display()
        ))
    })?;
    read_usage(usage.as_raw_fd(), kind).map_err(|e| {
        refuse(format!(
            "cannot read the container's CPU time from {}: {e}",
            path.display()
        ))
    })?;
    Ok(Counters { usage, kind, procs })
}

/// A pidfd of the container's init `pid`.
fn open_init_pidfd(pid: i32) -> Result<OwnedFd> {
    // SAFETY: pidfd_open(2) with a pid and no flags; the result is checked and owned below
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if raw < 0 {
        bail!(refuse(format!(
            "cannot open a pidfd of the container's init {pid}: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: a descriptor pidfd_open just returned, owned by nothing else
    Ok(unsafe { OwnedFd::from_raw_fd(raw as RawFd) })
}

/// Creates (or truncates) the verdict file in the container's state directory.
fn create_verdict(state_dir: &Path) -> Result<File> {
    let verdict_path = state_dir.join(VERDICT);
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&verdict_path)
        .with_context(|| format!("cannot create {}", verdict_path.display()))
}

/// The watchdog's command: rloxsc as [`WATCH_ARG`], with `fds` (pidfd, usage, verdict, procs)
/// placed at 3 to 6 in a session of its own, nothing else inherited.
fn watchdog_command(
    id: &str,
    limit_ms: u64,
    kind: Usage,
    fds: [RawFd; 4],
) -> std::process::Command {
    let ncpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut cmd = std::process::Command::new("/proc/self/exe");
    cmd.arg0("rloxsc-cpu-watch")
        .arg(WATCH_ARG)
        .arg((limit_ms.saturating_mul(1_000_000)).to_string())
        .arg(if kind == Usage::V1Nanos { "v1" } else { "v2" })
        .arg(ncpus.to_string())
        // (for `ps` and for whoever looks: which container it watches)
        .arg(id)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: between fork and exec the closure only calls async-signal-safe functions (dup2,
    // fcntl, setsid, close_range) on descriptors this process owns
    unsafe {
        cmd.pre_exec(move || {
            // first out of the way of 3..=6, then into place (dup2 clears close-on-exec)
            let mut moved = [0; 4];
            for (i, fd) in fds.iter().enumerate() {
                let m = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 10);
                if m < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                moved[i] = m;
            }
            for (i, m) in moved.iter().enumerate() {
                if libc::dup2(*m, 3 + i as i32) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            libc::setsid();
            // nothing of the caller's (its pipes, its sockets) is held by the watchdog
            libc::syscall(libc::SYS_close_range, 7u32, u32::MAX, 0u32);
            // woken on time even when the container keeps every CPU busy (it sleeps between
            // readings, so it costs the host nothing); without CAP_SYS_NICE it stays as it is
            let param = libc::sched_param { sched_priority: 1 };
            libc::sched_setscheduler(0, libc::SCHED_FIFO, &param);
            Ok(())
        });
    }
    cmd
}

/// Whether the container's CPU time ran out (its watchdog killed it), from the verdict file.
pub fn exceeded(state_dir: &Path) -> bool {
    crate::fsutil::read_small_string(state_dir.join(VERDICT))
        .is_ok_and(|s| s.starts_with("exceeded"))
}

/// The watchdog's main (argv: [`WATCH_ARG`], the limit in ns, `v1`|`v2`, the host's CPUs, the
/// container's id); fds 3 to 6 as [`spawn`] placed them. Returns the exit status.
pub fn watch_main(args: &[String]) -> i32 {
    match watch(args) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

fn watch(args: &[String]) -> Result<()> {
    let limit_ns: u64 = args.get(1).and_then(|a| a.parse().ok()).context("limit")?;
    let kind = match args.get(2).map(String::as_str) {
        Some("v1") => Usage::V1Nanos,
        Some("v2") => Usage::V2Stat,
        _ => bail!("usage kind"),
    };
    let ncpus: u64 = args.get(3).and_then(|a| a.parse().ok()).context("cpus")?;
    let (pidfd, usage, verdict, procs) = (3, 4, 5, 6);
    loop {
        let used = read_usage(usage, kind)?;
        if used >= limit_ns {
            // SAFETY: pidfd_send_signal(2) on the init's pidfd, no siginfo, no flags
            unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    pidfd,
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                )
            };
            // the init's death kills the rest of its pid namespace, but only once the init is
            // scheduled: every process of the cgroup gets SIGKILL now (a pid read a moment ago
            // from the container's own cgroup; pids are not reused within microseconds)
            for p in cgroup_procs(procs) {
                // SAFETY: kill(2) with a pid of the container's cgroup and SIGKILL
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
            // SAFETY: fd 5 is the verdict file spawn() placed there, owned by this process alone
            let mut f = unsafe { File::from_raw_fd(verdict) };
            let _ = writeln!(f, "exceeded used_ns={used} limit_ns={limit_ns}");
            return Ok(());
        }
        let wait = Duration::from_nanos((limit_ns - used) / ncpus.max(1))
            .clamp(Duration::from_millis(1), Duration::from_millis(200));
        let ts = libc::timespec {
            tv_sec: wait.as_secs() as libc::time_t,
            tv_nsec: wait.subsec_nanos() as libc::c_long,
        };
        let mut p = libc::pollfd {
            fd: pidfd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: ppoll(2) on one pollfd we own, a valid timeout, no signal mask
        let n = unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
        if n > 0 {
            // the init ended: so did the container
            return Ok(());
        }
    }
}

/// The pids in the container's `cgroup.procs` (a page at a time, from the start of `fd`).
fn cgroup_procs(fd: RawFd) -> Vec<i32> {
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: pread(2) into a buffer of its length, at the offset read so far
        let n = unsafe {
            libc::pread(
                fd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                text.len() as libc::off_t,
            )
        };
        if n <= 0 {
            break;
        }
        text.extend_from_slice(&buf[..n as usize]);
    }
    String::from_utf8_lossy(&text)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .filter(|&p: &i32| p > 1)
        .collect()
}

/// The cgroup's CPU time in nanoseconds, read from the start of `fd`.
fn read_usage(fd: RawFd, kind: Usage) -> Result<u64> {
    let mut buf = [0u8; 512];
    // SAFETY: pread(2) into a buffer of its length
    let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    let text = std::str::from_utf8(&buf[..n as usize])?;
    parse_usage(text, kind).ok_or_else(|| anyhow!("unexpected contents {text:?}"))
}

fn parse_usage(text: &str, kind: Usage) -> Option<u64> {
    match kind {
        Usage::V1Nanos => text.trim().parse().ok(),
        Usage::V2Stat => text
            .lines()
            .find_map(|l| l.strip_prefix("usage_usec "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|us| us.saturating_mul(1000)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_files_are_read_as_nanoseconds() {
        assert_eq!(
            parse_usage("123456789\n", Usage::V1Nanos),
            Some(123_456_789)
        );
        assert_eq!(
            parse_usage(
                "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n",
                Usage::V2Stat
            ),
            Some(1_500_000)
        );
        assert_eq!(parse_usage("user_usec 1\n", Usage::V2Stat), None);
    }
}
