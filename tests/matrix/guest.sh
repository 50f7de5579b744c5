#!/bin/bash
# tests/matrix/guest.sh SUITE - the kernel and initramfs of the matrix guests that boot SUITE's kernel.
#
# Into $MATRIX_CACHE/SUITE/ (default /var/tmp/rloxsc-matrix/SUITE, outside the checkout):
#   - the kernel package: linux-image-amd64 of SUITE names it; fetched with `apt-get download` through
#     a PRIVATE apt configuration ($MATRIX_CACHE/apt/SUITE: its own sources list naming only SUITE, its
#     own lists and cache; the host's apt sources and dpkg database are untouched), unpacked with
#     dpkg-deb -x into kroot/ (never installed);
#   - vmlinux: the uncompressed ELF kernel (QEMU boots it through its PVH entry point);
#   - initramfs.cpio: busybox-static, the modules the first stage needs (virtio_pci, 9pnet_virtio, 9p,
#     overlay; decompressed where the package compresses them) and init.sh as /init. Everything
#     else (Docker, containerd, runc, systemd, Python, iproute2) is the host's, read over 9p;
#   - kver (the kernel release) and stamp (a hash of this script, init.sh and the package file name):
#     nothing is rebuilt while the stamp matches.
# Installs qemu-system-x86, busybox-static and xz-utils with apt-get when they are missing.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
SUITE=${1:?usage: guest.sh SUITE}
CACHE=${MATRIX_CACHE:-/var/tmp/rloxsc-matrix}
D=$CACHE/$SUITE
A=$CACHE/apt/$SUITE
log() { echo "matrix-guest($SUITE): $*" >&2; }
mkdir -p "$D" "$A"/lists/partial "$A"/cache/archives/partial "$A"/sources.list.d "$A"/preferences.d

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
command -v xz >/dev/null || need+=(xz-utils)
command -v zstd >/dev/null || need+=(zstd)
command -v depmod >/dev/null || need+=(kmod)
if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >&2 \
        || { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >&2; }
fi

papt() {
    local tool=$1; shift
    "$tool" -o Dir::Etc::SourceList="$A/sources.list" -o Dir::Etc::SourceParts="$A/sources.list.d" \
        -o Dir::State::Lists="$A/lists" -o Dir::Cache="$A/cache" -o Dir::Etc::Preferences="$A/preferences" \
        -o Dir::Etc::PreferencesParts="$A/preferences.d" -o Debug::NoLocking=1 -o Acquire::Languages=none "$@"
}
case $SUITE in
    bookworm) src="deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian-security bookworm-security main" ;;
    bookworm-backports) src="deb http://deb.debian.org/debian bookworm-backports main" ;;
    bullseye) src="deb http://deb.debian.org/debian bullseye main
deb http://deb.debian.org/debian-security bullseye-security main" ;;
    *) log "unknown suite"; exit 2 ;;
esac
printf '%s\n' "$src" >"$A/sources.list"
: >"$A/preferences"

# the kernel package linux-image-amd64 of SUITE depends on (the newest of the suite), looked up at
# most once a day; the last one found is kept for offline runs
kpkg_file=$D/kpkg.name
if [ ! -s "$kpkg_file" ] || [ -n "$(find "$kpkg_file" -mmin +1440 2>/dev/null)" ]; then
    if papt apt-get update -qq >&2 2>"$A/update.err"; then
        dep=$(papt apt-cache show linux-image-amd64 2>/dev/null | awk -F': ' '/^Version:/{v=$2} /^Depends:/{print v" "$2}' \
              | sort -V | tail -n1 | grep -o 'linux-image-[0-9][^ ,]*' | head -n1)
        [ -n "$dep" ] && echo "$dep" >"$kpkg_file"
    else
        log "apt-get update failed ($(tail -n1 "$A/update.err")); using the cached kernel if there is one"
    fi
