//! Test-only fault injection. The production binary has none of it: the `fault-injection` cargo feature
//! builds a separate binary (`make` puts it at `target/fault/x86_64-unknown-linux-gnu/release/rloxsc`) in which the environment
//! variable `RLOXSC_FAULT` (a comma-separated list) skips one hardening or makes one step fail, so that
//! tests can show each verification fires and each failure fails closed.

use oci_spec::runtime::Spec;

use crate::executor::ExecutorFaults;

/// The faults requested for this invocation.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    names: Vec<String>,
}

impl Faults {
    /// Reads `RLOXSC_FAULT` in the fault-injection build; always empty in production.
    pub fn from_env() -> Faults {
        #[cfg(feature = "fault-injection")]
        {
            let names = std::env::var("RLOXSC_FAULT")
                .unwrap_or_default()
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            Faults { names }
        }
        #[cfg(not(feature = "fault-injection"))]
        Faults::default()
    }

    /// Whether fault `name` was requested.
    pub fn has(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    /// `kill-at-PHASE`: the runtime SIGKILLs itself at the end of `create`'s phase PHASE (see
    /// [`crate::launch::create`]), so tests can show that whatever a killed create holds at any phase
    /// is given back by one `delete --force` or by the custodian of a killed foreground `run`.
    pub fn die_at(&self, phase: &str) {
        if self.names.is_empty() {
            return;
        }
        if self.has(&format!("kill-at-{phase}")) {
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
        }
    }

    /// The faults that act inside the container.
    pub fn executor(&self) -> ExecutorFaults {
        ExecutorFaults {
            skip_seccomp: self.has("skip-seccomp") || self.has("skip-nnp"),
            fail_seccomp: self.has("fail-seccomp"),
        }
    }

    /// Undoes hardening steps of an already hardened spec, as the faults ask.
    pub fn sabotage(&self, spec: &mut Spec) {
        if self.names.is_empty() {
            return;
        }
        use oci_spec::runtime::LinuxNamespaceType as T;
        if let Some(linux) = spec.linux_mut() {
            if self.has("skip-netns") {
                if let Some(ns) = linux.namespaces_mut() {
                    ns.retain(|n| n.typ() != T::Network);
                }
            }
            if self.has("skip-masked") {
                linux.set_masked_paths(Some(vec![]));
                linux.set_readonly_paths(Some(vec![]));
            }
            if let Some(res) = linux.resources_mut() {
                if self.has("skip-pids") {
                    res.set_pids(None);
                }
                if self.has("skip-memory") {
                    res.set_memory(None);
                }
            }
        }
        if self.has("skip-readonly-root") {
            if let Some(root) = spec.root_mut() {
                root.set_readonly(Some(false));
            }
        }
        if self.has("skip-cgroupfs-ro") {
            if let Some(ms) = spec.mounts_mut() {
                for m in ms.iter_mut() {
                    if m.typ().as_deref() == Some("cgroup") {
                        let o: Vec<String> = m
                            .options()
                            .clone()
                            .unwrap_or_default()
                            .into_iter()
                            .filter(|o| o != "ro")
                            .collect();
                        m.set_options(Some(o));
                    }
                }
            }
            if let Some(linux) = spec.linux_mut() {
                if let Some(ro) = linux.readonly_paths_mut() {
                    ro.retain(|p| !p.starts_with("/sys/fs/cgroup"));
                }
            }
        }
        if let Some(p) = spec.process_mut() {
            if self.has("skip-nnp") {
                p.set_no_new_privileges(Some(false));
            }
            if self.has("skip-caps") {
                let mut caps = p.capabilities().clone().unwrap_or_default();
                let mut b = caps.bounding().clone().unwrap_or_default();
                b.insert(oci_spec::runtime::Capability::SysAdmin);
                caps.set_bounding(Some(b));
                p.set_capabilities(Some(caps));
            }
            if self.has("skip-rlimits") {
                p.set_rlimits(None);
            }
        }
    }
}
