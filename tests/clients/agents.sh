# shellcheck shell=bash
# tests/clients/agents.sh - agent frameworks that drive their sandbox over a published port, each
# unchanged, through Docker with contrib's configuration (the runtime registered by path, no policy
# file), side by side with runc: SWE-ReX's DockerDeployment, smolagents' DockerExecutor and autogen's
# DockerJupyterServer (tests/clients/agents.py drives them; pins in agents-requirements.txt). They run
# on bridge.sh's dockerd, in the network namespace the suite made, with its bridge (10.235.0.1/24)
# and docker-proxy for the published ports; the frameworks run in that namespace too (DOCKER_HOST
# is that dockerd). None of them takes a runtime argument that reaches every container (autogen has
# none), so dockerd's `default-runtime` is switched for each run (SIGHUP), as a user who wants every
# sandbox contained sets it.
#
# Their images (python:3.11, python:3.12-bullseye, quay.io's jupyter foundation) are not reachable
# here: scripts/build-agents-image.sh builds one Debian rootfs with what their Dockerfiles install
# (swe-rex, jupyter_kernel_gateway, ipykernel), imported once and given each framework's CMD.
#
#   swerex, smolagents, autogen   every step of the framework (start, run code, state kept, errors,
#                       files, stop) passes under rloxsc as under runc; from inside the same sandbox, a
#                       TCP connection, a UDP datagram and a DNS query to listeners on the bridge's
#                       gateway reach them under runc (the control) and are refused under rloxsc, where
#                       nothing reaches the listeners
#   allowlist-update    each framework's sandbox under a runtime whose policy allowlists one port on the
#                       gateway reaches it; after `rloxsc update --egress-allow ""` on that container
#                       it is refused

AGENTS_SCENARIOS="
swerex ag_swerex
smolagents ag_smolagents
autogen ag_autogen
allowlist-update ag_allowlist_update
"

AG_IMG_BASE=rxci-agents/base:1
AG_VENV=${RLOXSC_AGENTS_VENV:-/var/tmp/rloxsc-ci-agents-venv}

# the frameworks' venv on the host (kept between runs, rebuilt when the pins change)
ag_venv() {
    local req="$RX_DIR/agents-requirements.txt"
    if [ -x "$AG_VENV/bin/python" ] && cmp -s "$req" "$AG_VENV/rloxsc-requirements.txt"; then return 0; fi
    rm -rf "$AG_VENV"
    /usr/bin/python3 -m venv "$AG_VENV" || return 1
    "$AG_VENV/bin/pip" install --disable-pip-version-check -q -r "$req" >&2 || return 1
    "$AG_VENV/bin/python" -c 'import swerex, smolagents, autogen_ext.code_executors.docker_jupyter' || return 1
    cp "$req" "$AG_VENV/rloxsc-requirements.txt"
}

