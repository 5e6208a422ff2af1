#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# bootstrap.sh - set up a fresh Debian 12 checkout: install what is missing, build, and show
# socknotify working.  Run it once; afterwards `make` and `make check` are enough.
#
#   ./bootstrap.sh            install dependencies (apt-get, as root), configure, build, demo
#   ./bootstrap.sh --no-demo  the same without the demonstration
#   ./bootstrap.sh --deps     only install the Debian packages
#
# Extra arguments after -- go to ./configure (for example: -- --enable-sanitizers).
set -eu

cd "$(dirname "$0")"

PACKAGES="build-essential autoconf automake libtool pkg-config libevent-dev libjansson-dev
          libsmartcols-dev liburing-dev check libsystemd-dev mandoc man-db systemd python3 python3-pytest
          python3-mypy python3-venv python3-wheel"

demo=yes
deps_only=no
while [ $# -gt 0 ]; do
        case "$1" in
        --no-demo) demo=no ;;
        --deps) deps_only=yes ;;
        --) shift; break ;;
        *) echo "bootstrap.sh: unknown option $1" >&2; exit 2 ;;
        esac
        shift
done

missing=""
for p in $PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
        echo "==> installing Debian packages:$missing"
        if [ "$(id -u)" -eq 0 ]; then
                apt-get update
                DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
        elif command -v sudo >/dev/null 2>&1; then
                sudo apt-get update
                sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
        else
                echo "bootstrap.sh: not root and no sudo; run as root:" >&2
                echo "  apt-get update && apt-get install -y$missing" >&2
                exit 1
        fi
fi
[ "$deps_only" = yes ] && exit 0

echo "==> autoreconf"
autoreconf -fi
echo "==> configure $*"
./configure --enable-werror "$@"
echo "==> make"
make -j"$(nproc)"

[ "$demo" = yes ] || exit 0

echo "==> demonstration: socknotifyd on a private socket, examples/basic against it"
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
SOCKNOTIFY_SOCKET="$dir/socknotify.sock"
export SOCKNOTIFY_SOCKET
./daemon/socknotifyd &
pid=$!
i=0
while [ ! -S "$SOCKNOTIFY_SOCKET" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
./examples/basic
echo "==> done.  Run the tests with: make check"
