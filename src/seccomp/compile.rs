//! Compiles the allowlist to a BPF program with libseccomp (linked statically).
//!
//! This file is shared with `build.rs`, which compiles the filter once at build time; the binary embeds
//! the result ([`super::precompiled`]). A container's processes only hand the finished program to the
//! kernel: no libseccomp code runs per container, unless the policy adds syscalls
//! (`seccomp.extra_syscalls`, [`super::for_policy`]), which is compiled when such a container is
//! launched. The unit test below proves the embedded program is exactly what this allowlist compiles to.

use std::io::{Read, Seek, SeekFrom};

use anyhow::{bail, Context, Result};
use libseccomp::{
    ScmpAction, ScmpArch, ScmpArgCompare, ScmpCompareOp, ScmpFilterContext, ScmpSyscall,
};

use super::allowlist::{self, Cmp};

/// rloxsc's filter: two compiled BPF programs (arrays of `struct sock_filter`), each ready for
/// `seccomp(SECCOMP_SET_MODE_FILTER)` and installed in this order. Two, because libseccomp cannot
/// express "ioctl is allowed except these requests" in the allowlist's program (a conditional rule
/// for a syscall that already has an unconditional one is refused), so the denied requests are a
/// second, allow-by-default program; the kernel applies the stricter answer of both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledFilter {
    /// The allowlist: 8 bytes per instruction, native endianness.
    pub bpf: Vec<u8>,
    /// The ioctl guard ([`super::allowlist::DENIED_IOCTLS`]).
    pub guard: Vec<u8>,
    /// Names in the allowlist that this libseccomp does not know (left denied).
    pub unknown: Vec<String>,
}

/// How many seccomp filters rloxsc attaches to every container process.
pub const PROGRAMS: u32 = 2;

impl CompiledFilter {
    /// Number of BPF instructions.
    pub fn instructions(&self) -> usize {
        self.bpf.len() / 8
    }
}

const EPERM: i32 = 1;
const ENOSYS: i32 = 38;

fn resolve(name: &'static str, unknown: &mut Vec<String>) -> Option<ScmpSyscall> {
    match ScmpSyscall::from_name(name) {
        Ok(s) => Some(s),
        Err(_) => {
            unknown.push(name.to_string());
            None
        }
    }
}

/// Compiles rloxsc's allowlist for the native architecture only: any other architecture (the i386
/// `int 0x80` ABI, x32) kills the process; unlisted syscalls fail with EPERM.
pub fn compile_filter() -> Result<CompiledFilter> {
    compile_filter_with(&[])
}

/// [`compile_filter`] with extra syscalls allowed unconditionally (from the policy file, which refuses
/// forbidden names before this is reached).
pub fn compile_filter_with(extra: &[String]) -> Result<CompiledFilter> {
    compile_at_level(extra, 2)
}

