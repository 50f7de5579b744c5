//! rloxsc SIGKILLed at points all along `create`, then `delete --force`: nothing may be left (state,
//! private bundle, cgroups, processes), whatever point the kill hit.

mod common;

use std::time::Duration;

use common::*;

#[test]
fn sigkill_during_create_then_delete_force_leaves_nothing() {
    if !require_prereqs(Need::Runtime) {
        return;
    }
    let env = TestEnv::new("killed-create");
    let bundle = env.bundle(&base_spec(LONG_LIVED));
    for i in 0..24u64 {
        let id = env.id();
        let mut child = env
            .command(
                &rloxsc_bin(),
                &["create", "--bundle", bundle.to_str().unwrap(), &id],
            )
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn create");
        // from before the re-exec to after libcontainer's children exist
        std::thread::sleep(Duration::from_micros(500 + i * 1500));
        let _ = child.kill();
        let _ = child.wait();
        let out = env.rloxsc(&["delete", "--force", &id]);
        assert_eq!(
            out.code,
            0,
            "delete --force after a kill at {} us: {out}",
            500 + i * 1500
        );
        env.assert_nothing_left(&id, "SIGKILL during create, then delete --force");
    }
}