# setup (run.sh's setup_agents): the bridge dockerd (once for bridge and agents), the image, the venv
ag_setup() {
    [ -s "$W/bridge-netns" ] || rx_ensure_bridge_dockerd || { echo "the bridge dockerd did not start"; return 1; }
    bash "$RX_REPO/scripts/build-agents-image.sh" || { echo "scripts/build-agents-image.sh failed"; return 1; }
    ag_venv || { echo "could not install the frameworks' venv ($AG_VENV) from PyPI"; return 1; }
    tar --numeric-owner -C "$RX_REPO/bundles/agents/rootfs" -cf "$W/agents-rootfs.tar" . || return 1
    BD import -c 'ENV PATH=/opt/agents/bin:/usr/local/bin:/usr/bin:/bin' -c 'CMD ["/bin/bash"]' \
        "$W/agents-rootfs.tar" "$AG_IMG_BASE" >/dev/null || return 1
    rm -f "$W/agents-rootfs.tar"
    # each framework's image: its Dockerfile's CMD, EXPOSE and ENV over the base (no RUN: nothing runs)
    printf 'FROM %s\nCMD ["/bin/bash"]\n' "$AG_IMG_BASE" | BD build -q -t rxci-agents/swerex:1 - >/dev/null || return 1
    printf 'FROM %s\nEXPOSE 8888\nCMD ["jupyter", "kernelgateway", "--KernelGatewayApp.ip=0.0.0.0", "--KernelGatewayApp.port=8888"]\n' \
        "$AG_IMG_BASE" | BD build -q -t rxci-agents/smolagents:1 - >/dev/null || return 1
    printf '%s\n' "FROM $AG_IMG_BASE" 'ENV TOKEN="UNSET"' \
        'CMD python -m jupyter kernelgateway --KernelGatewayApp.ip=0.0.0.0 --KernelGatewayApp.port=8888 --KernelGatewayApp.auth_token="${TOKEN}" --JupyterApp.answer_yes=true --JupyterWebsocketPersonality.list_kernels=true' \
        'EXPOSE 8888' 'WORKDIR /workspace' | BD build -q -t rxci-agents/autogen:1 - >/dev/null || return 1
    # the update the allowlist scenario runs on a container of the rloxsc-allow runtime (its id last)
    cat >"$W/agents-close-allowlist" <<EOF
#!/bin/sh
# rloxsc update --egress-allow "" on a container of the bridge dockerd (Docker 20.10 gives a runtime
# registered by path the state root <exec-root>/runtime-runc/<containerd namespace>)
exec "$RLOXSC" --root "$BR_DIR/exec/runtime-runc/rxbridge" update --egress-allow "" "\$1"
EOF
    chmod 0755 "$W/agents-close-allowlist"
}

# ag_default_runtime NAME: the bridge dockerd's default-runtime (SIGHUP reload), waited for
ag_default_runtime() {
    jq --arg r "$1" '."default-runtime" = $r' "$BR_DIR/daemon.json" >"$BR_DIR/daemon.json.new" \
        && mv "$BR_DIR/daemon.json.new" "$BR_DIR/daemon.json" || fail "could not rewrite $BR_DIR/daemon.json"
    kill -HUP "$(cat "$BR_DIR/docker.pid")"
    wait_for 15 bash -c '[ "$("$2" -H "$3" info --format "{{.DefaultRuntime}}")" = "$1" ]' _ "$1" "$D" "unix://$BR_SOCK" \
        || fail "the bridge dockerd did not take default-runtime $1"
}

# ag_drive FRAMEWORK RUNTIME OUT [ARGS...]: run the framework's steps with RUNTIME as dockerd's default
# runtime; its JSON lines in OUT. Every container the framework made must have been run by RUNTIME.
ag_drive() {
    local fw=$1 rt=$2 out=$3 seen poller; shift 3
    ag_default_runtime "$rt"
    on_exit ag_default_runtime runc
    seen=$out.runtimes
    : >"$seen"
    setsid bash -c '"$2" -H "$3" events --filter type=container --filter event=create --format "{{.ID}}" 2>/dev/null |
        while read -r id; do "$2" -H "$3" inspect -f "{{.HostConfig.Runtime}}" "$id" >>"$1" 2>/dev/null; done' _ "$seen" "$D" "unix://$BR_SOCK" &
    poller=$!
    on_exit kill -- "-$poller"
    sleep 0.5
    local rc=0
    in_ns env DOCKER_HOST="unix://$BR_SOCK" timeout 200 "$AG_VENV/bin/python" "$RX_DIR/agents.py" \
        --framework "$fw" --image "rxci-agents/$fw:1" --gateway "$BR_GW" "$@" >"$out.raw" 2>"$out.err" || rc=$?
    sleep 0.5; kill -- "-$poller" 2>/dev/null || true
    # (the frameworks' own logging goes to stdout too: the steps are the JSON lines)
    grep '^{' "$out.raw" >"$out" || true
    { grep -v '^{' "$out.raw" || true; cat "$out.err"; } | tail -n 15 >&2
    jq -r '"  \(if .ok then "ok  " else "FAIL" end) \(.framework)/\(.name): \(.detail)"' "$out" >&2
    [ "$rc" = 0 ] || fail "agents.py --framework $fw under $rt exited $rc: $(tail -n 3 "$out.err")"
    [ -s "$seen" ] || fail "$fw under $rt: no container was seen being created"
    [ "$(sort -u "$seen")" = "$rt" ] || fail "$fw under $rt: containers run by $(sort -u "$seen" | tr '\n' ' ')"
}

