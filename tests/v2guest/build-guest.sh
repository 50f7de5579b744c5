#!/bin/bash
# tests/v2guest/build-guest.sh -- build the pure-cgroup-v2 test guest of rloxsc.
#
# Adapted from the project's reference scripts (shared/reference/v2guest/build-guest.sh).
# What it does:
#   - installs qemu-system-x86 and busybox-static with apt-get if they are missing;
#   - `apt-get download`s Debian's linux-image-6.1 package and unpacks it with dpkg-deb -x (the host's
#     kernel packages are untouched), extracts the uncompressed vmlinux (QEMU boots it via PVH);
#   - builds an initramfs: busybox-static + applet links, the virtio/9p/overlay modules in load order,
#     GNU stat, glibc + libgcc_s + every shared library of the binaries named in V2VM_LIBS_OF (rloxsc: the binary
#     itself is NOT put in the image, it comes over the 9p share each run), optionally bash, and
#     tests/v2guest/init.sh as /init;
#   - writes $V2VM_DIR/stamp: a hash of its inputs (this script, init.sh, the library list), which
#     tests/v2guest/run.sh compares to decide whether to rebuild.
# Everything lands in $V2VM_DIR (default /var/tmp/rloxsc-v2guest; never inside the checkout).
# Env: V2VM_DIR, V2VM_KPKG (kernel package, default: what linux-image-amd64 depends on),
#      V2VM_LIBS_OF (binaries whose libraries the guest needs), V2VM_EXTRA_BINS (binaries + libs),
#      V2VM_EXTRA_MODULES (more kernel modules).
set -euo pipefail

SRC=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)   # where init.sh lives
V2VM_DIR=${V2VM_DIR:-/var/tmp/rloxsc-v2guest}
mkdir -p "$V2VM_DIR" && cd "$V2VM_DIR"
log() { echo "build-guest: $*" >&2; }
t0=$(date +%s)

# --- 0. host packages -------------------------------------------------------
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
command -v xz >/dev/null || need+=(xz-utils)
command -v cpio >/dev/null || true   # busybox cpio is used
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { log "need root to install ${need[*]}"; exit 1; }
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${need[@]}" >&2 \
    || { apt-get update >&2 && apt-get install -y --no-install-recommends "${need[@]}" >&2; }
fi

# --- 1. kernel: apt-get download + dpkg-deb -x (host kernel pkgs untouched) ---
KPKG=${V2VM_KPKG:-}
if [ -z "$KPKG" ]; then
  # linux-image-amd64 is a metapackage: Depends: linux-image-6.1.0-NN-amd64
  KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  if [ -z "$KPKG" ]; then
    apt-get update >&2
    KPKG=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  fi
  [ -n "$KPKG" ] || { log "cannot find the Debian kernel package (apt-cache depends linux-image-amd64)"; exit 1; }
fi
KVER=${KPKG#linux-image-}
mkdir -p kpkg
if ! ls kpkg/"$KPKG"_*.deb >/dev/null 2>&1; then
  log "downloading $KPKG"
  chmod 1777 kpkg   # so apt's _apt user may write there (silences a warning)
  (cd kpkg && apt-get download "$KPKG" >&2) \
    || { apt-get update >&2 && (cd kpkg && apt-get download "$KPKG" >&2); }
fi
if [ ! -f kroot/boot/vmlinuz-"$KVER" ]; then
  rm -rf kroot && mkdir kroot
  dpkg-deb -x kpkg/"$KPKG"_*.deb kroot
fi
cp -f kroot/boot/vmlinuz-"$KVER" vmlinuz
# Uncompressed ELF vmlinux: QEMU boots it through its PVH entry point (CONFIG_PVH=y), skipping the
# real-mode setup and the in-guest decompressor (saves ~7 s per boot under TCG). Debian's payload is xz.
if [ ! -s vmlinux ] || [ vmlinux -ot vmlinuz ]; then
  off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' vmlinuz | head -n1 | cut -d: -f1)
  tail -c +$((off + 1)) vmlinuz | xz -dc 2>/dev/null > vmlinux.tmp || true   # trailing data: xz complains
  [ "$(head -c4 vmlinux.tmp | od -An -c | tr -d ' ')" = '177ELF' ] || { log "vmlinux extraction failed"; exit 1; }
  mv vmlinux.tmp vmlinux
fi
MODSRC=kroot/lib/modules/$KVER

# --- 2. initramfs tree ------------------------------------------------------
G=guest
rm -rf "$G"
mkdir -p "$G"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,proc,sys,dev,run,tmp,mnt,newroot,etc,lib/modules/"$KVER",out,root,var/tmp}
cp /bin/busybox "$G"/bin/busybox
for a in $(/bin/busybox --list); do
  [ -e "$G/bin/$a" ] || ln -s busybox "$G/bin/$a"
