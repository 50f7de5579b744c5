# shellcheck shell=bash
# tests/clients/containerd2.sh - containerd 2.x for the CRI scenarios (client `cri2`), sourced by lib.sh.
#
# Debian 12 ships containerd 1.6 (client `cri`); containerd 2.x is only in Debian sid. Its package is
# fetched with `apt-get download` through a PRIVATE apt configuration (its own sources list, lists and
# cache under $CD2_BASE/apt: the host's apt sources and dpkg database are not touched) and unpacked
# with `dpkg-deb -x` into $CD2_BASE/<version> (reused when present), leaving the system's containerd
# 1.6 alone. Its own shim, containerd-shim-runc-v2 of the same package, is the only shim on its PATH.
#
#   package: containerd 2.1.9+ds1-5 (Debian sid, amd64; `containerd --version`: 2.1.9), pinned by
#   RLOXSC_CONTAINERD2_VERSION; when sid no longer has that version the candidate of the day is used
#   (and named in the setup log).
#
# It runs with a version-3 config made from contrib/containerd/config-v3.toml (BinaryName substituted)
# plus what only the test needs (rx_cri2_config): its own socket, state and root ($CRI2_STATE,
# $W/cri2/root), the runc shim's Root under its state ($CRI2_STATE/runc, so rloxsc's --root is
# $CRI2_STATE/runc/k8s.io, not the 1.6 instance's /run/containerd/runc/k8s.io), pods' cgroup parent
# /rloxsc-ci-cri2, the suite's sandbox image, CNI loopback only (as for 1.6: rx_cri_cni), NRI off and
# a handler `runc` with BinaryName = Debian's runc (when installed) for the side-by-side baseline.
# The default runtime is a handler whose runtime, `runc`, is not on containerd's PATH: a pod without a
# handler fails, as in the 1.6 instance. A handler `rxci-argv` runs rloxsc through a wrapper that
# records every argv containerd's shim passes ($W/cri2/argv.log; the `features` scenario).
# containerd 2.x puts its shims' sockets in /run/containerd/s/<hash> whatever its state dir is.
#
# rx_cri_select cri|cri2 points the CRI_* variables of lib.sh (socket, state, runc root, cgroup parent,
# handler, ctr binary, daemon name, work dir) at one of the two instances; cri.sh calls it with
# $RX_CLIENT, so its scenarios run unchanged against either.
#
# Knobs: RLOXSC_CRI2_HANDLER=runc runs the cri2 scenarios that do not assert rloxsc's hardening through
# the `runc` handler instead (the baseline); RLOXSC_CRI2_RUNC=PATH is the runc binary of that handler
# (default /usr/sbin/runc, Debian's).

CD2_PKG_VERSION=${RLOXSC_CONTAINERD2_VERSION:-2.1.9+ds1-5}
CD2_SUITE=sid
CD2_BASE=/var/tmp/rloxsc-containerd2
CD2_DIR=$CD2_BASE/$CD2_PKG_VERSION              # set again by rx_install_containerd2 if another version is used
CD2_BIN=$CD2_DIR/usr/bin                         # containerd, containerd-shim-runc-v2, ctr
CRI2_STATE=/run/${W##*/}-cri2
CRI2_SOCK=$CRI2_STATE/containerd.sock
CRI2_RUNC_ROOT=$CRI2_STATE/runc/k8s.io
CRI2_CGROUP_PARENT=rloxsc-ci-cri2
CRI2_RUNC=${RLOXSC_CRI2_RUNC:-/usr/sbin/runc}
CRI2_HANDLER=${RLOXSC_CRI2_HANDLER:-rloxsc}
# the 1.6 instance's values, as lib.sh set them
CRI1_STATE=$CRI_STATE CRI1_SOCK=$CRI_SOCK CRI1_RUNC_ROOT=$CRI_RUNC_ROOT CRI1_CGROUP_PARENT=$CRI_CGROUP_PARENT
# the nginx-style image (Debian's nginx-light in a bookworm rootfs), cached between runs
IMG_CRI_NGINX=docker.io/library/rloxsc-ci-nginx:latest
RX_NGINX_CACHE=/var/tmp/rloxsc-ci-nginx

# rx_cri_select cri|cri2: the CRI_* variables of that containerd instance
rx_cri_select() {
    case $1 in
        cri2)
            CRI_INSTANCE=cri2 CRI_STATE=$CRI2_STATE CRI_SOCK=$CRI2_SOCK CRI_RUNC_ROOT=$CRI2_RUNC_ROOT
            CRI_CGROUP_PARENT=$CRI2_CGROUP_PARENT CRI_HANDLER=$CRI2_HANDLER CRI_CTR=$CD2_BIN/ctr
            CRI_DAEMON=containerd-cri2 CRI_WORK=$W/cri2 CRI_CONTAINERD_MAJOR=2 ;;
        *)
            CRI_INSTANCE=cri CRI_STATE=$CRI1_STATE CRI_SOCK=$CRI1_SOCK CRI_RUNC_ROOT=$CRI1_RUNC_ROOT
            CRI_CGROUP_PARENT=$CRI1_CGROUP_PARENT CRI_HANDLER=rloxsc CRI_CTR=ctr
            CRI_DAEMON=containerd-cri CRI_WORK=$W/cri CRI_CONTAINERD_MAJOR=1 ;;
    esac
}
rx_cri_select cri

