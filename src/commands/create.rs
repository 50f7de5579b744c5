//! `create`: the container is hardened, created, verified and left waiting for `start` (see
//! [`crate::launch::create`], the launch path `run` shares).

use anyhow::Result;

use super::Context;
pub use crate::launch::CreateOptions;

/// Creates container `opts.id`. On success its init waits for `start`, contained and verified; on
/// failure nothing is left behind.
pub fn create(ctx: &Context, opts: &CreateOptions) -> Result<()> {
    crate::launch::create(ctx, opts)?.keep();
    Ok(())
}