/// [`compile_filter_with`] with libseccomp's optimization `level` (`SCMP_FLTATR_CTL_OPTIMIZE`): 2, a
/// binary tree of syscall numbers, is what rloxsc loads; 1, one comparison after another, is the
/// reference its tests compare it with.
fn compile_at_level(extra: &[String], level: u32) -> Result<CompiledFilter> {
    if ScmpArch::native() != ScmpArch::X8664 {
        bail!(
            "rloxsc's seccomp allowlist is written for x86_64; this is {:?}",
            ScmpArch::native()
        );
    }
    let mut ctx = ScmpFilterContext::new(ScmpAction::Errno(EPERM))
        .context("seccomp: cannot create a filter context")?;
    ctx.set_act_badarch(ScmpAction::KillProcess)
        .context("seccomp: cannot set the bad-architecture action")?;
    // libcontainer sets no_new_privs itself and so do we (in the executor); libseccomp must not try
    ctx.set_ctl_nnp(false)
        .context("seccomp: cannot clear the NNP control")?;
    // a binary tree of syscall numbers instead of one comparison after another: the same decisions,
    // in ~log2(n) comparisons; the kernel runs the program once per syscall number when it loads it
    // (to cache the always-allowed ones), and again for every syscall the cache does not cover
    ctx.set_ctl_optimize(level)
        .context("seccomp: cannot ask libseccomp for a binary-tree filter")?;
    let mut unknown = Vec::new();

    for name in allowlist::UNCONDITIONAL {
        if let Some(sc) = resolve(name, &mut unknown) {
            ctx.add_rule(ScmpAction::Allow, sc)
                .with_context(|| format!("seccomp: cannot allow {name}"))?;
        }
    }
    for name in extra {
        if allowlist::NEVER_ALLOWED.contains(&name.as_str()) {
            bail!("seccomp: {name} can never be allowed");
        }
        let sc = ScmpSyscall::from_name(name)
            .map_err(|_| anyhow::anyhow!("seccomp: unknown syscall {name}"))?;
        ctx.add_rule(ScmpAction::Allow, sc)
            .with_context(|| format!("seccomp: cannot allow {name}"))?;
    }
    for rule in allowlist::CONDITIONAL {
        if let Some(sc) = resolve(rule.name, &mut unknown) {
            let cmps: Vec<ScmpArgCompare> = rule
                .args
                .iter()
                .map(|(arg, cmp)| match *cmp {
                    Cmp::Eq(v) => ScmpArgCompare::new(*arg, ScmpCompareOp::Equal, v),
                    Cmp::MaskedEq(mask, v) => {
                        ScmpArgCompare::new(*arg, ScmpCompareOp::MaskedEqual(mask), v)
                    }
                })
                .collect();
            ctx.add_rule_conditional(ScmpAction::Allow, sc, &cmps)
                .with_context(|| {
                    format!("seccomp: cannot add the conditional rule for {}", rule.name)
                })?;
        }
    }
    for name in allowlist::ENOSYS {
        if let Some(sc) = resolve(name, &mut unknown) {
            ctx.add_rule(ScmpAction::Errno(ENOSYS), sc)
                .with_context(|| format!("seccomp: cannot make {name} answer ENOSYS"))?;
        }
    }

    // syscalls newer than every name this allowlist classifies answer ENOSYS, as under runc: a libc or
    // language runtime that probes a new syscall falls back only on ENOSYS (EPERM reads as a refusal)
    let newest = newest_classified_syscall();
    for nr in newest + 1..=LAST_NATIVE_SYSCALL {
        ctx.add_rule(ScmpAction::Errno(ENOSYS), ScmpSyscall::from_raw_syscall(nr))
            .with_context(|| format!("seccomp: cannot make syscall {nr} answer ENOSYS"))?;
    }

    let bpf = enosys_past_the_table(export(&ctx)?);
    if bpf.is_empty() || bpf.len() % 8 != 0 {
        bail!(
            "seccomp: libseccomp produced a malformed program of {} bytes",
            bpf.len()
        );
    }
    Ok(CompiledFilter {
        bpf,
        guard: compile_ioctl_guard()?,
        unknown,
    })
}

/// The second program: every syscall allowed, but ioctl with a denied request (compared on the low
/// 32 bits, as the kernel reads it) fails with EPERM.
pub fn compile_ioctl_guard() -> Result<Vec<u8>> {
    let mut ctx = ScmpFilterContext::new(ScmpAction::Allow)
        .context("seccomp: cannot create the ioctl guard's context")?;
    ctx.set_act_badarch(ScmpAction::KillProcess)
        .context("seccomp: cannot set the bad-architecture action")?;
    ctx.set_ctl_nnp(false)
        .context("seccomp: cannot clear the NNP control")?;
    let ioctl =
        ScmpSyscall::from_name("ioctl").context("seccomp: libseccomp does not know ioctl")?;
    for (name, request) in allowlist::DENIED_IOCTLS {
        let cmp = ScmpArgCompare::new(1, ScmpCompareOp::MaskedEqual(0xffff_ffff), *request);
        ctx.add_rule_conditional(ScmpAction::Errno(EPERM), ioctl, &[cmp])
            .with_context(|| format!("seccomp: cannot deny ioctl {name}"))?;
    }
    export(&ctx)
}

/// The last number of x86_64's native syscall table range (512 and up are x32 numbers).
pub const LAST_NATIVE_SYSCALL: i32 = 511;

/// The first x32 syscall number (`__X32_SYSCALL_BIT`): libseccomp's program decides these itself.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
/// `AUDIT_ARCH_X86_64`.
const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;

