//! Step 5: devices. The device cgroup starts from deny-all and allows only null, zero, full, random,
//! urandom, tty, console, ptmx and the pts; device nodes other than those are dropped.

use oci_spec::runtime::{LinuxDeviceCgroup, LinuxDeviceType, LinuxResources, Spec};

use super::Changes;
use crate::policy::keys;

/// The character devices a container may use: (major, minor or None for all, name).
pub const ALLOWED_CHAR_DEVICES: &[(i64, Option<i64>, &str)] = &[
    (1, Some(3), "null"),
    (1, Some(5), "zero"),
    (1, Some(7), "full"),
    (1, Some(8), "random"),
    (1, Some(9), "urandom"),
    (5, Some(0), "tty"),
    (5, Some(1), "console"),
    (5, Some(2), "ptmx"),
    (136, None, "pts"),
];

/// Whether a character device number is in the allowed set.
pub fn is_allowed_char_device(major: i64, minor: i64) -> bool {
    ALLOWED_CHAR_DEVICES
        .iter()
        .any(|(ma, mi, _)| *ma == major && mi.is_none_or(|m| m == minor))
}

/// Rewrites the device cgroup rules and drops device nodes outside the allowed set.
pub fn harden_devices(spec: &mut Spec, changes: &mut Changes) {
    let linux = spec.linux_mut().get_or_insert_with(Default::default);

    if let Some(nodes) = linux.devices_mut() {
        let before: Vec<String> = nodes
            .iter()
            .map(|d| d.path().display().to_string())
            .collect();
        // ptmx, the console and the pts are never nodes of the spec: /dev/ptmx is the container's
        // own devpts's, /dev/console its terminal, and (in a user namespace, where nodes are binds
        // of the host's) a listed /dev/pts/N would be one of the host's terminals
        nodes.retain(|d| {
            d.typ() == LinuxDeviceType::C
                && is_allowed_char_device(d.major(), d.minor())
                && !(d.major() == 5 && matches!(d.minor(), 1 | 2))
                && d.major() != 136
        });
        let after: Vec<String> = nodes
            .iter()
            .map(|d| d.path().display().to_string())
            .collect();
        let dropped: Vec<&String> = before.iter().filter(|p| !after.contains(p)).collect();
        if !dropped.is_empty() {
            changes.push(
                keys::DEVICES,
                format!(
                    "dropped device nodes {}",
                    dropped
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
    }

    let wanted = device_rules();
    let res = linux
        .resources_mut()
        .get_or_insert_with(LinuxResources::default);
    if res.devices().as_ref() != Some(&wanted) {
        if res.devices().as_ref().is_some_and(|d| !d.is_empty()) {
            changes.push(
                keys::DEVICES,
                "caller's device cgroup rules replaced by deny-all plus the allowed set",
            );
        } else {
            changes.push(
                keys::DEVICES,
                "device cgroup: deny-all plus the allowed set",
            );
        }
        res.set_devices(Some(wanted));
    }
}

/// The device cgroup rules of every container: deny everything, then allow the listed devices.
pub fn device_rules() -> Vec<LinuxDeviceCgroup> {
    let mut v = Vec::new();
    let mut deny = LinuxDeviceCgroup::default();
    deny.set_allow(false);
    deny.set_typ(Some(LinuxDeviceType::A));
    deny.set_access(Some("rwm".into()));
    v.push(deny);
    for (major, minor, _) in ALLOWED_CHAR_DEVICES {
        let mut r = LinuxDeviceCgroup::default();
        r.set_allow(true);
        r.set_typ(Some(LinuxDeviceType::C));
        r.set_major(Some(*major));
        r.set_minor(*minor);
        r.set_access(Some("rwm".into()));
        v.push(r);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harden::testutil::*;
    use oci_spec::runtime::LinuxDevice;

    #[test]
    fn rules_start_with_deny_all() {
        let r = device_rules();
        assert!(!r[0].allow());
        assert_eq!(r[0].typ(), Some(LinuxDeviceType::A));
        assert!(r[1..]
            .iter()
            .all(|d| d.allow() && d.typ() == Some(LinuxDeviceType::C)));
    }

    #[test]
    fn other_devices_are_dropped() {
        let mut s = careless_spec();
        let mut sda = LinuxDevice::default();
        sda.set_path("/dev/sda".into());
        sda.set_typ(LinuxDeviceType::B);
        sda.set_major(8);
        sda.set_minor(0);
        let mut fuse = LinuxDevice::default();
        fuse.set_path("/dev/fuse".into());
        fuse.set_typ(LinuxDeviceType::C);
        fuse.set_major(10);
        fuse.set_minor(229);
        let mut null = LinuxDevice::default();
        null.set_path("/dev/null".into());
        null.set_typ(LinuxDeviceType::C);
        null.set_major(1);
        null.set_minor(3);
        s.linux_mut()
            .as_mut()
            .unwrap()
            .set_devices(Some(vec![sda, fuse, null]));
        let mut c = Changes::default();
        harden_devices(&mut s, &mut c);
        let d = s.linux().as_ref().unwrap().devices().clone().unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].path(), std::path::Path::new("/dev/null"));
    }

    #[test]
    fn allowed_set() {
        assert!(is_allowed_char_device(1, 3));
        assert!(is_allowed_char_device(136, 7));
        assert!(!is_allowed_char_device(10, 200));
        assert!(!is_allowed_char_device(1, 1), "/dev/mem");
    }
}
