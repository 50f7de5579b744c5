# expect: ok
# The snippet is pid 1 of its container's pid namespace, and the kernel drops signals that an init
# sends itself (or receives from inside its namespace) when it has no handler: even SIGKILL. A harness
# that needs "the snippet killed itself" to show as `signaled` must start the snippet under an init.
import os, signal
os.kill(os.getpid(), signal.SIGKILL)
print("still alive after SIGKILL to myself: I am pid", os.getpid())