done

# modules, dependencies first: virtio_pci 9pnet_virtio 9p (the shares); overlay (rloxsc's fallback
# for its sealed re-exec); tun (so /dev/net/tun, c 10:200, exists for the device-program checks);
# crc32c_generic (libcrc32c's soft dependency), nf_tables with conntrack and reject (the egress
# filter of an inbound-only container given an interface; the initramfs has no modprobe); dummy
# (the interface the egress check's hook adds).
MODS="virtio_pci 9pnet_virtio 9p overlay tun dummy crc32c_generic nf_tables nft_ct nft_reject_inet ${V2VM_EXTRA_MODULES:-}"
declare -A seen=()
order=()
modpath() { find "$MODSRC/kernel" -name "$1.ko" -o -name "${1//_/-}.ko" | head -n1; }
resolve() {
  local m=$1 p deps d
  [ -n "${seen[$m]:-}" ] && return 0
  seen[$m]=1
  p=$(modpath "$m")
  [ -n "$p" ] || { log "module $m not found"; return 1; }
  deps=$(/bin/busybox modinfo -F depends "$p" 2>/dev/null || strings "$p" | sed -n 's/^depends=//p')
  for d in ${deps//,/ }; do resolve "$d"; done
  order+=("$p")
}
for m in $MODS; do resolve "$m"; done
: > "$G"/etc/modules.order
for p in "${order[@]}"; do
  cp "$p" "$G"/lib/modules/"$KVER"/
  echo "/lib/modules/$KVER/$(basename "$p")" >> "$G"/etc/modules.order
done

copy_lib() {
  local l=$1
  mkdir -p "$G/$(dirname "$l")"
  [ -e "$G/$l" ] || cp -L "$l" "$G/$l"
}
libs_of() { ldd "$1" 2>/dev/null | grep -o '/[^ ]*' || true; }
copy_with_libs() {
  local b=$1 l
  mkdir -p "$G/$(dirname "$b")"
  rm -f "$G/$b"; cp -L "$b" "$G/$b"
  for l in $(libs_of "$b"); do copy_lib "$l"; done
}
# GNU stat: busybox's `stat -f -c %T` prints UNKNOWN for cgroup2fs
for b in /usr/bin/stat ${V2VM_EXTRA_BINS:-}; do copy_with_libs "$b"; done
[ -x /bin/bash ] && copy_with_libs /bin/bash   # handy for debugging in the guest; not required
for b in ${V2VM_LIBS_OF:-}; do
  for l in $(libs_of "$b"); do copy_lib "$l"; done
done
# the usual glibc + libgcc_s set, so host-built (cargo) binaries run
for l in libc.so.6 libgcc_s.so.1 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libutil.so.1; do
  [ -e /lib/x86_64-linux-gnu/$l ] && copy_lib /lib/x86_64-linux-gnu/$l
done
[ -e "$G"/lib64/ld-linux-x86-64.so.2 ] || { mkdir -p "$G"/lib64; cp -L /lib64/ld-linux-x86-64.so.2 "$G"/lib64/; }

echo 'root:x:0:0:root:/root:/bin/sh' > "$G"/etc/passwd
echo 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >> "$G"/etc/passwd
printf 'root:x:0:\nnogroup:x:65534:\n' > "$G"/etc/group
cp "$SRC"/init.sh "$G"/init
chmod 755 "$G"/init

# --- 3. pack ----------------------------------------------------------------
(cd "$G" && find . | LC_ALL=C sort | /bin/busybox cpio -o -H newc) > initramfs.cpio.tmp 2>/dev/null
mv initramfs.cpio.tmp initramfs.cpio
"$SRC"/guest-stamp.sh > stamp
log "built $V2VM_DIR/vmlinux ($KVER, PVH-bootable), $V2VM_DIR/initramfs.cpio ($(du -h initramfs.cpio | cut -f1)) in $(( $(date +%s) - t0 ))s"
