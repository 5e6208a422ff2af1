#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# README's order in a fresh copy of the sources: a first build as bootstrap.sh makes it (default
# prefix), then ./configure --prefix=X, make, make install.  The second make must rebuild what
# has the old directories compiled in: the installed daemon names X's configuration file, and
# the installed programs find X's libsocknotify without LD_LIBRARY_PATH or ldconfig.  The
# installed daemon then serves the installed socknotifyctl and the installed Python package,
# whose version is the C library's.
#
# The copy is of the files git knows in the source tree (tracked, or new and not ignored), as
# they are in the working tree; skipped (77) outside a git checkout.  Takes a minute or more: it
# builds the tree once.
set -eu
src="${SN_SRCDIR:-.}"
src=$(cd "$src" && pwd)
# The source tree must be a checkout's top itself: an unpacked tarball inside some other checkout
# (make distcheck run in a clone) is not one.
top=$(git -C "$src" rev-parse --show-toplevel 2>/dev/null || true)
if ! command -v git >/dev/null 2>&1 || [ -z "$top" ] ||
   [ "$(cd "$top" && pwd -P)" != "$(cd "$src" && pwd -P)" ]; then
        echo "SKIP: not a git checkout (the fresh copy is made with git ls-files)"
        exit 77
fi

tmp=$(mktemp -d)
pid=""
cleanup() {
        if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
        rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
ok() { echo "PASS: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

mkdir "$tmp/src"
(cd "$src" && git ls-files -z --cached --others --exclude-standard) |
        (cd "$src" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
        (cd "$src" && tar --null -T - -cf -) | (cd "$tmp/src" && tar -xf -)

cd "$tmp/src"
jobs=-j2
log="$tmp/build.log"
step() {
        if ! "$@" >>"$log" 2>&1; then
                tail -n 40 "$log"
                echo "FAIL: $* (in a fresh copy of the sources)"
                exit 1
        fi
}
# bootstrap.sh without its apt-get step: what it runs once the packages are there.
step autoreconf -fi
step ./configure --enable-werror
step make $jobs
ok "first build, default prefix"

prefix="$tmp/inst"
step ./configure --enable-werror --prefix="$prefix"
step make $jobs
step make install
ok "configure --prefix=$prefix, make, make install"

conf="$prefix/etc/socknotify/socknotifyd.json"
if "$prefix/sbin/socknotifyd" --help | grep -qF "$conf"; then
        ok "installed socknotifyd reads $conf"
else
        bad "installed socknotifyd --help does not name $conf:"
        "$prefix/sbin/socknotifyd" --help | grep -F socknotifyd.json || true
fi

unset LD_LIBRARY_PATH
# "/path (0x...)", or "not found"
lib=$(ldd "$prefix/bin/socknotifyctl" | sed -n 's/^[[:space:]]*libsocknotify\.so\.0 => //p')
case "$lib" in
"$prefix"/lib/*) ok "installed socknotifyctl finds ${lib% (*}" ;;
*) bad "installed socknotifyctl: libsocknotify.so.0 => '$lib', not under $prefix/lib" ;;
esac
if v=$("$prefix/bin/socknotifyctl" --version 2>&1); then
        ok "installed socknotifyctl --version: $v"
else
        bad "installed socknotifyctl --version: $v"
fi

# The installed daemon serves the installed tools.
SOCKNOTIFY_SOCKET="$tmp/sn.sock"
export SOCKNOTIFY_SOCKET
"$prefix/sbin/socknotifyd" --socket="$SOCKNOTIFY_SOCKET" --config= 2>"$tmp/daemon.log" &
pid=$!
i=0
while [ ! -S "$SOCKNOTIFY_SOCKET" ] && [ $i -lt 300 ] && kill -0 "$pid" 2>/dev/null; do
        sleep 0.1
        i=$((i + 1))
done
if "$prefix/bin/socknotifyctl" status >"$tmp/status" 2>&1; then
        ok "installed socknotifyctl status against the installed daemon"
else
        bad "installed socknotifyctl status:"; cat "$tmp/status" "$tmp/daemon.log"
fi

version=$(sed -n 's/^Version: //p' "$prefix/lib/pkgconfig/socknotify.pc")
pydir=$(find "$prefix/lib" -type d -name socknotify -path '*-packages/*' | head -n 1)
if [ -z "$pydir" ]; then
        echo "SKIP: no Python package installed (configure found no python3)"
else
        got=$(cd "$tmp" && PYTHONPATH="$(dirname "$pydir")" python3 -c '
import socknotify
with socknotify.Connection() as c:
    c.create_port().close()
print(socknotify.__version__)') || got="(failed)"
        if [ "$got" = "$version" ]; then
                ok "installed Python package $version, against the installed daemon"
        else
                bad "installed Python package: version '$got', socknotify.pc says '$version'"
        fi
fi
exit $fail
