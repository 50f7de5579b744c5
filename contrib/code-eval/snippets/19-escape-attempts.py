# expect: ok
# a few classic escape primitives: all denied by rloxsc's containment
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def attempt(what, rc):
    print(f"{what}: {'succeeded' if rc == 0 else errno.errorcode.get(ctypes.get_errno(), rc)}")
attempt("unshare(CLONE_NEWUSER)", libc.unshare(0x10000000))
attempt("mount tmpfs", libc.mount(b"none", b"/mnt", b"tmpfs", 0, None))
attempt("ptrace(TRACEME)", libc.ptrace(0, 0, None, None))
attempt("chroot", libc.chroot(b"/tmp"))
