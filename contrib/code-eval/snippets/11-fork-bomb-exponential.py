# expect: timed_out
# the classic: every process forks forever; the pids limit holds it, the timeout ends it
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
