//! A terminal for a foreground `run` or `exec` when the caller gives no `--console-socket`, as runc
//! does: rloxsc listens on a private console socket, receives the pty master from the container's
//! process (SCM_RIGHTS, libcontainer's console-socket protocol), puts the caller's terminal in raw
//! mode and copies bytes both ways until the process ends.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg, Termios};

/// The listening side, created before the container so its process can connect.
pub struct ConsoleSocket {
    listener: UnixListener,
    path: PathBuf,
}

impl ConsoleSocket {
    /// Listens on a new socket at `path` (removed on drop).
    pub fn listen(path: &Path) -> Result<Self> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)
            .with_context(|| format!("cannot listen on {}", path.display()))?;
        Ok(ConsoleSocket {
            listener,
            path: path.to_path_buf(),
        })
    }

    /// The socket's path, for libcontainer.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Receives the pty master the container's process sent.
    pub fn receive_master(&self) -> Result<File> {
        self.listener.set_nonblocking(false)?;
        let (conn, _) = self
            .listener
            .accept()
            .context("no connection on the console socket")?;
        let mut buf = [0u8; 4096];
        let mut iov = [std::io::IoSliceMut::new(&mut buf)];
        let mut space = nix::cmsg_space!([RawFd; 1]);
        let msg = recvmsg::<()>(
            conn.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::empty(),
        )
        .context("recvmsg on the console socket")?;
        for c in msg.cmsgs().context("control messages")? {
            if let ControlMessageOwned::ScmRights(fds) = c {
                if let Some(fd) = fds.first() {
                    // SAFETY: the fd was just passed to us and nobody else owns it.
                    return Ok(unsafe { File::from_raw_fd(*fd) });
                }
            }
        }
        bail!("the container's process sent no pty master")
    }
}

impl Drop for ConsoleSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Decides where a terminal process's pty master goes: the caller's `--console-socket` when given; else,
/// when rloxsc may provide the terminal itself (a foreground run or exec), a socket of its own at
/// `own_path`; else an error saying `refusal`. Returns rloxsc's own socket (if any) and the path to
/// hand to libcontainer. A process without a terminal gets neither.
pub fn console_for(
    terminal: bool,
    given: Option<&PathBuf>,
    may_allocate: bool,
    own_path: &Path,
    refusal: &str,
) -> Result<(Option<ConsoleSocket>, Option<PathBuf>)> {
    if !terminal || given.is_some() {
        return Ok((None, given.cloned()));
    }
    if !may_allocate {
        bail!("{refusal}");
    }
    let own = ConsoleSocket::listen(own_path)?;
    let path = own.path().to_path_buf();
    Ok((Some(own), Some(path)))
}

/// Restores the caller's terminal settings when dropped.
pub struct RawMode {
    saved: Option<Termios>,
}

impl RawMode {
    /// Puts stdin in raw mode if it is a terminal.
    pub fn enter() -> RawMode {
        let stdin = std::io::stdin();
        let saved = tcgetattr(&stdin).ok();
        if let Some(t) = &saved {
            let mut raw = t.clone();
            cfmakeraw(&mut raw);
            let _ = tcsetattr(&stdin, SetArg::TCSANOW, &raw);
        }
        RawMode { saved }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if let Some(t) = &self.saved {
            let _ = tcsetattr(std::io::stdin(), SetArg::TCSANOW, t);
        }
    }
}

/// Copies the caller's window size to the pty.
pub fn copy_window_size(master: &File) {
    // SAFETY: TIOCGWINSZ/TIOCSWINSZ with a valid winsize struct.
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(libc::STDIN_FILENO, libc::TIOCGWINSZ, &mut ws) == 0 {
            libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &ws);
        }
    }
}

/// Starts copying stdin to the pty and the pty to stdout in background threads. Output copying ends
/// when the pty's other side closes; the returned handle joins it.
pub fn proxy(master: File) -> Result<std::thread::JoinHandle<()>> {
    let mut to_pty = master
        .try_clone()
        .map_err(|e| anyhow!("cannot clone the pty master: {e}"))?;
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdin.read(&mut buf) {
            if n == 0 || to_pty.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    });
    let mut from_pty = master;
    Ok(std::thread::spawn(move || {
        let mut stdout = std::io::stdout();
        let mut buf = [0u8; 4096];
        while let Ok(n) = from_pty.read(&mut buf) {
            if n == 0 || stdout.write_all(&buf[..n]).is_err() {
                break;
            }
            let _ = stdout.flush();
        }
    }))
}
