# expect: cpu_time_exceeded
# run: --cpu-time 1s
# Eight CPU-bound workers: a per-process RLIMIT_CPU would let them spend eight times the limit; the
# container's CPU time (every process, from its cgroup) is spent after 1 s in all, then it is killed.
import multiprocessing


def spin(_):
    while True:
        pass


if __name__ == "__main__":
    with multiprocessing.Pool(8) as p:
        p.map(spin, range(8))
