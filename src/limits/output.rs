//! `run --output SIZE`: the bytes the container writes to its stdout and stderr reach the caller up
//! to SIZE in all; past it the container is killed. rloxsc holds the stdio for that: the container's
//! stdout and stderr are pipes whose read ends a relay thread of `run` copies to rloxsc's own stdout
//! and stderr, counting. The count is rloxsc's own, so the verdict (`output_limit_exceeded`) is not
//! the container's to forge. Without `--output` the stdio stays the caller's, as under runc; under a
//! client the stdio is the client's (bound it with the client's log options).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};

/// The pipes of one run's stdout and stderr, before the container is created.
pub struct Pipes {
    /// The container's ends (handed to libcontainer, closed here once the container holds them).
    pub writers: (OwnedFd, OwnedFd),
    readers: (OwnedFd, OwnedFd),
    limit: u64,
}

/// The relay while the container runs.
pub struct Relay {
    thread: std::thread::JoinHandle<()>,
    exceeded: Arc<AtomicBool>,
    limit: u64,
}

fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| anyhow!("cannot create the output pipe for --output: {e}"))
}

impl Pipes {
    /// The two pipes for a run with `--output limit`.
    pub fn new(limit: u64) -> Result<Pipes> {
        let (out_r, out_w) = pipe()?;
        let (err_r, err_w) = pipe()?;
        Ok(Pipes {
            writers: (out_w, err_w),
            readers: (out_r, err_r),
            limit,
        })
    }

    /// Raw descriptors of the container's ends (libcontainer gets duplicates).
    pub fn writer_fds(&self) -> (RawFd, RawFd) {
        (self.writers.0.as_raw_fd(), self.writers.1.as_raw_fd())
    }

    /// Closes this process's copies of the container's ends and starts copying to rloxsc's stdout
    /// and stderr; past the limit the container's init (`pid`) is killed through a pidfd.
    pub fn start(self, pid: i32) -> Result<Relay> {
        let Pipes {
            writers,
            readers,
            limit,
        } = self;
        drop(writers);
        // SAFETY: pidfd_open(2) with the pid of our unreaped container init, no flags
        let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if raw < 0 {
            return Err(anyhow!(
                "cannot open a pidfd of the container's init {pid} for --output: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: a descriptor pidfd_open just returned, owned by nothing else
        let pidfd = unsafe { OwnedFd::from_raw_fd(raw as RawFd) };
        let exceeded = Arc::new(AtomicBool::new(false));
        let flag = exceeded.clone();
        let thread = std::thread::Builder::new()
            .name("output".into())
            .spawn(move || copy(readers, limit, &pidfd, &flag))
            .map_err(|e| anyhow!("cannot start the output relay: {e}"))?;
        Ok(Relay {
            thread,
            exceeded,
            limit,
        })
    }
}

impl Relay {
    /// Waits (at most a second: a process left behind may hold a pipe open) for the relay to copy
    /// what is left; whether the limit was passed.
    pub fn finish(self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(1);
        while !self.thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if self.thread.is_finished() {
            let _ = self.thread.join();
        }
        self.exceeded.load(Ordering::SeqCst)
    }

    /// The limit, bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }
}

/// Copies both pipes to fds 1 and 2 until both end; past `limit` bytes in all, nothing more is
/// written, the init is SIGKILLed once and the rest is read and dropped.
fn copy(readers: (OwnedFd, OwnedFd), limit: u64, pidfd: &OwnedFd, exceeded: &AtomicBool) {
    let mut left = limit;
    let mut open = [Some(readers.0), Some(readers.1)];
    let mut buf = vec![0u8; 64 * 1024];
    while open.iter().any(Option::is_some) {
        let mut fds: Vec<libc::pollfd> = open
            .iter()
            .flatten()
            .map(|f| libc::pollfd {
                fd: f.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: poll(2) on descriptors this thread owns, with their count
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if n < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return;
        }
        for p in fds.iter().filter(|p| p.revents != 0) {
            let slot = open
                .iter()
                .position(|f| f.as_ref().is_some_and(|f| f.as_raw_fd() == p.fd))
                .expect("a polled descriptor is open");
            // SAFETY: read(2) into a buffer of its length
            let got = unsafe { libc::read(p.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if got <= 0 {
                if got < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                open[slot] = None;
                continue;
            }
            let got = got as u64;
            let take = got.min(left);
            write_all(1 + slot as RawFd, &buf[..take as usize]);
            left -= take;
            if got > take && !exceeded.swap(true, Ordering::SeqCst) {
                // SAFETY: pidfd_send_signal(2) on the init's pidfd, no siginfo, no flags
                unsafe {
                    libc::syscall(
                        libc::SYS_pidfd_send_signal,
                        pidfd.as_raw_fd(),
                        libc::SIGKILL,
                        std::ptr::null::<libc::siginfo_t>(),
                        0,
                    )
                };
            }
        }
    }
}

/// Writes all of `data` to `fd` (a caller's pipe that went away loses the rest, as it would have).
fn write_all(fd: RawFd, mut data: &[u8]) {
    while !data.is_empty() {
        // SAFETY: write(2) from a buffer of its length
        let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if n < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return;
        }
        data = &data[n as usize..];
    }
}