# ---------------------------------------------------------------------------------------------------
# install (private: nothing of the host's apt or dpkg state changes)

# rx_cd2_apt apt-get|apt-cache ARGS...: with the private configuration only
rx_cd2_apt() {
    local a=$CD2_BASE/apt tool=$1; shift
    "$tool" -o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts="$a/sources.list.d" \
        -o Dir::State::Lists="$a/lists" -o Dir::Cache="$a/cache" -o Dir::Etc::Preferences="$a/preferences" \
        -o Dir::Etc::PreferencesParts="$a/preferences.d" -o Debug::NoLocking=1 -o Acquire::Languages=none "$@"
}

# rx_install_containerd2: $CD2_BIN/{containerd,containerd-shim-runc-v2,ctr} from Debian sid's package
rx_install_containerd2() {
    local a=$CD2_BASE/apt v deb new
    if [ -x "$CD2_BIN/containerd" ] && [ -x "$CD2_BIN/containerd-shim-runc-v2" ] && [ -f "$CD2_DIR/.rloxsc-unpacked" ]; then
        rx_note "containerd 2.x: reusing $CD2_DIR ($("$CD2_BIN/containerd" --version))"; return 0
    fi
    mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/sources.list.d" "$a/preferences.d" "$CD2_BASE/debs"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $CD2_SUITE main" >"$a/sources.list"
    rx_cd2_apt apt-get update -qq >&2 || { rx_note "apt-get update of the private $CD2_SUITE sources failed"; return 1; }
    v=$CD2_PKG_VERSION
    if ! rx_cd2_apt apt-cache show "containerd=$v" >/dev/null 2>&1; then
        v=$(rx_cd2_apt apt-cache policy containerd 2>/dev/null | sed -n 's/^ *Candidate: //p')
        rx_note "containerd $CD2_PKG_VERSION is no longer in $CD2_SUITE: using its candidate $v"
        [[ "$v" == 2.* ]] || { rx_note "no containerd 2.x in $CD2_SUITE"; return 1; }
        CD2_DIR=$CD2_BASE/$v CD2_BIN=$CD2_BASE/$v/usr/bin
        export RLOXSC_CONTAINERD2_VERSION=$v     # for the scenarios' shells too
        [ "$CRI_INSTANCE" != cri2 ] || CRI_CTR=$CD2_BIN/ctr
        if [ -f "$CD2_DIR/.rloxsc-unpacked" ]; then return 0; fi
    fi
    deb="$CD2_BASE/debs/containerd_${v/:/%3a}_amd64.deb"
    if [ ! -s "$deb" ]; then
        (cd "$CD2_BASE/debs" && rx_cd2_apt apt-get download "containerd=$v") >&2 || { rx_note "apt-get download containerd=$v failed"; return 1; }
    fi
    new=$CD2_DIR.new
    rm -rf "$new"; mkdir -p "$new"
    dpkg-deb -x "$deb" "$new" || return 1
    rm -rf "$CD2_DIR"; mv "$new" "$CD2_DIR"
    dpkg-deb -f "$deb" Package Version >"$CD2_DIR/.rloxsc-unpacked"
    rx_note "containerd 2.x: unpacked $(basename "$deb") into $CD2_DIR ($("$CD2_BIN/containerd" --version))"
}

# ---------------------------------------------------------------------------------------------------
# config and daemon

rx_cri2_up() { [ -S "$CRI2_SOCK" ] && "$CD2_BIN/ctr" -a "$CRI2_SOCK" version >/dev/null 2>&1; }

