//! Everything a container holds on the host, in one ledger, and the one way to give it back.
//!
//! `create` writes the ledger (`<root>/bundles/<id>/footprint.json`) *before* it acquires each
//! resource, so a runtime killed at any point leaves a ledger naming everything it may hold. The one
//! [`release`] gives it all back, in a fixed order: the container's processes (its cgroup's, and a
//! killed create's orphans), the client's view of its filesystem, libcontainer's state and the
//! cgroups (poststop hooks run here), the view directory (the store with it), the client's layer as
//! kept (rloxsc's work directory in it; nothing the container wrote is copied or removed), the block
//! of host ids, the private bundle and the ledger last. Every step tolerates what was never
//! acquired, so a second release after a kill finishes the first; every step is bounded in time and
//! none grows with what the container wrote. A create that fails, `delete`, `delete --force` and the
//! custodian of a killed `run` all end in it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use serde::{Deserialize, Serialize};

use crate::bundle::Layout;
use crate::cgroups::{Driver, Placement};
use crate::rootfs::layer::Kept;
use crate::rootfs::Writes;

/// The client's view of the container's filesystem, attached on its rootfs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostView {
    /// The client's rootfs.
    pub rootfs: PathBuf,
    /// The view's mount source tag.
    pub tag: String,
}

/// What container `id` holds (or may hold: each is recorded before it is acquired).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// Its block of host ids.
    #[serde(default)]
    pub userns: Option<crate::userns::Allocation>,
    /// Its view directory (`/run/rloxsc-views/<token>`: the root overlay, the store, the clones).
    #[serde(default)]
    pub views: Option<PathBuf>,
    /// The client's view of its filesystem.
    #[serde(default)]
    pub host_view: Option<HostView>,
    /// Where its writes land.
    #[serde(default)]
    pub writes: Option<Writes>,
    /// The client's writable layer, as kept.
    #[serde(default)]
    pub layer: Option<Kept>,
    /// Its cgroups path.
    #[serde(default)]
    pub cgroups_path: Option<PathBuf>,
    /// The driver that manages its cgroup (chosen at create: `--systemd-cgroup`).
    #[serde(default)]
    pub cgroup_driver: Driver,
}

impl Ledger {
    /// Its cgroup, as recorded.
    pub fn placement(&self) -> Option<Placement> {
        self.cgroups_path.clone().map(|path| Placement {
            path,
            driver: self.cgroup_driver,
        })
    }
}

/// The cgroup of container `id`: from its ledger, else (a create killed before it recorded one)
/// from its hardened spec, managed by cgroupfs.
pub fn placement(layout: &Layout, id: &str) -> Option<Placement> {
    placement_in(&Footprint::load(layout, id).ledger, layout, id)
}

/// The cgroup of container `id` as [`placement`] finds it, from its ledger already read.
fn placement_in(ledger: &Ledger, layout: &Layout, id: &str) -> Option<Placement> {
    ledger.placement().or_else(|| {
        layout
            .read_spec(id)
            .ok()
            .and_then(|s| s.linux().as_ref().and_then(|l| l.cgroups_path().clone()))
            .map(Placement::cgroupfs)
    })
}

/// The ledger of one container, on disk.
#[derive(Debug)]
pub struct Footprint {
    /// The ledger file, open for writing (only for the footprint a create began).
    out: Option<std::fs::File>,
    /// How many bytes the file holds (a shorter ledger is padded with blanks to that length).
    written: usize,
    /// What it holds.
    pub ledger: Ledger,
}

const FILE: &str = "footprint.json";

/// The most a ledger may take, so that each rewrite is one write within one page.
const PAGE: usize = 4096;

