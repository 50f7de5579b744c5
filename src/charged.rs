//! Work rloxsc does on a container's behalf (copying the image's content into a store path, writing
//! the container's store back into the client's layer) runs in a child process that has joined the
//! container's cgroup first: the memory it takes (page cache, tmpfs pages) is charged to the
//! container, within its memory limit, not to the runtime's caller. The child is killed at the
//! deadline.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, ForkResult};

/// Runs `work` in a child that joined `cgroups` (none: uncharged, in this process's cgroup), killed
/// at `deadline`. The child's error text comes back as this call's error.
///
/// Must be called while this process has one thread (as every verb is until it starts a terminal
/// copy): the child runs Rust code after the fork.
pub fn run(
    cgroups: &[PathBuf],
    deadline: Option<Instant>,
    work: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    // SAFETY: the child only joins cgroups, runs `work` and exits; this process is single-threaded
    // here (see above), so nothing it inherits is held by another thread
    match unsafe { fork() }.map_err(|e| anyhow!("cannot fork: {e}"))? {
        ForkResult::Child => {
            drop(r);
            let res = (|| -> Result<()> {
                let me = std::process::id().to_string();
                for d in cgroups {
                    std::fs::write(d.join("cgroup.procs"), &me).map_err(|e| {
                        anyhow!("cannot join the container's cgroup {}: {e}", d.display())
                    })?;
                }
                work()
            })();
            let code = match res {
                Ok(()) => 0,
                Err(e) => {
                    let msg = format!("{e:#}");
                    // SAFETY: write of our buffer to our pipe
                    unsafe { libc::write(w.as_raw_fd(), msg.as_ptr().cast(), msg.len()) };
                    1
                }
            };
            // SAFETY: _exit skips atexit handlers and destructors the parent still owns
            unsafe { libc::_exit(code) }
        }
        ForkResult::Parent { child } => {
            drop(w);
            let status = loop {
                match waitpid(child, Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::StillAlive) => {
                        if deadline.is_some_and(|d| Instant::now() >= d) {
                            let _ =
                                nix::sys::signal::kill(child, nix::sys::signal::Signal::SIGKILL);
                            let _ = waitpid(child, None);
                            bail!("did not finish by its deadline (killed)");
                        }
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    Ok(s) => break s,
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(e) => bail!("cannot wait for the child: {e}"),
                }
            };
            let mut msg = String::new();
            let _ = std::fs::File::from(r).read_to_string(&mut msg);
            match status {
                WaitStatus::Exited(_, 0) => Ok(()),
                WaitStatus::Exited(..) => Err(anyhow!("{}", msg.trim())),
                other => Err(anyhow!("the child ended with {other:?}")),
            }
        }
    }
}
