//! Build script: records the git commit for `rloxsc --version`, and compiles rloxsc's seccomp allowlist
//! to BPF once, at build time (like Firecracker's seccompiler), so no container pays for libseccomp.

#[path = "src/seccomp/allowlist.rs"]
#[allow(dead_code)]
mod allowlist;
#[path = "src/seccomp/compile.rs"]
#[allow(dead_code)]
mod compile;

fn main() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=RLOXSC_GIT_COMMIT={commit}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    // a new commit on the current branch changes its ref, not .git/HEAD
    if let Ok(head) = std::fs::read_to_string(".git/HEAD") {
        if let Some(r) = head.trim().strip_prefix("ref: ") {
            println!("cargo:rerun-if-changed=.git/{r}");
        }
    }
    println!("cargo:rerun-if-changed=.git/packed-refs");
    println!("cargo:rerun-if-changed=src/seccomp/allowlist.rs");
    println!("cargo:rerun-if-changed=src/seccomp/compile.rs");

    let filter = compile::compile_filter().expect("compiling rloxsc's seccomp allowlist");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("rloxsc-seccomp.bpf"), &filter.bpf).unwrap();
    std::fs::write(out.join("rloxsc-seccomp-guard.bpf"), &filter.guard).unwrap();
    std::fs::write(
        out.join("rloxsc-seccomp-unknown.txt"),
        filter.unknown.join(","),
    )
    .unwrap();
}