# ag_failed OUT: the names of the steps that failed
ag_failed() { jq -r 'select(.ok | not) | .name' "$1" | awk '!seen[$0]++' | tr '\n' ' '; }
ag_probe() { jq -r --arg k "$2" 'select(.name == "egress-probe") | .probe[$k]' "$1"; }

ag_framework() {
    local fw=$1 port=$2 f=$W/agents-$1-$$ bad
    br_listen "$port" "$f.count"
    # runc first: the control (its steps pass, its probe reaches every listener)
    ag_drive "$fw" rxrunc "$f.runc" --probe-port "$port"
    bad=$(ag_failed "$f.runc")
    [ -z "$bad" ] || fail "$fw under runc failed: $bad (the scenario needs runc's baseline)"
    sleep 1
    for k in tcp udp-data udp; do
        grep -qx "$k" "$f.count" || fail "under runc the probe's $k did not reach the gateway's listener (the control): $(tr '\n' ' ' <"$f.count")"
    done
    : >"$f.count"
    ag_drive "$fw" rloxsc "$f.rloxsc" --probe-port "$port"
    bad=$(ag_failed "$f.rloxsc")
    [ -z "$bad" ] || fail "$fw under rloxsc: steps failed that passed under runc: $bad"
    [ "$(jq -s 'length' "$f.rloxsc")" = "$(jq -s 'length' "$f.runc")" ] || fail "$fw: rloxsc ran another number of steps than runc"
    sleep 1
    assert_eq "what reached the gateway's listeners from the rloxsc sandbox" "" "$(cat "$f.count")"
    assert_match "the sandbox's TCP connect was refused" "ConnectionRefused" "$(ag_probe "$f.rloxsc" tcp)"
    assert_no_match "the sandbox's UDP datagram left" "^(sent|answered)$" "$(ag_probe "$f.rloxsc" udp)"
    assert_no_match "the sandbox's DNS query left" "^(sent|answered)$" "$(ag_probe "$f.rloxsc" dns)"
    rx_note "rloxsc: tcp $(ag_probe "$f.rloxsc" tcp); udp $(ag_probe "$f.rloxsc" udp); dns $(ag_probe "$f.rloxsc" dns)"
}

ag_swerex() { ag_framework swerex 18092; }
ag_smolagents() { ag_framework smolagents 18093; }
ag_autogen() { ag_framework autogen 18094; }

# the bridge dockerd's rloxsc-allow runtime allowlists $BR_GW:18090 (bridge.sh)
ag_allowlist_update() {
    local fw f=$W/agents-allow-$$ bad step
    br_listen 18090 "$f.count"
    for fw in swerex smolagents autogen; do
        ag_drive "$fw" rloxsc-allow "$f.$fw" --probe-port 18095 --allow-port 18090 --after-allow "$W/agents-close-allowlist"
        bad=$(ag_failed "$f.$fw")
        [ -z "$bad" ] || fail "$fw under rloxsc-allow: $bad"
        for step in allowlisted-port allowlist-closed; do
            jq -se --arg n "$step" 'map(select(.name == $n)) | length > 0 and all(.ok)' "$f.$fw" >/dev/null \
                || fail "$fw: no passing $step step"
        done
    done
    sleep 1
    # one connection per framework before the update, none after
    assert_eq "connections that reached the allowlisted port" "tcp tcp tcp" "$(grep -x tcp "$f.count" | tr '\n' ' ' | sed 's/ $//')"
}