impl Footprint {
    /// Starts the footprint of a new container `id`: creates its private bundle directory (which
    /// fails if the id is taken) and an empty ledger in it.
    pub fn begin(layout: &Layout, id: &str) -> Result<Footprint> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = layout.bundle_dir(id);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => {
                    anyhow::anyhow!("container with id {id:?} already exists")
                }
                _ => anyhow::anyhow!("cannot create private bundle {}: {e}", dir.display()),
            })?;
        // the directory was made just now, 0700, in the checked state root: the file is made in it
        // once and kept open; every later record rewrites it in place (no path walk, no new inode)
        let mut f = match crate::fsutil::create_new(&dir.join(FILE), 0o600) {
            Ok(out) => Footprint {
                out: Some(out),
                written: 0,
                ledger: Ledger::default(),
            },
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                bail!(
                    "cannot write the container footprint in {}: {e}",
                    dir.display()
                );
            }
        };
        if let Err(e) = f.save() {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e);
        }
        Ok(f)
    }

    /// The footprint of container `id` (an empty ledger when there is none: a create killed before
    /// it wrote one holds nothing this could name, and the fallbacks of [`release`] find the rest).
    pub fn load(layout: &Layout, id: &str) -> Footprint {
        let file = layout.bundle_dir(id).join(FILE);
        let ledger = crate::fsutil::read_small(&file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        Footprint {
            out: None,
            written: 0,
            ledger,
        }
    }

    /// Records `change` in the ledger, on disk, before the resource is acquired.
    pub fn record(&mut self, change: impl FnOnce(&mut Ledger)) -> Result<()> {
        change(&mut self.ledger);
        self.save()
    }

    /// Rewrites the ledger in place with one `pwrite` of at most a page (a kill never leaves half
    /// of it): JSON, then blanks over whatever a longer earlier ledger left (JSON allows them).
    fn save(&mut self) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let Some(out) = &self.out else {
            bail!("the container footprint was loaded to be read, not recorded in");
        };
        let mut bytes = serde_json::to_vec(&self.ledger)?;
        if bytes.len() > PAGE {
            bail!(
                "the container footprint outgrew a page ({} bytes)",
                bytes.len()
            );
        }
        let len = bytes.len();
        bytes.resize(len.max(self.written), b' ');
        out.write_all_at(&bytes, 0)
            .context("cannot write the container footprint")?;
        self.written = bytes.len();
        Ok(())
    }
}

/// How long each step may take at most: killing and waiting for the processes, detaching,
/// removing cgroups.
const STEP_LIMIT: Duration = Duration::from_secs(10);

/// Gives back everything container `id` under `layout` holds (see the module documentation). Each
/// step is bounded by itself; a step that fails does not stop the others. Returns what could not be
/// given back (each with its cause; empty when everything was), for `delete` to fail on: a delete
/// that reports success with something left behind would hide it.
#[must_use = "what could not be released must reach the caller"]
pub fn release(layout: &Layout, id: &str) -> Vec<String> {
    let mut left = Vec::new();
    let fp = Footprint::load(layout, id);
    let l = &fp.ledger;
    let cgroup = placement_in(l, layout, id);

    // 1. nothing of the container runs any more (a create libcontainer finished left no process
    // outside the cgroup: only an unfinished one needs the hunt through every process of the host)
    if create_may_be_unfinished(layout, id) {
        kill_unfinished_create(layout, id);
    }
    if let Some(cg) = &cgroup {
        cg.kill_all();
    }
    // 2. the client's view (nobody writes into the store any more)
    if let Some(h) = &l.host_view {
        crate::rootfs::hostview::detach(&h.rootfs, &h.tag);
    }
    // 4. libcontainer's state (poststop hooks) and the cgroups: libcontainer's own delete only where
    // it has something to do that rloxsc does not (poststop hooks, Intel RDT) or the cgroup is not
    // known here; otherwise the cgroup is removed below and the state directory with it, without
    // loading its config twice and building a cgroup manager over the host's mount table
    let dir = layout.container_dir(id);
    if dir.join("state.json").exists() {
        match libcontainer::container::Container::load(dir.clone()) {
            Ok(mut c) => {
                if cgroup.is_none() || needs_libcontainers_delete(&c, &dir) {
                    if let Err(e) = c.delete(true) {
                        tracing::warn!(
                            "container {id}: libcontainer could not delete it ({}); removing its cgroup and state directly",
                            crate::errors::error_chain(&e)
                        );
                    }
                }
            }
            Err(e) => tracing::warn!("container {id}: its state cannot be read ({e}); removing its cgroup and state directly"),
        }
    }
    if let Some(cg) = &cgroup {
        if let Err(e) = cg.remove(id) {
            // the state and the ledger are kept: a later delete --force finds the cgroup again
            left.push(format!(
                "{e:#} (its state is kept for delete --force to retry)"
            ));
            tracing::warn!("container {id}: not released: {}", left[0]);
            return left;
        }
    }
    if let Err(e) = std::fs::remove_dir_all(&dir) {
        if e.kind() != std::io::ErrorKind::NotFound {
            left.push(format!("its state directory {}: {e}", dir.display()));
        }
    }
    // 5. the view directory (also one a create killed before it recorded it made), each once
    let made = crate::views::dir_for(layout.root(), id);
    for v in l.views.iter().filter(|v| **v != made) {
        crate::views::ViewDir::remove(v);
    }
    crate::views::ViewDir::remove(&made);
    // 6. the client's layer as kept: rloxsc's work directory in it, the clone detached (the private
    // bundle below holds the clone's mount point: it is never removed while the clone is there)
    if let Some(k) = &l.layer {
        if let Err(e) = k.release() {
            left.push(format!(
                "{e:#} (its state is kept for delete --force to retry)"
            ));
            return left;
        }
    }
    // 7. the block of host ids
    match &l.userns {
        Some(a) => crate::userns::free(a, layout.root(), id),
        None => crate::userns::free_owned_by(layout.root(), id),
    }
    // 8. the private bundle, the ledger with it
    if let Err(e) = layout.remove_bundle(id) {
        left.push(format!("{e:#}"));
    }
    for what in &left {
        tracing::warn!("container {id}: not released: {what}");
    }
    left
}

