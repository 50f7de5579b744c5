//! Installs the compiled filter in the calling process and verifies it took effect.
//!
//! Runs inside the container's init (and every exec'd process), after libcontainer's own setup and the
//! caller's profile, right before the payload's `execve`. Any failure is returned: the payload never runs.

use anyhow::{bail, Context, Result};

use super::CompiledFilter;

const SECCOMP_SET_MODE_FILTER: libc::c_ulong = 1;

/// The seccomp fields of `/proc/self/status`: (mode, number of filters).
pub fn seccomp_status(status: &str) -> (Option<u32>, Option<u32>) {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u32>().ok())
    };
    (field("Seccomp:"), field("Seccomp_filters:"))
}

fn read_status() -> Result<String> {
    std::fs::read_to_string("/proc/self/status")
        .context("cannot read /proc/self/status to verify seccomp")
}

/// Sets no_new_privs, loads `filter`'s programs, then checks that no_new_privs is on, the process is
/// in seccomp filter mode and exactly [`super::PROGRAMS`] more filters are attached than before.
pub fn install_and_verify(filter: &CompiledFilter) -> Result<()> {
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        bail!(
            "cannot set no_new_privs: {}",
            std::io::Error::last_os_error()
        );
    }
    let before = seccomp_status(&read_status()?).1.unwrap_or(0);

    for prog in [&filter.bpf, &filter.guard] {
        load(prog)?;
    }

    // SAFETY: prctl with integer arguments only.
    let nnp = unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) };
    let (mode, after) = seccomp_status(&read_status()?);
    if nnp != 1 {
        bail!("no_new_privs is not set after loading seccomp");
    }
    if mode != Some(2) {
        bail!("seccomp mode is {mode:?} after loading rloxsc's filter, expected 2 (filter)");
    }
    if after.unwrap_or(0) != before + super::PROGRAMS {
        bail!(
            "seccomp filter count went from {before} to {after:?}, expected {}",
            before + super::PROGRAMS
        );
    }
    Ok(())
}

/// Loads one BPF program as a seccomp filter of the calling thread.
fn load(bpf: &[u8]) -> Result<()> {
    if bpf.is_empty() || bpf.len() % 8 != 0 || bpf.len() / 8 > u16::MAX as usize {
        bail!("malformed seccomp program ({} bytes)", bpf.len());
    }
    let prog = libc::sock_fprog {
        len: (bpf.len() / 8) as u16,
        filter: bpf.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `prog` points into `bpf`, alive for the call; the kernel copies the program.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_SET_MODE_FILTER,
            0 as libc::c_ulong,
            &prog as *const libc::sock_fprog,
        )
    };
    if rc != 0 {
        bail!(
            "loading rloxsc's seccomp filter failed: {} (a caller's profile that denies seccomp(2) prevents it)",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status() {
        let s = "Name:\tsh\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t3\n";
        assert_eq!(seccomp_status(s), (Some(2), Some(3)));
        assert_eq!(seccomp_status("Name: x\n"), (None, None));
    }
}