fi
[ -s "$kpkg_file" ] || { log "cannot find SUITE's kernel package"; exit 1; }
KPKG=$(cat "$kpkg_file")
KVER=${KPKG#linux-image-}
want=$( { cat "$0" "$here/init.sh"; echo "$KPKG"; } | sha256sum | cut -d' ' -f1)
if [ "$(cat "$D/stamp" 2>/dev/null)" = "$want" ] && [ -s "$D/vmlinux" ] && [ -s "$D/initramfs.cpio" ]; then
    exit 0
fi
log "building the guest of $KPKG"
if ! ls "$D"/kpkg/"$KPKG"_*.deb >/dev/null 2>&1; then
    rm -rf "$D/kpkg" && mkdir -p "$D/kpkg" && chmod 1777 "$D/kpkg"
    (cd "$D/kpkg" && papt apt-get download -qq "$KPKG" >&2) || { log "apt-get download $KPKG failed"; exit 1; }
fi
if [ ! -f "$D/kroot/boot/vmlinuz-$KVER" ]; then
    rm -rf "$D/kroot" && mkdir "$D/kroot"
    dpkg-deb -x "$D"/kpkg/"$KPKG"_*.deb "$D/kroot"
fi
# modules.dep (the package leaves it to depmod at install): for the first stage's load order and for
# modprobe in the guest, which sees this tree at /lib/modules/<release>
[ -s "$D/kroot/lib/modules/$KVER/modules.dep" ] || depmod -b "$D/kroot" "$KVER"
# vmlinux: the ELF inside the bzImage (xz or zstd payload)
vmlinuz=$D/kroot/boot/vmlinuz-$KVER
rm -f "$D/vmlinux.tmp"
off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$vmlinuz" | head -n1 | cut -d: -f1 || true)
if [ -n "$off" ]; then
    tail -c +$((off + 1)) "$vmlinuz" | xz -dc 2>/dev/null >"$D/vmlinux.tmp" || true
else
    off=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$vmlinuz" | head -n1 | cut -d: -f1 || true)
    [ -n "$off" ] && { tail -c +$((off + 1)) "$vmlinuz" | zstd -dcq 2>/dev/null >"$D/vmlinux.tmp" || true; }
fi
[ "$(head -c4 "$D/vmlinux.tmp" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ] || { log "vmlinux extraction failed"; exit 1; }
mv "$D/vmlinux.tmp" "$D/vmlinux"

# initramfs: busybox + the first stage's modules + /init
M=$D/kroot/lib/modules/$KVER
G=$D/initramfs
rm -rf "$G"
mkdir -p "$G"/{bin,proc,sys,dev,run,tmp,newroot,etc,lib/modules}
cp /bin/busybox "$G/bin/busybox"
for a in $(/bin/busybox --list); do [ -e "$G/bin/$a" ] || ln -s busybox "$G/bin/$a"; done
declare -A seen=()
order=()
modfile() { find "$M/kernel" \( -name "$1.ko*" -o -name "${1//_/-}.ko*" \) | head -n1; }
resolve() {
    local m=$1 p deps d
    [ -n "${seen[$m]:-}" ] && return 0
    seen[$m]=1
    p=$(modfile "$m")
    if [ -z "$p" ]; then
        grep -qE "/(${m}|${m//_/-})\.ko" "$M/modules.builtin" 2>/dev/null && return 0
        log "module $m not found"; return 1
    fi
    deps=$(awk -v f="${p#"$M"/}:" '$1 == f { $1 = ""; print }' "$M/modules.dep")
    for d in $deps; do d=${d##*/}; resolve "${d%%.ko*}"; done
    order+=("$p")
}
for m in virtio_pci 9pnet_virtio 9p overlay; do resolve "$m"; done
: >"$G/etc/modules.order"
for p in "${order[@]}"; do
    b=${p##*/}
    case $b in
        *.ko.xz) xz -dc "$p" >"$G/lib/modules/${b%.xz}"; b=${b%.xz} ;;
        *.ko.zst) zstd -dcq "$p" >"$G/lib/modules/${b%.zst}"; b=${b%.zst} ;;
        *) cp "$p" "$G/lib/modules/$b" ;;
    esac
    echo "/lib/modules/$b" >>"$G/etc/modules.order"
done
cp "$here/init.sh" "$G/init" && chmod 755 "$G/init"
(cd "$G" && find . | LC_ALL=C sort | /bin/busybox cpio -o -H newc 2>/dev/null) >"$D/initramfs.cpio.tmp"
mv "$D/initramfs.cpio.tmp" "$D/initramfs.cpio"
echo "$KVER" >"$D/kver"
echo "$want" >"$D/stamp"
log "built $D/vmlinux ($KVER) and initramfs.cpio ($(du -h "$D/initramfs.cpio" | cut -f1))"