/// Whether libcontainer's own delete has work rloxsc's release does not do for container `c`
/// (state directory `dir`): poststop hooks to run, or an Intel RDT group to remove. A config that
/// cannot be read says yes (libcontainer's delete then decides what to skip).
fn needs_libcontainers_delete(c: &libcontainer::container::Container, dir: &Path) -> bool {
    if c.intel_rdt_dir().is_some() {
        return true;
    }
    match libcontainer::config::YoukiConfig::load(dir) {
        Ok(config) => config
            .hooks
            .as_ref()
            .and_then(|h| h.poststop().as_ref())
            .is_some_and(|hooks| !hooks.is_empty()),
        Err(_) => true,
    }
}

/// Kills what a `create` or `run` of `id` that never finished (rloxsc SIGKILLed halfway) left running
/// outside the container's cgroup. libcontainer's intermediate and init processes are clones of
/// rloxsc (same binary, same argv) that carry on alone: they create the cgroups and the init waits
/// for `start`. Unless they are killed first they recreate what the release removes (found by
/// tests/killed_create.rs: empty cgroup directories left behind). Matched by the rloxsc binary, the
/// verb, the id and the same `--root`; repeated until none is left (one may be cloning).
pub fn kill_unfinished_create(layout: &Layout, id: &str) {
    let root = canonical_root(layout);
    let until = Instant::now() + STEP_LIMIT;
    while Instant::now() < until {
        let pids = unfinished_create_processes(&root, id);
        if pids.is_empty() {
            return;
        }
        for p in pids {
            tracing::warn!("container {id}: killing process {p} of a create that never finished");
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a create of `id` may have left processes outside the container's cgroup: libcontainer's
/// state is missing, unreadable or still `creating` (its intermediate and init clone rloxsc and
/// carry on alone until libcontainer records the container `created`; from then on every process
/// of the container is in its cgroup).
pub fn create_may_be_unfinished(layout: &Layout, id: &str) -> bool {
    recorded_status(layout, id).is_none_or(|s| s.eq_ignore_ascii_case("creating"))
}

/// The status libcontainer's state file of `id` records (before libcontainer's refresh, which
/// turns a pid-less `creating` into `stopped`).
pub fn recorded_status(layout: &Layout, id: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Status {
        status: String,
    }
    let b = crate::fsutil::read_small(layout.container_dir(id).join("state.json")).ok()?;
    serde_json::from_slice::<Status>(&b).ok().map(|s| s.status)
}

/// The state root, canonical (as matched against the `--root` of other rloxsc processes).
pub fn canonical_root(layout: &Layout) -> PathBuf {
    crate::fsutil::canonical_state_root(layout.root())
}

/// Processes running the rloxsc binary as `create`/`run` of `id` under state root `root`.
pub fn unfinished_create_processes(root: &Path, id: &str) -> Vec<i32> {
    use std::os::unix::fs::MetadataExt;
    let me = std::process::id() as i32;
    let own = std::fs::metadata("/proc/self/exe").ok();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let proc_dir = e.path();
        // this runtime's own children (a foreground run's custodian) are not orphans
        if crate::custodian::parent_of(pid) == Some(me) {
            continue;
        }
        // the sealed binary is a bind mount of this very file, and its path may not resolve from
        // here once the process has its own mount namespace: the file is compared, not only the name
        let same_file = std::fs::metadata(proc_dir.join("exe"))
            .ok()
            .zip(own.as_ref())
            .is_some_and(|(a, b)| a.dev() == b.dev() && a.ino() == b.ino());
        // a binary of another version is matched by name, and only when root runs it: a local
        // user's own program named rloxsc, with the same arguments, is never killed
        let by_root = std::fs::metadata(&proc_dir).is_ok_and(|m| m.uid() == 0);
        let is_rloxsc = same_file
            || by_root
                && std::fs::read_link(proc_dir.join("exe")).is_ok_and(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.contains("rloxsc"))
                });
        if !is_rloxsc {
            continue;
        }
        let Ok(raw) = std::fs::read(proc_dir.join("cmdline")) else {
            continue;
        };
        let argv: Vec<String> = raw
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if !argv.iter().any(|a| a == id) || !argv.iter().any(|a| a == "create" || a == "run") {
            continue;
        }
        let theirs = argv
            .windows(2)
            .find(|w| w[0] == "--root")
            .map(|w| w[1].clone())
            .or_else(|| {
                argv.iter()
                    .find_map(|a| a.strip_prefix("--root=").map(str::to_string))
            })
            .unwrap_or_else(|| "/run/rloxsc".to_string());
        let theirs = std::fs::read_link(proc_dir.join("cwd"))
            .map(|cwd| cwd.join(&theirs))
            .unwrap_or_else(|_| theirs.into());
        if std::fs::canonicalize(&theirs).unwrap_or(theirs) == root {
            out.push(pid);
        }
    }
    out
}

