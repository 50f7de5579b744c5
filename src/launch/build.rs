//! Phase 6 of `create`, **libcontainer** (`build_container`): the container's record and host spec
//! written to its private bundle, then libcontainer's build of the init from the filesystem phase's
//! spec, through the one builder chain ([`super::builder`]); a build the deadline overtook is
//! [`CreateTimedOut`](super::deadline::CreateTimedOut), a failed one names the policy key behind it.

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use anyhow::{anyhow, Result};
use libcontainer::container::Container;
use nix::sys::signal::Signal;
use oci_spec::runtime::Spec;

use super::deadline::Deadline;
use super::identity::{joined_mapping, Identity, IdentityPlan};
use super::input::{CreateOptions, Input};
use super::{builder, failure_key};
use crate::bundle::{ContainerRecord, Layout};
use crate::cgroups::Driver;
use crate::context::Context;
use crate::errors::{cause_suffix, error_chain};
use crate::executor::HardenedExecutor;
use crate::harden::Hardened;
use crate::rootfs;

/// Phase 6's result: the container, its record, the spec later verbs read, the process's owner.
pub(super) struct Built {
    pub(super) container: Container,
    pub(super) record: ContainerRecord,
    pub(super) host_spec: Spec,
    pub(super) owner: Option<(u32, u32)>,
}

/// Phase 6, libcontainer: the private bundle, then the build (a late one is
/// [`CreateTimedOut`](super::deadline::CreateTimedOut)).
pub(super) fn build_container(
    ctx: &Context,
    opts: &CreateOptions,
    input: &Input,
    identity: &Identity,
    (hardened, executor, console_path): (Hardened, HardenedExecutor, Option<&PathBuf>),
    (lc_spec, made): (Spec, &rootfs::Assembled),
    (custodian, deadline): (&mut crate::custodian::Custodian, Deadline),
) -> Result<Built> {
    let id = opts.id.as_str();
    let (record, host_spec, private) =
        write_private_bundle(&ctx.layout, id, input, hardened, made)?;
    let capture = private.join("create-errors.log");
    crate::logging::capture_errors_to(&capture);
    let owner = host_spec
        .process()
        .as_ref()
        .and_then(|p| super::exec::process_owner(&host_spec, p, || joined_mapping(&identity.plan)));
    if let Some(o) = owner {
        super::give_stdio_to(o);
    }
    let joins_userns = matches!(identity.plan, IdentityPlan::Join { .. });
    let stdio = output_fds(opts)?;
    let built = builder(&ctx.layout, id, executor, console_path, opts.preserve_fds)
        .map(|b| {
            b.with_parent_death_signal(opts.die_with_runtime.then_some(Signal::SIGKILL))
                // the container's user namespace belongs to its own root: the kernel then charges
                // its per-user counts (inotify, ...) to that uid at the host level, not to host root
                .with_user_namespace_owner(
                    identity
                        .alloc
                        .filter(|_| !joins_userns)
                        .map(|a| (a.root_uid(), a.root_uid())),
                )
        })
        // libcontainer's init puts them in place of fds 1 and 2 (and closes its copies)
        .map(|b| match stdio {
            Some((out, err)) => b.with_stdout(out).with_stderr(err),
            None => b,
        })
        .and_then(|b| {
            b.as_init(&private)
                .with_spec(lc_spec)
                .with_systemd(opts.cgroup_driver == Driver::Systemd)
                .with_detach(opts.detach || console_path.is_some())
                .with_oci_bundle(&input.bundle)
                .build()
        });
    let fired = custodian.created();
    let causes = crate::logging::take_captured_errors(&capture);
    if fired {
        drop(built);
        return Err(anyhow::Error::new(deadline.overtaken()));
    }
    let container = built.map_err(|e| build_error(id, &e, &causes))?;
    Ok(Built {
        container,
        record,
        host_spec,
        owner,
    })
}

/// The container's record and host spec, written to its private bundle (whose path is returned).
fn write_private_bundle(
    layout: &Layout,
    id: &str,
    input: &Input,
    hardened: Hardened,
    made: &rootfs::Assembled,
) -> Result<(ContainerRecord, Spec, PathBuf)> {
    let Hardened {
        spec,
        changes,
        policy,
        ..
    } = hardened;
    let record = ContainerRecord {
        caller_bundle: input.bundle.clone(),
        changes: changes.iter().map(|c| c.to_string()).collect(),
        policy,
        init: None,
        egress_in_force: None,
        disk: Some(made.disk.clone()),
    };
    // the private bundle holds the spec every later verb reads (host paths); libcontainer creates
    // the container from the filesystem phase's spec, handed over in memory (libcontainer patch 0009)
    let mut host_spec = spec;
    crate::views::forget_mount_idmaps(&mut host_spec);
    let private = layout.write_bundle(id, &host_spec, &record)?;
    Ok((record, host_spec, private))
}

/// Copies of the `--output` pipes `run` holds, for libcontainer's init to put in place of fds 1, 2.
fn output_fds(opts: &CreateOptions) -> Result<Option<(OwnedFd, OwnedFd)>> {
    let id = opts.id.as_str();
    let dup = |fd: std::os::fd::RawFd| {
        // SAFETY: a descriptor `run` holds open for the whole create
        unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
            .try_clone_to_owned()
            .map_err(|e| anyhow!("cannot pass the --output pipes to container {id:?}: {e}"))
    };
    opts.stdio
        .map(|(out, err)| Ok::<_, anyhow::Error>((dup(out)?, dup(err)?)))
        .transpose()
}

/// The error of a failed build: libcontainer's chain, the policy key it names, the logged cause.
fn build_error(
    id: &str,
    e: &(dyn std::error::Error + 'static),
    causes: &[String],
) -> anyhow::Error {
    let msg = error_chain(e);
    let cause = cause_suffix(&msg, causes);
    anyhow!(
        "cannot create container {id:?}: {}{}{}",
        msg,
        failure_key(&msg, &cause)
            .map(|k| format!(" (policy key {k})"))
            .unwrap_or_default(),
        cause
    )
}