# rx_cri2_config OUT: contrib/containerd/config-v3.toml plus the test's own dirs, sandbox image, CNI,
# the baseline handler `runc` and the argv-recording handler `rxci-argv`
rx_cri2_config() {
    local out=$1 src=$RX_REPO/contrib/containerd/config-v3.toml t=plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes
    local root="Root = \"$CRI2_STATE/runc\"" runc_bin=
    # the handler runc of the contrib file gets Debian's runc by absolute path (the baseline)
    [ ! -x "$CRI2_RUNC" ] || runc_bin="BinaryName = \"$CRI2_RUNC\""
    {
        printf '# written by tests/clients/containerd2.sh from contrib/containerd/config-v3.toml\n'
        printf 'root = "%s"\nstate = "%s"\n' "$W/cri2/root" "$CRI2_STATE"
        # BinaryName -> the installed rloxsc, plus the shim's Root (test-only) in every handler;
        # pods without a handler go to rxci-default (its runtime, runc, is not on containerd's PATH)
        sed -e "s#^\( *\)BinaryName = \"/usr/local/bin/rloxsc\"#\1BinaryName = \"$RLOXSC\"\n\1$root#" \
            -e "s#^\( *\)default_runtime_name = \"runc\"#\1default_runtime_name = \"rxci-default\"#" \
            -e "/^ *\[$t\.runc\.options\]\$/a\\        $root\n        $runc_bin" \
            "$src"
        printf '\n# test-only: pods without a handler (runc is not on containerd'"'"'s PATH: they fail)\n'
        printf '[%s.rxci-default]\n  runtime_type = "io.containerd.runc.v2"\n' "$t"
        printf '[%s.rxci-default.options]\n  %s\n' "$t" "$root"
        printf '\n# test-only: rloxsc through a wrapper recording its argv (%s)\n' "$W/cri2/argv.log"
        printf '[%s.rxci-argv]\n  runtime_type = "io.containerd.runc.v2"\n' "$t"
        printf '[%s.rxci-argv.options]\n  BinaryName = "%s"\n  %s\n' "$t" "$W/cri2/rloxsc-argv" "$root"
        printf '\n[grpc]\n  address = "%s"\n[ttrpc]\n  address = "%s.ttrpc"\n' "$CRI2_SOCK" "$CRI2_SOCK"
        printf '[plugins."io.containerd.cri.v1.images".pinned_images]\n  sandbox = "%s"\n' "$IMG_CRI_PAUSE"
        printf '[plugins."io.containerd.cri.v1.runtime".cni]\n  bin_dirs = ["%s"]\n  conf_dir = "%s"\n' "$W/cri2/cni/bin" "$W/cri2/cni/conf"
        printf '[plugins."io.containerd.internal.v1.opt"]\n  path = "%s"\n' "$W/cri2/opt"
        printf '[plugins."io.containerd.nri.v1.nri"]\n  disable = true\n'
    } >"$out"
    grep -q "BinaryName = \"$RLOXSC\"" "$out" || { rx_note "contrib/containerd/config-v3.toml: no BinaryName line for the rloxsc handler"; return 1; }
    grep -q '^version = 3' "$out" || { rx_note "contrib/containerd/config-v3.toml is not version 3"; return 1; }
    grep -q 'default_runtime_name = "rxci-default"' "$out" || { rx_note "contrib/containerd/config-v3.toml: no default_runtime_name"; return 1; }
}

