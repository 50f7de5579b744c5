//! The executor libcontainer calls inside every container process (init and exec'd) after its own setup.
//!
//! It is where rloxsc's last in-process defence lives: before the start signal it installs rloxsc's
//! compiled seccomp filter on top of whatever libcontainer applied, sets and checks no_new_privs, and
//! verifies `Seccomp: 2` with one more filter attached. If any of that fails the payload never runs.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libcontainer::oci_spec::runtime::Spec;
use libcontainer::workload::{
    Executor, ExecutorError, ExecutorSetEnvsError, ExecutorValidationError,
};

use crate::seccomp::{install_and_verify, CompiledFilter};

/// Test-only sabotage of the in-container defences, compiled only into the fault-injection build.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExecutorFaults {
    /// Skip installing the seccomp filter (the outside verification must catch it).
    pub skip_seccomp: bool,
    /// Make loading the seccomp filter fail (the container must not start).
    pub fail_seccomp: bool,
}

/// The hardened executor.
#[derive(Clone)]
pub struct HardenedExecutor {
    filter: Arc<CompiledFilter>,
    faults: ExecutorFaults,
}

impl HardenedExecutor {
    /// An executor that installs `filter` in every process it starts.
    pub fn new(filter: CompiledFilter, faults: ExecutorFaults) -> Self {
        HardenedExecutor {
            filter: Arc::new(filter),
            faults,
        }
    }
}

fn args(spec: &Spec) -> Option<&Vec<String>> {
    spec.process()
        .as_ref()
        .and_then(|p| p.args().as_ref())
        .filter(|a| !a.is_empty())
}

/// Finds `name` as execvp would, with runc's wording for the failures that clients map to exit codes
/// ("executable file not found" / "no such file or directory" -> 127, "permission denied" -> 126).
pub fn find_executable(name: &str, path_var: Option<&str>) -> Result<PathBuf, String> {
    let check = |p: &Path| -> Result<PathBuf, String> {
        let md = std::fs::metadata(p).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                format!(
                    "exec: {name:?}: stat {}: no such file or directory",
                    p.display()
                )
            }
            std::io::ErrorKind::PermissionDenied => format!("exec: {name:?}: permission denied"),
            _ => format!("exec: {name:?}: stat {}: {e}", p.display()),
        })?;
        if md.is_dir() {
            return Err(format!("exec: {name:?}: is a directory: permission denied"));
        }
        if md.permissions().mode() & 0o111 == 0 {
            return Err(format!("exec: {name:?}: permission denied"));
        }
        Ok(p.to_path_buf())
    };
    if name.contains('/') {
        return check(Path::new(name));
    }
    let path_var =
        path_var.unwrap_or("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    let mut denied = None;
    for dir in path_var.split(':').filter(|d| !d.is_empty()) {
        let candidate = Path::new(dir).join(name);
        if candidate.exists() {
            match check(&candidate) {
                Ok(p) => return Ok(p),
                Err(e) => denied = Some(e),
            }
        }
    }
    Err(denied.unwrap_or_else(|| format!("exec: {name:?}: executable file not found in $PATH")))
}

impl Executor for HardenedExecutor {
    fn validate(&self, spec: &Spec) -> Result<(), ExecutorValidationError> {
        let args = args(spec).ok_or_else(|| {
            ExecutorValidationError::ArgValidationError("process.args is empty".into())
        })?;
        let path_var = spec
            .process()
            .as_ref()
            .and_then(|p| p.env().as_ref())
            .and_then(|env| {
                env.iter()
                    .find_map(|e| e.strip_prefix("PATH="))
                    .map(str::to_string)
            });
        find_executable(&args[0], path_var.as_deref())
            .map(|_| ())
            .map_err(ExecutorValidationError::ArgValidationError)
    }

