#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
#
# The daemon's folders are layers, and calls point down only: a file may include the headers
# of its own layer and of the layers below it, never one above.  Bottom-up:
#
#   base      settings, the closer thread, counters, epoll_ctl batching: knows no daemon object
#   state     the journal and the descriptor boxes: the daemon's state, always current
#   objects   registry, registrations, ports and their waits and runners, users' accounting
#   restore   rebuilding everything from the journal (re-exec, stop, crash alike)
#   service   connections, control requests, the server, its loop and main()
#
# For every .c and .h under daemon/ this reads its #include "daemon/..." lines and fails,
# naming file and line, when one names a header of a higher layer, a header outside the
# layers' folders, or when a source file sits outside them.  An upward include that exists
# today and is known is listed in ALLOW below; an entry that no longer matches also fails, so
# that fixing one means deleting its line here.
#
#   tests/check-layers.sh            check the source tree (SN_SRCDIR, else this script's ..)
#   tests/check-layers.sh DIR        check DIR/daemon instead
#
# Run by make check, which first proves that the check can fail: it copies daemon/, adds an
# include of a service header to a base file and expects this script to reject the copy.
set -eu
src="${1:-${SN_SRCDIR:-$(dirname "$0")/..}}"

# folder -> rank, lowest first
RANKS="base 0
state 1
objects 2
restore 3
service 4"

# Known upward includes: "file included-header", to be removed as each is fixed.
ALLOW="
"

if [ ! -d "$src/daemon" ]; then
        echo "check-layers: no $src/daemon" >&2
        exit 2
fi

if [ -z "${1:-}" ] && [ -z "${SN_LAYERS_SELF:-}" ]; then
        # The check must be able to fail: a copy with one upward include is rejected.
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
        cp -R "$src/daemon" "$tmp/daemon"
        chmod -R u+w "$tmp/daemon"
        printf '#include "daemon/service/conn.h"\n' >> "$tmp/daemon/base/closer.c"
        if SN_LAYERS_SELF=1 "$0" "$tmp" > "$tmp/out" 2>&1; then
                echo "FAIL: check-layers accepts an upward include (base/closer.c -> service)"
                exit 1
        fi
        if ! grep -q '^daemon/base/closer.c:[0-9]*: includes daemon/service/conn.h' "$tmp/out"
        then
                echo "FAIL: check-layers did not name the upward include:"
                cat "$tmp/out"
                exit 1
        fi
        echo "PASS: check-layers rejects an upward include"
fi

cd "$src"
find daemon -type f \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort | while read -r f; do
        awk -v f="$f" -v ranks="$RANKS" -v allow="$ALLOW" '
        function rank(path,   parts) {
                split(path, parts, "/")
                if (parts[1] != "daemon" || !(parts[2] in r) || parts[4] != "")
                        return -1
                return r[parts[2]]
        }
        BEGIN {
                n = split(ranks, rl, "\n")
                for (i = 1; i <= n; i++) {
                        split(rl[i], kv, " ")
                        r[kv[1]] = kv[2]
                        folders = folders (i > 1 ? "," : "{") kv[1]
                }
                folders = folders "}"
                n = split(allow, al, "\n")
                for (i = 1; i <= n; i++)
                        if (al[i] != "")
                                ok[al[i]] = 1
                own = rank(f)
                bad = 0
                if (own < 0) {
                        printf "%s: not in a layer folder (daemon/%s/)\n", f, folders
                        bad = 1
                }
        }
        /^[ \t]*#[ \t]*include[ \t]*"daemon\// {
                inc = $0
                sub(/^[^"]*"/, "", inc)
                sub(/".*$/, "", inc)
                them = rank(inc)
                if (them < 0) {
                        printf "%s:%d: includes %s, which is in no layer folder\n", f, FNR, inc
                        bad = 1
                } else if (own >= 0 && them > own) {
                        if ((f " " inc) in ok)
                                seen[f " " inc] = 1
                        else {
                                printf "%s:%d: includes %s, a header of a higher layer\n",
                                       f, FNR, inc
                                bad = 1
                        }
                }
        }
        END {
                for (k in ok) {
                        split(k, kv, " ")
                        if (kv[1] == f && !(k in seen)) {
                                printf "%s: no longer includes %s: delete its line from " \
                                       "ALLOW in tests/check-layers.sh\n", f, kv[2]
                                bad = 1
                        }
                }
                exit bad
        }' "$f" || echo "$f" >> "${TMPDIR:-/tmp}/check-layers.$$"
done
if [ -e "${TMPDIR:-/tmp}/check-layers.$$" ]; then
        rm -f "${TMPDIR:-/tmp}/check-layers.$$"
        echo "FAIL: a daemon file includes a header of a higher layer (see above)"
        exit 1
fi
# An allowlisted file that is gone entirely is stale too.
for f in $(printf '%s\n' "$ALLOW" | awk 'NF { print $1 }' | sort -u); do
        if [ ! -e "$f" ]; then
                echo "$f: gone: delete its lines from ALLOW in tests/check-layers.sh"
                echo "FAIL: stale ALLOW entries"
                exit 1
        fi
done
echo "PASS: daemon/ includes point down the layers"
