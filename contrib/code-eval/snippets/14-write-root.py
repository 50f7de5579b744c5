# expect: ok
# the image is read-only, /tmp is this run's own scratch tmpfs
try:
    open("/evil", "w")
    print("wrote /evil")
except OSError as e:
    print("write to / refused:", e.strerror)
with open("/tmp/scratch.txt", "w") as f:
    f.write("scratch")
print("/tmp is writable:", open("/tmp/scratch.txt").read())
