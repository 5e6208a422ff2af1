# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# Sourced by the autopkgtests: starts the installed socknotifyd on a private socket in $tmp and
# exports SOCKNOTIFY_SOCKET for the clients; the daemon ends with the test.
tmp="${AUTOPKGTEST_TMP:-$(mktemp -d)}"
SOCKNOTIFY_SOCKET="$tmp/socknotify.sock"
export SOCKNOTIFY_SOCKET
/usr/sbin/socknotifyd --socket="$SOCKNOTIFY_SOCKET" --config= &
daemon_pid=$!
trap 'kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true' EXIT
i=0
while [ ! -S "$SOCKNOTIFY_SOCKET" ]; do
        kill -0 "$daemon_pid" || { echo "socknotifyd did not start" >&2; exit 1; }
        [ $i -lt 300 ] || { echo "socknotifyd made no socket in 30 s" >&2; exit 1; }
        sleep 0.1
        i=$((i + 1))
done