/// Reads the ledger of container `id` for a verb that needs what it holds (the store, for `exec`).
pub fn ledger_of(layout: &Layout, id: &str) -> Result<Ledger> {
    let f = layout.bundle_dir(id).join(FILE);
    let b =
        crate::fsutil::read_small(&f).with_context(|| format!("cannot read {}", f.display()))?;
    serde_json::from_slice(&b).with_context(|| format!("{} is not rloxsc's footprint", f.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ledger_is_on_disk_before_its_resource_and_gone_with_the_bundle() {
        let root = std::env::temp_dir().join(format!("rloxsc-fp-{}", std::process::id()));
        let layout = Layout::new(&root);
        layout.ensure().unwrap();
        let mut fp = Footprint::begin(&layout, "c1").unwrap();
        assert!(
            Footprint::begin(&layout, "c1").is_err(),
            "an id is taken once"
        );
        fp.record(|l| l.views = Some("/run/rloxsc-views/x".into()))
            .unwrap();
        assert_eq!(
            Footprint::load(&layout, "c1").ledger.views,
            Some(PathBuf::from("/run/rloxsc-views/x"))
        );
        assert_eq!(
            ledger_of(&layout, "c1").unwrap().views,
            Some(PathBuf::from("/run/rloxsc-views/x"))
        );
        layout.remove_bundle("c1").unwrap();
        assert_eq!(Footprint::load(&layout, "c1").ledger, Ledger::default());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
