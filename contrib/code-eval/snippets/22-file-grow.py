# expect: nonzero
# run: --file-size 2M
# A file grown past the file-size limit: the write past 2 MiB fails with EFBIG (as the container's
# pid 1 the snippet does not die of SIGXFSZ; a child would), and the file stays at 2 MiB.
import os

with open("/tmp/grown", "wb") as f:
    try:
        for _ in range(10):
            f.write(b"\0" * (1 << 20))
            f.flush()
    finally:
        print("size", os.path.getsize("/tmp/grown"))