    fn setup_envs(&self, envs: HashMap<String, String>) -> Result<(), ExecutorSetEnvsError> {
        for (k, _) in std::env::vars_os() {
            // SAFETY: the container process is single-threaded here.
            unsafe { std::env::remove_var(k) };
        }
        for (k, v) in envs {
            // SAFETY: as above.
            unsafe { std::env::set_var(k, v) };
        }
        if self.faults.fail_seccomp {
            return Err(ExecutorSetEnvsError::Other(
                "loading rloxsc's seccomp filter failed: injected fault (policy key seccomp.profile)".into(),
            ));
        }
        if self.faults.skip_seccomp {
            return Ok(());
        }
        install_and_verify(&self.filter)
            .map_err(|e| ExecutorSetEnvsError::Other(format!("{e:#} (policy key seccomp.profile)")))
    }

    fn exec(&self, spec: &Spec) -> Result<(), ExecutorError> {
        let args = args(spec).ok_or(ExecutorError::InvalidArg)?;
        let argv: Vec<CString> = args
            .iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(|_| ExecutorError::InvalidArg)?;
        reset_signals();
        let err = nix::unistd::execvp(&argv[0], &argv).unwrap_err();
        let msg = match err {
            nix::errno::Errno::ENOENT => format!("exec: {:?}: no such file or directory", args[0]),
            nix::errno::Errno::EACCES => format!("exec: {:?}: permission denied", args[0]),
            e => format!("exec: {:?}: {}", args[0], e.desc()),
        };
        Err(ExecutorError::Other(msg))
    }
}

/// Every signal back to its default disposition and none blocked, as the payload starts under runc
/// and crun: an ignored signal stays ignored across execve, and rloxsc's own process ignores SIGPIPE
/// (as every Rust program does), as may whoever started rloxsc (a shell's background job ignores
/// SIGINT and SIGQUIT) — which would leave `yes | head` and Python's `KeyboardInterrupt` behaving
/// differently in the container.
fn reset_signals() {
    // the kernel's struct sigaction for rt_sigaction(2), all zero: SIG_DFL, no flags, empty mask
    #[repr(C)]
    struct KernelSigaction {
        handler: usize,
        flags: u64,
        restorer: usize,
        mask: u64,
    }
    let default = KernelSigaction {
        handler: libc::SIG_DFL,
        flags: 0,
        restorer: 0,
        mask: 0,
    };
    // only an ignored signal survives execve (a handled one is reset by it): the ignored set, as the
    // kernel reports it, else every signal
    let ignored = ignored_signals().unwrap_or(u64::MAX);
    // the raw syscall: glibc's sigaction refuses its internal signals 32 and 33, which a caller may
    // have left ignored too
    for sig in 1..=64 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP || ignored & (1u64 << (sig - 1)) == 0 {
            continue;
        }
        // SAFETY: rt_sigaction with a valid struct for the new action, no old action, 8-byte masks
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                sig,
                &default as *const KernelSigaction,
                std::ptr::null_mut::<KernelSigaction>(),
                8usize,
            )
        };
    }
    // SAFETY: an empty set, filled by sigemptyset, then installed as the mask
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
}

/// The signals this thread ignores (`SigIgn` of `/proc/thread-self/status`: bit n-1 for signal n).
fn ignored_signals() -> Option<u64> {
    let status = crate::fsutil::read_small_string("/proc/thread-self/status").ok()?;
    let hex = status.lines().find_map(|l| l.strip_prefix("SigIgn:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_executable_uses_runc_wording() {
        let e = find_executable("definitely-not-here", Some("/bin")).unwrap_err();
        assert!(e.contains("executable file not found"), "{e}");
        let e = find_executable("/definitely/not/here", None).unwrap_err();
        assert!(e.contains("no such file or directory"), "{e}");
    }

    #[test]
    fn non_executable_is_permission_denied() {
        let f = std::env::temp_dir().join(format!("rloxsc-noexec-{}", std::process::id()));
        std::fs::write(&f, "data").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = find_executable(f.to_str().unwrap(), None).unwrap_err();
        std::fs::remove_file(&f).unwrap();
        assert!(e.contains("permission denied"), "{e}");
        let e = find_executable("/etc", None).unwrap_err();
        assert!(e.contains("permission denied"), "{e}");
    }

    #[test]
    fn finds_sh_in_path() {
        assert!(find_executable("sh", Some("/nonexistent:/bin:/usr/bin")).is_ok());
    }
}
