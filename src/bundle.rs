//! rloxsc's own directories under `--root`: libcontainer's state and the private bundles.
//!
//! libcontainer reads the spec only from `<bundle>/config.json`, so the hardened spec lives in a bundle
//! directory of rloxsc's own (`<root>/bundles/<id>`), never in the caller's. It also keeps what rloxsc
//! needs after create: the caller's bundle path (reported by `state`) and the list of changes.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use oci_spec::runtime::Spec;
use serde::{Deserialize, Serialize};

/// The directories rloxsc keeps under its root.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

/// What rloxsc remembers about a container besides libcontainer's state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BundleMeta {
    /// The bundle directory the caller gave.
    pub caller_bundle: PathBuf,
    /// Every tightening applied to the caller's spec.
    pub changes: Vec<String>,
}

impl Layout {
    /// The layout under `root` (not created yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Layout { root: root.into() }
    }

    /// The runtime root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// libcontainer's state root: `<root>/containers`.
    pub fn containers(&self) -> PathBuf {
        self.root.join("containers")
    }

    /// The state directory of container `id`.
    pub fn container_dir(&self, id: &str) -> PathBuf {
        self.containers().join(id)
    }

    /// The private bundle of container `id`.
    pub fn bundle_dir(&self, id: &str) -> PathBuf {
        self.root.join("bundles").join(id)
    }

    /// Creates the root and its subdirectories (mode 0700).
    pub fn ensure(&self) -> Result<()> {
        for d in [
            self.root.clone(),
            self.containers(),
            self.root.join("bundles"),
        ] {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&d)
                .with_context(|| format!("cannot create state directory {}", d.display()))?;
        }
        Ok(())
    }

    /// Writes the private bundle of `id`: the hardened config.json and rloxsc.json. Fails if it exists.
    pub fn write_bundle(&self, id: &str, spec: &Spec, meta: &BundleMeta) -> Result<PathBuf> {
        let dir = self.bundle_dir(id);
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("cannot create private bundle {}", dir.display()))?;
        let res = (|| -> Result<()> {
            write_new(&dir.join("config.json"), &serde_json::to_vec(spec)?)?;
            write_new(&dir.join("rloxsc.json"), &serde_json::to_vec_pretty(meta)?)?;
            Ok(())
        })();
        if let Err(e) = res {
            let _ = fs::remove_dir_all(&dir);
            return Err(e);
        }
        Ok(dir)
    }

    /// Reads rloxsc.json of `id`, if present.
    pub fn read_meta(&self, id: &str) -> Option<BundleMeta> {
        let data = fs::read(self.bundle_dir(id).join("rloxsc.json")).ok()?;
        serde_json::from_slice(&data).ok()
    }

    /// Reads the hardened spec of `id`.
    pub fn read_spec(&self, id: &str) -> Result<Spec> {
        let p = self.bundle_dir(id).join("config.json");
        Spec::load(&p).with_context(|| format!("cannot read the hardened spec {}", p.display()))
    }

    /// Replaces the hardened spec of `id` (after `update`), atomically.
    pub fn rewrite_spec(&self, id: &str, spec: &Spec) -> Result<()> {
        let p = self.bundle_dir(id).join("config.json");
        let tmp = self
            .bundle_dir(id)
            .join(format!(".config.json.{}", std::process::id()));
        fs::write(&tmp, serde_json::to_vec(spec)?)
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        fs::rename(&tmp, &p).with_context(|| format!("cannot replace {}", p.display()))
    }

    /// Removes the private bundle of `id` (absent is fine).
    pub fn remove_bundle(&self, id: &str) -> Result<()> {
        let dir = self.bundle_dir(id);
        match fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).with_context(|| format!("cannot remove {}", dir.display())),
        }
    }
}

fn write_new(path: &Path, data: &[u8]) -> Result<()> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(data)
        .with_context(|| format!("cannot write {}", path.display()))?;
    f.sync_data().ok();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundle_roundtrip_and_removal() {
        let root = std::env::temp_dir().join(format!("rloxsc-layout-{}", std::process::id()));
        let l = Layout::new(&root);
        l.ensure().unwrap();
        let meta = BundleMeta {
            caller_bundle: "/b".into(),
            changes: vec!["x".into()],
        };
        l.write_bundle("c1", &Spec::default(), &meta).unwrap();
        assert!(
            l.write_bundle("c1", &Spec::default(), &meta).is_err(),
            "exists"
        );
        assert_eq!(
            l.read_meta("c1").unwrap().caller_bundle,
            PathBuf::from("/b")
        );
        l.read_spec("c1").unwrap();
        l.remove_bundle("c1").unwrap();
        l.remove_bundle("c1").unwrap();
        assert!(!l.bundle_dir("c1").exists());
        fs::remove_dir_all(&root).unwrap();
    }
}
