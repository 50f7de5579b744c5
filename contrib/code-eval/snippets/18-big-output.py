# expect: ok
import sys
for i in range(100_000):
    sys.stdout.write(f"line {i}\n")
