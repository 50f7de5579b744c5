#!/bin/sh
# gcc-check.sh OUTFILE: compiles scripts/workload/cprog.c with gcc inside the container (dynamically
# and statically linked), runs both, and writes one JSON line per check to OUTFILE.
out="${1:-/dev/stdout}"
: >"$out"
cd /tmp || exit 1
line() { printf '{"name": "%s", "result": "%s", "detail": "%s"}\n' "$1" "$2" "$3" >>"$out"; }
build() {  # NAME FLAGS...
    name="$1"; shift
    if gcc -O2 -Wall -pthread "$@" -o "/tmp/cprog-$name" /workload/cprog.c 2>"/tmp/gcc-$name.err"; then
        line "gcc $name build" pass ""
        "/tmp/cprog-$name" "$name: " >>"$out"
        [ $? -le 1 ] || line "$name: run" fail "exited abnormally"
    else
        # shellcheck disable=SC1003  # tr's set holds a backslash, not an escaped quote
        line "gcc $name build" fail "$(head -c 300 "/tmp/gcc-$name.err" | tr '\n"\\' '   ')"
    fi
}
build dynamic
build static -static
cat "$out"
