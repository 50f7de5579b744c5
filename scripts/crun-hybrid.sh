#!/bin/sh
# crun-hybrid.sh - run crun on a cgroup v1 "hybrid" host.
#
# Why this exists: our dev/CI machines use the cgroup v1 hybrid layout
# (v1 controllers under /sys/fs/cgroup/<controller>, plus a cgroup2 mount at
# /sys/fs/cgroup/unified that holds no useful controllers). crun 1.8.1 sees
# that cgroup2 mount, decides the host is "hybrid" and refuses to create
# containers there. runc and rloxsc cope with the layout; crun does not.
#
# To still compare against crun (scripts/bench.sh), we run crun in a private
# mount namespace in which /sys/fs/cgroup/unified is lazily unmounted, so crun
# sees a plain cgroup v1 host. The unmount happens only inside that private
# namespace (propagation private): the host's mounts are left untouched.
# Each call gets a fresh namespace; crun's state lives in its --root
# directory on the host filesystem, so create/start/delete made through
# separate calls of this wrapper still find the same container.
#
# Usage: scripts/crun-hybrid.sh [crun args...]   (same arguments as crun)
# CRUN=/path/to/crun overrides the crun binary (default /usr/bin/crun).
exec unshare -m --propagation private sh -c 'umount -l /sys/fs/cgroup/unified 2>/dev/null; exec "${CRUN:-/usr/bin/crun}" "$@"' crun "$@"