/// Puts five instructions before libseccomp's `program`: a native x86_64 syscall number past the
/// table's end and below the x32 range (no such syscall exists yet) answers ENOSYS, as runc answers
/// it, instead of the allowlist's EPERM; everything else goes on to `program` unchanged (its jumps
/// are relative, and it loads the architecture and number again itself). libseccomp cannot say this:
/// it takes rules one syscall number at a time.
fn enosys_past_the_table(program: Vec<u8>) -> Vec<u8> {
    // classic BPF: (code, jt, jf, k); the offsets count the instructions skipped
    const LD_ABS_W: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const JGE_K: u16 = 0x35;
    const JGT_K: u16 = 0x25;
    const RET_K: u16 = 0x06;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    let prefix: [(u16, u8, u8, u32); 6] = [
        (LD_ABS_W, 0, 0, 4), // seccomp_data.arch
        (JEQ_K, 0, 4, AUDIT_ARCH_X86_64),
        (LD_ABS_W, 0, 0, 0), // seccomp_data.nr
        (JGE_K, 2, 0, X32_SYSCALL_BIT),
        (JGT_K, 0, 1, LAST_NATIVE_SYSCALL as u32),
        (RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS as u32),
    ];
    let mut out = Vec::with_capacity(prefix.len() * 8 + program.len());
    for (code, jt, jf, k) in prefix {
        out.extend_from_slice(&code.to_ne_bytes());
        out.extend_from_slice(&[jt, jf]);
        out.extend_from_slice(&k.to_ne_bytes());
    }
    out.extend_from_slice(&program);
    out
}

/// The highest x86_64 syscall number among every name the allowlist classifies (allowed, conditional,
/// ENOSYS or never allowed) that libseccomp knows.
pub fn newest_classified_syscall() -> i32 {
    allowlist::UNCONDITIONAL
        .iter()
        .chain(allowlist::CONDITIONAL.iter().map(|r| &r.name))
        .chain(allowlist::ENOSYS)
        .chain(allowlist::NEVER_ALLOWED)
        .filter_map(|n| ScmpSyscall::from_name(n).ok())
        .map(|s| s.as_raw_syscall())
        .max()
        .unwrap_or(0)
}

