#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# The units pass `systemd-analyze verify --recursive-errors=yes` (Documentation=man: entries
# checked against our own pages through MANPATH) and the system service's exposure score from
# `systemd-analyze security --offline=yes` is at most 2.0.
set -eu
src="${SN_SRCDIR:-.}"
build="${SN_BUILDDIR:-.}"
if ! command -v systemd-analyze >/dev/null 2>&1; then
        echo "SKIP: systemd-analyze not installed"; exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# Units as installed, but running the daemon and socknotifyctl of this build tree (verify
# checks ExecStart= and ExecReload=).
mkdir -p "$tmp/system" "$tmp/user" "$tmp/man/man3" "$tmp/man/man7" "$tmp/man/man8"
for d in system user; do
        in="$src/systemd/socknotifyd.service.in"; [ $d = user ] && in="$src/systemd/user/socknotifyd.service.in"
        sock="$src/systemd/socknotifyd.socket"; [ $d = user ] && sock="$src/systemd/user/socknotifyd.socket"
        sed -e "s|@sbindir@/socknotifyd|$(cd "$build" && pwd)/daemon/socknotifyd|" \
                -e "s|@bindir@/socknotifyctl|$(cd "$build" && pwd)/ctl/socknotifyctl|" \
                "$in" > "$tmp/$d/socknotifyd.service"
        cp "$sock" "$tmp/$d/socknotifyd.socket"
done
cp "$src"/man/*.3 "$tmp/man/man3/"
cp "$src"/man/*.8 "$tmp/man/man8/"
cp "$build/man/socknotify-protocol.7" "$tmp/man/man7/"

for d in system user; do
        if out=$(MANPATH="$tmp/man" systemd-analyze verify --recursive-errors=yes \
                        "$tmp/$d/socknotifyd.socket" "$tmp/$d/socknotifyd.service" 2>&1) &&
           [ -z "$out" ]; then
                echo "PASS: systemd-analyze verify: $d units"
        else
                echo "FAIL: systemd-analyze verify: $d units"; echo "$out"; fail=1
        fi
done

if out=$(systemd-analyze security --offline=yes --threshold=20 "$tmp/system/socknotifyd.service" 2>&1); then
        echo "PASS: systemd-analyze security: $(echo "$out" | grep -o 'exposure level.*')"
else
        echo "FAIL: systemd-analyze security above 2.0"; echo "$out" | tail -n 30; fail=1
fi
exit $fail