# rx_ensure_containerd2: install, write the config, start containerd 2.x by pid as "containerd-cri2"
# (PATH: only its own containerd and shim, no runc)
rx_ensure_containerd2() {
    local f cfg=$W/cri2/config.toml
    rx_install_containerd2 || return 1
    if rx_cri2_up; then rx_note "a containerd already serves $CRI2_SOCK: not started by this run"; return 1; fi
    mkdir -p "$W/cri2/root" "$W/cri2/pods" "$W/cri2/opt" "$W/cri2/path"
    rx_cri_cni "$W/cri2/cni" || return 1
    for f in containerd containerd-shim-runc-v2; do ln -sf "$CD2_BIN/$f" "$W/cri2/path/$f"; done
    mkdir -p "$W/cri2/specs"
    cat >"$W/cri2/rloxsc-argv" <<WRAPPER
#!/bin/bash
# test-only (tests/clients/containerd2.sh): record the argv (and, on create, the bundle's config.json), then run rloxsc
# (containerd's PATH, passed on by the shim, holds only containerd and its shim: /bin/cp by path)
printf '%s\n' "\$*" >>"$W/cri2/argv.log"
if [[ " \$* " == *" create "* ]]; then
    a=("\$@"); for ((i = 0; i < \${#a[@]}; i++)); do
        [ "\${a[i]}" != --bundle ] || /bin/cp "\${a[i+1]}/config.json" "$W/cri2/specs/\${a[-1]}.json" 2>/dev/null || true
    done
fi
exec "$RLOXSC" "\$@"
WRAPPER
    chmod 0755 "$W/cri2/rloxsc-argv"
    rx_cri2_config "$cfg" || return 1
    rx_start_daemon containerd-cri2 env PATH="$W/cri2/path" "$CD2_BIN/containerd" --config "$cfg"
    wait_for 30 rx_cri2_up || { tail -n 20 "$W/containerd-cri2.log" >&2; return 1; }
    "$CD2_BIN/containerd" --version >&2
}

rx_stop_containerd2() { rx_stop_daemon containerd-cri2; }

# run.sh's cleanup, before the daemons stop: every pod of the suite's containerd 2.x
rx_cri2_cleanup_pods() {
    local d c=("$CRI_VENV/bin/python" "$RX_DIR/cri_client.py" --socket "$CRI2_SOCK")
    [ -x "$CRI_VENV/bin/python" ] && rx_cri2_up || return 0
    for d in $("${c[@]}" pods 2>/dev/null | jq -r '.items[]?.id'); do
        "${c[@]}" stopp "$d" >/dev/null 2>&1
        "${c[@]}" rmp "$d" >/dev/null 2>&1
    done
}
# ... and after they stopped: its pods' cgroup parent (made by the runtime) and its state dir
rx_cri2_cleanup_dirs() {
    local d
    for d in /sys/fs/cgroup/*/"$CRI2_CGROUP_PARENT"; do
        [ ! -d "$d" ] || rmdir "$d" 2>/dev/null || echo "cgroup $d is not empty: left in place"
    done
    [ -d "$CRI2_STATE" ] || return 0
    if grep -qF " $CRI2_STATE/" /proc/self/mountinfo; then
        echo "mounts left under $CRI2_STATE: left in place"; RLOXSC_KEEP_WORKDIR=1
    else
        rm -rf --one-file-system "$CRI2_STATE"
    fi
}

# ---------------------------------------------------------------------------------------------------
# the nginx-style image: a Debian bookworm rootfs (mmdebstrap, variant essential) with nginx-light
# and apache2 (the httpd-image scenario runs `apache2ctl -D FOREGROUND` from it), its command
# `nginx -g "daemon off;"` (what the official image runs), as an OCI archive
# (rx_mk_oci_archive). Rootfs and archive are cached in $RX_NGINX_CACHE (rebuilt when the recipe changes).

RX_NGINX_RECIPE="bookworm essential nginx-light apache2 v2"
rx_nginx_archive() {
    local c=$RX_NGINX_CACHE new
    if [ -s "$c/nginx-oci.tar" ] && [ "$(cat "$c/stamp" 2>/dev/null)" = "$RX_NGINX_RECIPE" ]; then return 0; fi
    command -v mmdebstrap >/dev/null || rx_install_packages mmdebstrap || return 1
    mkdir -p "$c"; new=$c/rootfs.new
    rm -rf "$new" "$c/rootfs" "$c/nginx-oci.tar"
    mmdebstrap --mode=root --variant=essential --include=nginx-light,apache2 \
        --aptopt='Acquire::Languages "none"' --aptopt='APT::Install-Recommends "false"' \
        --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        bookworm "$new" "deb http://deb.debian.org/debian bookworm main" \
        "deb http://deb.debian.org/debian-security bookworm-security main" >"$c/mmdebstrap.log" 2>&1 \
        || { tail -n 15 "$c/mmdebstrap.log" >&2; return 1; }
    rm -rf "$new"/var/lib/apt/lists/* "$new"/var/cache/apt/*.bin "$new"/var/cache/apt/archives/*.deb
    [ -x "$new/usr/sbin/nginx" ] && [ -x "$new/usr/sbin/apache2" ] || { rx_note "no /usr/sbin/nginx or apache2 in the web servers' rootfs"; return 1; }
    mv "$new" "$c/rootfs"
    rx_mk_oci_archive "$c/rootfs" "$c/nginx-oci.tar" "$IMG_CRI_NGINX" '["nginx", "-g", "daemon off;"]' || return 1
    echo "$RX_NGINX_RECIPE" >"$c/stamp"
}

# rx_cri_nginx_import: the nginx image into the selected CRI's containerd (best effort: the
# nginx-image scenario fails with the reason when it is missing)
rx_cri_nginx_import() {
    rx_nginx_archive || { echo "could not build the nginx image (see $RX_NGINX_CACHE/mmdebstrap.log)"; return 1; }
    "$CRI_CTR" -a "$CRI_SOCK" -n "$CRI_NS" image import "$RX_NGINX_CACHE/nginx-oci.tar" >>"$W/cri-import.log" 2>&1 \
        || { echo "ctr image import of the nginx image failed"; return 1; }
}