fn export(ctx: &ScmpFilterContext) -> Result<Vec<u8>> {
    let fd = nix::sys::memfd::memfd_create(
        c"rloxsc-seccomp",
        nix::sys::memfd::MemFdCreateFlag::MFD_CLOEXEC,
    )
    .context("seccomp: memfd_create for the BPF export failed")?;
    let mut file = std::fs::File::from(fd);
    ctx.export_bpf(&file)
        .context("seccomp: exporting the BPF program failed")?;
    file.seek(SeekFrom::Start(0))?;
    let mut bpf = Vec::new();
    file.read_to_end(&mut bpf)?;
    Ok(bpf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The decision (SECCOMP_RET_* value) of classic-BPF `prog` for one `seccomp_data`: the
    /// instructions libseccomp emits (absolute loads, ALU and, jumps, returns, scratch memory).
    fn run_bpf(prog: &[u8], data: &[u8; 64]) -> u32 {
        let insn = |i: usize| {
            let b = &prog[i * 8..i * 8 + 8];
            let code = u16::from_le_bytes([b[0], b[1]]);
            (
                code,
                b[2] as usize,
                b[3] as usize,
                u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            )
        };
        let (mut a, mut x, mut mem, mut pc) = (0u32, 0u32, [0u32; 16], 0usize);
        loop {
            let (code, jt, jf, k) = insn(pc);
            let src = if code & 0x08 != 0 { x } else { k };
            match code {
                0x20 => {
                    a = u32::from_le_bytes(data[k as usize..k as usize + 4].try_into().unwrap())
                }
                0x00 => a = k,
                0x01 => x = k,
                0x61 => x = mem[k as usize],
                0x60 => a = mem[k as usize],
                0x02 => mem[k as usize] = a,
                0x03 => mem[k as usize] = x,
                0x87 => a = x,
                0x07 => x = a,
                0x54 | 0x5c => a &= src,
                0x44 | 0x4c => a |= src,
                0x04 | 0x0c => a = a.wrapping_add(src),
                0x14 | 0x1c => a = a.wrapping_sub(src),
                0x05 => pc += k as usize,
                0x15 | 0x1d => pc += if a == src { jt } else { jf },
                0x25 | 0x2d => pc += if a > src { jt } else { jf },
                0x35 | 0x3d => pc += if a >= src { jt } else { jf },
                0x45 | 0x4d => pc += if a & src != 0 { jt } else { jf },
                0x06 => return k,
                other => panic!("BPF instruction {other:#x} at {pc} not emulated"),
            }
            pc += 1;
        }
    }

    /// The binary-tree program rloxsc loads decides every case exactly as the linear one: every
    /// native and x32 syscall number under three architectures, with arguments drawn from the
    /// programs' own constants (so every argument comparison is hit both ways).
    #[test]
    fn the_tree_filter_decides_as_the_linear_one() {
        let tree = compile_at_level(&[], 2).unwrap();
        let linear = compile_at_level(&[], 1).unwrap();
        assert_ne!(
            tree.bpf, linear.bpf,
            "the optimization level changed nothing"
        );
        let mut values: Vec<u64> = [&tree.bpf, &linear.bpf]
            .iter()
            .flat_map(|p| {
                p.chunks(8)
                    .map(|b| u32::from_le_bytes([b[4], b[5], b[6], b[7]]))
            })
            .map(u64::from)
            .chain([0, 1, 2, 0xffff_ffff, 0x8000_0000, 0x1_0000_0000])
            .collect();
        values.sort_unstable();
        values.dedup();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut cases = 0;
        for arch in [0xc000_003eu32, 0x4000_0003, 0] {
            for nr in (0u32..1024)
                .chain(0x4000_0000..0x4000_0000 + 600)
                .chain([u32::MAX])
            {
                for _ in 0..if nr < 1024 { 40 } else { 2 } {
                    let mut data = [0u8; 64];
                    data[0..4].copy_from_slice(&nr.to_le_bytes());
                    data[4..8].copy_from_slice(&arch.to_le_bytes());
                    for i in 0..6 {
                        let lo = values[(next() % values.len() as u64) as usize] & 0xffff_ffff;
                        let hi = if next() % 4 == 0 {
                            values[(next() % values.len() as u64) as usize]
                        } else {
                            0
                        };
                        data[16 + i * 8..24 + i * 8]
                            .copy_from_slice(&((hi << 32) | lo).to_le_bytes());
                    }
                    assert_eq!(
                        run_bpf(&tree.bpf, &data),
                        run_bpf(&linear.bpf, &data),
                        "syscall {nr:#x}, arch {arch:#x}, data {data:?}"
                    );
                    cases += 1;
                }
            }
        }
        assert!(cases > 40_000);
    }

    /// Past the native table and below the x32 range: ENOSYS, as under runc; x32 numbers and other
    /// architectures are still the program's (killed).
    #[test]
    fn numbers_past_the_table_answer_enosys() {
        let prog = compile_filter().unwrap().bpf;
        let decide = |arch: u32, nr: u32| {
            let mut data = [0u8; 64];
            data[0..4].copy_from_slice(&nr.to_le_bytes());
            data[4..8].copy_from_slice(&arch.to_le_bytes());
            run_bpf(&prog, &data)
        };
        for nr in [512, 1000, 0x3fff_ffff] {
            assert_eq!(decide(AUDIT_ARCH_X86_64, nr), 0x0005_0000 | 38, "{nr}");
        }
        assert_eq!(decide(AUDIT_ARCH_X86_64, 511), 0x0005_0000 | 38);
        assert_eq!(decide(AUDIT_ARCH_X86_64, 39), 0x7fff_0000, "getpid allowed");
        assert_eq!(
            decide(AUDIT_ARCH_X86_64, 0x4000_0027),
            0x8000_0000,
            "x32 getpid killed"
        );
        assert_eq!(decide(0x4000_0003, 1000), 0x8000_0000, "i386 killed");
    }

    #[test]
    fn newer_syscalls_than_the_allowlist_knows_exist_below_the_table_end() {
        let n = newest_classified_syscall();
        // clone3 (435) and cachestat (451) are classified; the table ends at 511
        assert!((451..LAST_NATIVE_SYSCALL).contains(&n), "{n}");
    }

    /// Runs `f` in a child that has loaded the precompiled filter; returns what the child printed.
    fn under_filter(f: fn() -> i64) -> i64 {
        let bpf = crate::seccomp::precompiled();
        let (r, w) = nix::unistd::pipe().unwrap();
        // SAFETY: the test process may be multi-threaded: the child only makes raw syscalls and
        // writes one number before _exit (no allocation, no locks).
        match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                let prog = |p: &Vec<u8>| libc::sock_fprog {
                    len: (p.len() / 8) as u16,
                    filter: p.as_ptr() as *mut libc::sock_filter,
                };
                let (a, b) = (prog(&bpf.bpf), prog(&bpf.guard));
                // SAFETY: prctl/seccomp with programs that live for the calls
                let v = unsafe {
                    libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                    libc::syscall(libc::SYS_seccomp, 1, 0, &a as *const libc::sock_fprog);
                    libc::syscall(libc::SYS_seccomp, 1, 0, &b as *const libc::sock_fprog);
                    f()
                };
                let b = v.to_ne_bytes();
                // SAFETY: write of a local buffer, then _exit
                unsafe {
                    libc::write(std::os::fd::AsRawFd::as_raw_fd(&w), b.as_ptr().cast(), 8);
                    libc::_exit(0);
                }
            }
            nix::unistd::ForkResult::Parent { child } => {
                drop(w);
                let mut b = [0u8; 8];
                nix::unistd::read(std::os::fd::AsRawFd::as_raw_fd(&r), &mut b).unwrap();
                nix::sys::wait::waitpid(child, None).unwrap();
                i64::from_ne_bytes(b)
            }
        }
    }

    fn errno_of(rc: libc::c_long) -> i64 {
        if rc < 0 {
            -i64::from(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
        } else {
            rc
        }
    }

    /// ioctl(0, `req`, &byte) in the calling process: what it returned, or -errno.
    fn ioctl0(req: u64) -> i64 {
        let mut c = 0u64;
        // SAFETY: a raw ioctl on fd 0 with a pointer to a local buffer large enough for any of these
        errno_of(unsafe { libc::syscall(libc::SYS_ioctl, 0, req, &mut c) })
    }

    /// io_setup(8, &ctx) in the calling process.
    fn io_setup8() -> i64 {
        let mut ctx = 0u64;
        // SAFETY: io_setup with a pointer to a local context id
        errno_of(unsafe { libc::syscall(libc::SYS_io_setup, 8, &mut ctx) })
    }

    #[test]
    fn tiocsti_and_tioclinux_are_denied_with_their_high_bits_too_other_ioctls_pass() {
        assert_eq!(under_filter(|| ioctl0(0x5412)), -1);
        assert_eq!(under_filter(|| ioctl0(0x1_0000_5412)), -1);
        assert_eq!(under_filter(|| ioctl0(0x541C)), -1);
        // FIONREAD passes the filter (whatever the kernel then answers, it is not the filter's EPERM)
        assert_ne!(
            under_filter(|| ioctl0(libc::FIONREAD)),
            -1,
            "an ordinary ioctl was denied by the filter"
        );
        // native AIO answers ENOSYS
        assert_eq!(under_filter(io_setup8), -38);
    }

    /// chmod of a fresh file to `mode`: 0 or -errno.
    fn chmod_tmp(mode: u32) -> i64 {
        let p = c"/tmp/rloxsc-seccomp-chmod-probe";
        // SAFETY: creat/chmod/unlink of a NUL-terminated path of our own
        unsafe {
            let fd = libc::syscall(libc::SYS_creat, p.as_ptr(), 0o644);
            if fd >= 0 {
                libc::close(fd as i32);
            }
            let rc = errno_of(libc::syscall(libc::SYS_chmod, p.as_ptr(), mode));
            libc::unlink(p.as_ptr());
            rc
        }
    }

    /// openat(O_CREAT) of a fresh file with `mode`: 0 or -errno.
    fn create_with(mode: u32) -> i64 {
        let p = c"/tmp/rloxsc-seccomp-open-probe";
        // SAFETY: openat/unlink of a NUL-terminated path of our own
        unsafe {
            let fd = libc::syscall(
                libc::SYS_openat,
                libc::AT_FDCWD,
                p.as_ptr(),
                libc::O_CREAT | libc::O_WRONLY,
                mode,
            );
            let rc = errno_of(fd);
            if fd >= 0 {
                libc::close(fd as i32);
            }
            libc::unlink(p.as_ptr());
            rc.min(0)
        }
    }

    #[test]
    fn set_id_bits_are_never_set_plain_modes_are() {
        assert_eq!(under_filter(|| chmod_tmp(0o755)), 0);
        assert_eq!(under_filter(|| chmod_tmp(0o4755)), -1, "chmod u+s allowed");
        assert_eq!(under_filter(|| chmod_tmp(0o2755)), -1, "chmod g+s allowed");
        assert_eq!(under_filter(|| create_with(0o644)), 0);
        assert_eq!(
            under_filter(|| create_with(0o4755)),
            -1,
            "open(O_CREAT, 04755) allowed"
        );
    }

    #[test]
    fn compiles_to_a_nonempty_program() {
        let f = compile_filter().unwrap();
        assert!(f.instructions() > 50, "{} instructions", f.instructions());
    }

    #[test]
    fn embedded_program_matches_the_allowlist() {
        let fresh = compile_filter().unwrap();
        let embedded = crate::seccomp::precompiled();
        assert_eq!(fresh.bpf, embedded.bpf);
        assert_eq!(fresh.guard, embedded.guard);
    }

    #[test]
    fn forbidden_names_are_known_to_libseccomp() {
        // a forbidden name libseccomp does not know would not matter (allowlist), but a typo in the
        // allowlist's forbidden list would hide a real gap in the tests: every name must resolve
        for name in allowlist::NEVER_ALLOWED {
            assert!(
                ScmpSyscall::from_name(name).is_ok(),
                "{name} unknown to libseccomp"
            );
        }
    }
}
