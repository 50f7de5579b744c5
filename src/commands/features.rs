//! `features`: the OCI runtime features document.

use anyhow::Result;
use serde_json::json;

use crate::facts::{ns_file, ALL_NAMESPACES};
use crate::policy::FORBIDDEN_CAPABILITIES;

/// The mount options rloxsc accepts; `idmap`/`ridmap` where idmapped mounts work, `rro` where the
/// kernel applies read-only recursively (`mount_setattr` with `AT_RECURSIVE`, Linux 5.12).
fn mount_options(idmap: bool) -> Vec<&'static str> {
    let mut v = vec![
        "ro",
        "rw",
        "nosuid",
        "nodev",
        "noexec",
        "bind",
        "rbind",
        "private",
        "rprivate",
        "slave",
        "rslave",
        "shared",
        "rshared",
        "unbindable",
        "runbindable",
        "relatime",
        "strictatime",
        "noatime",
        "mode",
        "size",
        "uid",
        "gid",
    ];
    if has_mount_setattr() {
        v.extend(["rro", "rnosuid", "rnodev", "rnoexec"]);
    }
    if idmap {
        v.extend(["idmap", "ridmap"]);
    }
    v
}

/// Whether the kernel has `mount_setattr` (Linux 5.12), which applies the recursive options.
fn has_mount_setattr() -> bool {
    // SAFETY: mount_setattr on an invalid fd changes nothing; only the errno is looked at
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            -1,
            c"".as_ptr(),
            0,
            std::ptr::null::<u8>(),
            0,
        )
    };
    rc < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS)
}

/// Prints the features JSON. Capabilities list only what a container can actually hold under rloxsc.
pub fn features(ctx: &super::Context) -> Result<()> {
    let caps: Vec<String> = ctx
        .policy
        .allowed_capabilities()
        .iter()
        .map(|c| format!("CAP_{c}"))
        .collect();
    let forbidden: Vec<String> = FORBIDDEN_CAPABILITIES
        .iter()
        .map(|c| format!("CAP_{c}"))
        .collect();
    // user namespaces and idmapped mounts are listed only where both work here
    let userns_ok = crate::userns::probe().is_ok();
    let namespaces: Vec<&str> = ALL_NAMESPACES
        .iter()
        .filter(|t| userns_ok || **t != oci_spec::runtime::LinuxNamespaceType::User)
        .map(|t| match ns_file(*t) {
            "mnt" => "mount",
            "net" => "network",
            n => n,
        })
        .collect();
    let doc = json!({
        "ociVersionMin": "1.0.0",
        "ociVersionMax": "1.2.0",
        "hooks": ["prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"],
        "mountOptions": mount_options(userns_ok),
        "linux": {
            "namespaces": namespaces,
            "capabilities": caps,
            "cgroup": {"v1": true, "v2": true, "systemd": true, "systemdUser": false, "rdma": false},
            "seccomp": {
                "enabled": true,
                "actions": ["SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS",
                            "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG", "SCMP_ACT_TRACE", "SCMP_ACT_TRAP", "SCMP_ACT_NOTIFY"],
                "operators": ["SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_LE", "SCMP_CMP_LT",
                              "SCMP_CMP_MASKED_EQ", "SCMP_CMP_NE"],
                "archs": ["SCMP_ARCH_X86_64"],
            },
            "apparmor": {"enabled": true},
            "selinux": {"enabled": false},
            "intelRdt": {"enabled": false},
            "mountExtensions": {"idmap": {"enabled": userns_ok}},
        },
        "annotations": {
            "run.rloxsc.hardened": "true",
            "run.rloxsc.network.mode": ctx.policy.network.as_str(),
            "run.rloxsc.capabilities.forbidden": forbidden.join(","),
            "run.rloxsc.seccomp": "rloxsc allowlist always stacked under the caller's profile",
        },
    });
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}
