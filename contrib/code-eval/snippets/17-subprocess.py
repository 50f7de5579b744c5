# expect: ok
import subprocess
print(subprocess.run(["sh", "-c", "echo child says hi; uname -s"], capture_output=True, text=True).stdout.strip())
