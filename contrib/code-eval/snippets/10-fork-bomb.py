# expect: pids_limit_hit
# forks until the pids limit stops it, then exits (its children die with the container's init)
import os, time
kids = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        kids += 1
except OSError as e:
    print(f"fork failed after {kids} children: {e}")
