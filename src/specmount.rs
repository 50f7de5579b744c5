//! What a spec's mount is, decided once for every area that reads mounts (hardening, its invariants,
//! the host facts, the views, the launch's mount points, verification): pure, no I/O.

use oci_spec::runtime::Mount;

/// Whether `m` is a bind mount (type `bind`, or a `bind`/`rbind` option): its source is a path.
pub fn is_bind(m: &Mount) -> bool {
    m.typ().as_deref() == Some("bind") || has_option(m, "bind") || is_recursive_bind(m)
}

/// Whether `m` binds its source's whole tree (`rbind`), mounts below it included.
pub fn is_recursive_bind(m: &Mount) -> bool {
    has_option(m, "rbind")
}

/// Whether `m` lists option `name`.
pub fn has_option(m: &Mount, name: &str) -> bool {
    m.options().iter().flatten().any(|o| o == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oci_spec::runtime::MountBuilder;

    fn mount(typ: &str, options: &[&str]) -> Mount {
        MountBuilder::default()
            .destination("/x")
            .typ(typ)
            .source("/y")
            .options(options.iter().map(|o| o.to_string()).collect::<Vec<_>>())
            .build()
            .unwrap()
    }

    #[test]
    fn a_bind_is_named_by_its_type_or_an_option() {
        assert!(is_bind(&mount("bind", &[])));
        assert!(is_bind(&mount("none", &["bind", "ro"])));
        assert!(is_bind(&mount("", &["rbind"])));
        assert!(is_recursive_bind(&mount("bind", &["rbind"])));
        assert!(!is_recursive_bind(&mount("bind", &["bind"])));
        assert!(!is_bind(&mount("tmpfs", &["nosuid"])));
        assert!(!is_bind(&mount("proc", &[])));
    }
}
