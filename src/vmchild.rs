//! Children that share the runtime's memory (`clone(CLONE_VM)`): the custodian and the holder of a
//! user namespace for idmapped mounts. Starting one copies no page tables and leaves no copy-on-write
//! faults behind in the runtime (a fork of the runtime cost more than what the child does), but such
//! a child runs alongside the runtime in the same memory: it must never allocate, take a lock or write
//! anything the runtime uses, errno included. So it runs on a [`ChildStack`] of its own and makes
//! every system call through [`sys`] / [`sys_int`], which touch no memory but their arguments.

use std::io;

/// Stack size of a child (its deepest frames use a few KiB).
const STACK_SIZE: usize = 64 * 1024;
/// The inaccessible page below the stack.
const GUARD_SIZE: usize = 4096;

/// An anonymous mapping for a child's stack, with a `PROT_NONE` guard page below it: an overflow
/// faults (and ends the child) instead of writing into whatever of the runtime's memory lies below.
/// Unmapped on drop, unless [`ChildStack::leak`]ed for a child that may outlive its owner's use.
pub struct ChildStack {
    base: *mut libc::c_void,
}

impl ChildStack {
    /// Maps a new stack.
    pub fn new() -> io::Result<ChildStack> {
        // SAFETY: an anonymous private mapping of our own
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                GUARD_SIZE + STACK_SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = ChildStack { base };
        // SAFETY: the first page of the mapping just made, which nothing uses
        if unsafe { libc::mprotect(base, GUARD_SIZE, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// Keeps the mapping for the life of the process (for a child that may outlive this handle).
    /// Each leaked stack stays mapped until the process exits: fine for rloxsc's short-lived verbs,
    /// not for a long-running process that starts many such children.
    pub fn leak(self) {
        std::mem::forget(self);
    }

    fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of the mapping, page-aligned (the stack grows down from there)
        unsafe { self.base.cast::<u8>().add(GUARD_SIZE + STACK_SIZE).cast() }
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, which no child uses any more (the owner's to ensure)
        unsafe { libc::munmap(self.base, GUARD_SIZE + STACK_SIZE) };
    }
}

/// Starts `entry(arg)` in a child with `CLONE_VM | SIGCHLD | extra_flags` on `stack`; its pid.
///
/// # Safety
/// `entry` must keep to what the module documentation allows (raw system calls through [`sys`] and
/// [`sys_int`], no allocation, no lock, no panic), `arg` must stay valid and unchanged for as long as
/// the child reads it, and `stack` must outlive the child (dropped only after it is reaped, or leaked).
pub unsafe fn clone_vm(
    entry: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    arg: *mut libc::c_void,
    extra_flags: libc::c_int,
    stack: &ChildStack,
) -> io::Result<nix::unistd::Pid> {
    // SAFETY: the caller's promises above; the child shares our memory but not our stack
    let pid = unsafe {
        libc::clone(
            entry,
            stack.top(),
            libc::CLONE_VM | libc::SIGCHLD | extra_flags,
            arg,
        )
    };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(nix::unistd::Pid::from_raw(pid))
}

/// A system call that writes no errno (glibc's `syscall()` would, into the runtime's thread-local
/// storage, which a `CLONE_VM` child shares): the raw return value, negative errno on failure.
///
/// # Safety
/// Every pointer among the arguments must be valid for what the kernel does with it in call `nr`.
pub unsafe fn sys(nr: libc::c_long, a: [usize; 6]) -> isize {
    let ret: isize;
    // SAFETY: the x86_64 Linux system call convention (rax, rdi, rsi, rdx, r10, r8, r9; rcx and r11
    // clobbered); the pointer arguments are the caller's to justify (see # Safety)
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") a[0],
            in("rsi") a[1],
            in("rdx") a[2],
            in("r10") a[3],
            in("r8") a[4],
            in("r9") a[5],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// [`sys`] for calls whose arguments are all integers (prctl, pidfd_open, getpid, getppid, pause,
/// exit, close, close_range, kill, dup2): no memory is handed to the kernel.
pub fn sys_int(nr: libc::c_long, a: [usize; 6]) -> isize {
    // SAFETY: no argument is a pointer
    unsafe { sys(nr, a) }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn exit_with_arg(arg: *mut libc::c_void) -> libc::c_int {
        sys_int(libc::SYS_exit, [arg as usize, 0, 0, 0, 0, 0]);
        0
    }

    #[test]
    fn a_child_runs_on_its_stack_and_its_status_comes_back() {
        let stack = ChildStack::new().unwrap();
        // SAFETY: the child only makes one raw exit call; the stack is dropped after the reap
        let pid = unsafe { clone_vm(exit_with_arg, 7 as *mut libc::c_void, 0, &stack) }.unwrap();
        let st = nix::sys::wait::waitpid(pid, None).unwrap();
        assert_eq!(st, nix::sys::wait::WaitStatus::Exited(pid, 7));
        drop(stack);
    }

    #[test]
    fn raw_calls_return_negative_errno_and_leave_errno_alone() {
        // SAFETY: errno location of this thread
        unsafe { *libc::__errno_location() = 0 };
        assert_eq!(
            sys_int(libc::SYS_close, [usize::MAX >> 1, 0, 0, 0, 0, 0]),
            -(libc::EBADF as isize)
        );
        // SAFETY: as above
        assert_eq!(unsafe { *libc::__errno_location() }, 0);
        assert_eq!(sys_int(libc::SYS_getpid, [0; 6]) as u32, std::process::id());
    }
}
