# expect: ok
# the scratch tmpfs is size-limited: filling it ends in ENOSPC, not in a full host disk
import errno
written = 0
try:
    with open("/tmp/fill", "wb") as f:
        while True:
            f.write(b"\0" * (1 << 20))
            written += 1
except OSError as e:
    print(f"stopped after {written} MiB: {errno.errorcode[e.errno]}")
