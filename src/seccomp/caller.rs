//! The caller's own seccomp profile (config.json's `linux.seccomp`), which libcontainer installs under
//! rloxsc's allowlist: the one change rloxsc makes to it.
//!
//! A profile written for an older kernel lists syscalls up to some number and denies the rest by its
//! default action. For syscalls *newer* than any it names, runc answers ENOSYS instead (its
//! `patchbpf`): a libc or language runtime probing a new syscall (`close_range`, `faccessat2`,
//! `fchmodat2`, `clone3`) falls back to the old one on ENOSYS only and fails on EPERM. rloxsc does the
//! same by adding one rule, ERRNO(ENOSYS) for every syscall libseccomp knows past the profile's newest,
//! so Docker's and Podman's profiles (which stop at the syscalls of their release) behave as under
//! runc on newer kernels. Numbers libseccomp does not know yet are answered ENOSYS by rloxsc's own
//! filter, installed after the profile (the most recent filter's errno wins).
//!
//! Nothing is allowed that the profile denied: a denied syscall stays denied, with another errno.

use libseccomp::ScmpSyscall;
use oci_spec::runtime::{LinuxSeccomp, LinuxSeccompAction, LinuxSyscallBuilder};

use super::compile::LAST_NATIVE_SYSCALL;

/// Linux's ENOSYS.
const ENOSYS: u32 = 38;

/// Adds to `profile`, when its default action denies, one rule making every syscall newer than the
/// newest it names answer ENOSYS. Returns what was changed (for the change log), or `None` when the
/// profile allows by default, names no syscall libseccomp knows, or names the newest already.
pub fn enosys_past_the_profile(profile: &mut LinuxSeccomp) -> Option<String> {
    if matches!(
        profile.default_action(),
        LinuxSeccompAction::ScmpActAllow | LinuxSeccompAction::ScmpActLog
    ) {
        return None;
    }
    let newest = profile
        .syscalls()
        .iter()
        .flatten()
        .flat_map(|rule| rule.names())
        .filter_map(|name| ScmpSyscall::from_name(name).ok())
        .map(|sc| sc.as_raw_syscall())
        .filter(|nr| *nr >= 0)
        .max()?;
    let newer: Vec<String> = (newest + 1..=LAST_NATIVE_SYSCALL)
        .filter_map(|nr| ScmpSyscall::from_raw_syscall(nr).get_name().ok())
        .collect();
    let (first, last) = (newer.first()?.clone(), newer.last()?.clone());
    let rule = LinuxSyscallBuilder::default()
        .names(newer.clone())
        .action(LinuxSeccompAction::ScmpActErrno)
        .errno_ret(ENOSYS)
        .build()
        .ok()?;
    let mut rules = profile.syscalls().clone().unwrap_or_default();
    rules.push(rule);
    profile.set_syscalls(Some(rules));
    Some(format!(
        "the caller's seccomp profile names syscalls up to number {newest}: the {} newer ones \
         ({first} to {last}) answer ENOSYS instead of its default action, as under runc",
        newer.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use oci_spec::runtime::LinuxSeccompBuilder;

    fn profile(default: LinuxSeccompAction, names: &[&str]) -> LinuxSeccomp {
        let rule = LinuxSyscallBuilder::default()
            .names(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .action(LinuxSeccompAction::ScmpActAllow)
            .build()
            .unwrap();
        LinuxSeccompBuilder::default()
            .default_action(default)
            .syscalls(vec![rule])
            .build()
            .unwrap()
    }

    #[test]
    fn a_profile_up_to_pidfd_open_gets_enosys_for_close_range_and_later() {
        let mut p = profile(LinuxSeccompAction::ScmpActErrno, &["read", "pidfd_open"]);
        let what = enosys_past_the_profile(&mut p).expect("a change");
        assert!(what.contains("up to number 434"), "{what}");
        let rules = p.syscalls().as_ref().unwrap();
        let added = rules.last().unwrap();
        assert_eq!(added.action(), LinuxSeccompAction::ScmpActErrno);
        assert_eq!(added.errno_ret(), Some(ENOSYS));
        for newer in ["clone3", "close_range", "faccessat2"] {
            assert!(added.names().iter().any(|n| n == newer), "{newer}");
        }
        assert!(!added
            .names()
            .iter()
            .any(|n| n == "pidfd_open" || n == "read"));
    }

    #[test]
    fn allow_by_default_and_empty_profiles_are_left_alone() {
        let mut p = profile(LinuxSeccompAction::ScmpActAllow, &["read"]);
        assert!(enosys_past_the_profile(&mut p).is_none());
        assert_eq!(p.syscalls().as_ref().unwrap().len(), 1);
        let mut p = profile(LinuxSeccompAction::ScmpActErrno, &["no_such_syscall"]);
        assert!(enosys_past_the_profile(&mut p).is_none());
    }
}
