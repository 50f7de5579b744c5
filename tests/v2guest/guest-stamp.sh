#!/bin/bash
# tests/v2guest/guest-stamp.sh -- print the identity of the guest image that build-guest.sh would build
# now: a hash of build-guest.sh, init.sh and the shared libraries of $V2VM_LIBS_OF. run.sh rebuilds the
# cached guest when $V2VM_DIR/stamp differs from this.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
{
  cat "$here/build-guest.sh" "$here/init.sh"
  echo "kpkg=${V2VM_KPKG:-} extra=${V2VM_EXTRA_BINS:-} mods=${V2VM_EXTRA_MODULES:-}"
  for b in ${V2VM_LIBS_OF:-}; do ldd "$b" 2>/dev/null | grep -o '/[^ ]*' || true; done | sort -u
} | sha256sum | cut -d' ' -f1
