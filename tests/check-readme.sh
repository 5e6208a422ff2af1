#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# Every ```c block of README.md is a complete program: it compiles warning-free against the
# built library, and runs successfully against a real socknotifyd on a private socket.
set -eu
src="${SN_SRCDIR:-.}"
build="${SN_BUILDDIR:-.}"
tmp=$(mktemp -d)
pid=""
cleanup() {
        if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
        rm -rf "$tmp"
}
trap cleanup EXIT
fail=0

awk -v dir="$tmp" '
        /^```c$/ { n++; file = sprintf("%s/block%d.c", dir, n); inblock = 1; next }
        /^```/ && inblock { inblock = 0; close(file); next }
        inblock { print > file }
' "$src/README.md"
blocks=$(ls "$tmp"/block*.c 2>/dev/null | wc -l)
if [ "$blocks" -eq 0 ]; then
        echo "FAIL: README.md has no \`\`\`c block"; exit 1
fi

lib=$(ls "$build"/client/.libs/libsocknotify.so 2>/dev/null || true)
if [ -z "$lib" ]; then
        echo "SKIP: shared library not built"; exit 77
fi
SOCKNOTIFY_SOCKET="$tmp/socknotify.sock"
export SOCKNOTIFY_SOCKET
"$build/daemon/socknotifyd" --socket "$SOCKNOTIFY_SOCKET" 2>"$tmp/daemon.log" &
pid=$!
i=0
while [ ! -S "$SOCKNOTIFY_SOCKET" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done

for c in "$tmp"/block*.c; do
        name="README.md $(basename "$c" .c)"
        if ! ${CC:-cc} -Wall -Wextra -Werror -I"$src/include" \
                ${SN_TEST_LDFLAGS:-} "$c" "$lib" -o "${c%.c}" 2>"$tmp/cc.err"; then
                echo "FAIL: $name does not compile:"; cat "$tmp/cc.err"; nl -ba "$c"; fail=1
                continue
        fi
        if LD_LIBRARY_PATH="$(dirname "$lib")" "${c%.c}" > "$tmp/out" 2>&1; then
                echo "PASS: $name compiles and runs: $(head -n 1 "$tmp/out")"
        else
                echo "FAIL: $name exits $?:"; cat "$tmp/out"; fail=1
        fi
done
exit $fail
