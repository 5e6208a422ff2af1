#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# run-regressions.sh - make check's fuzz regression test.
#
# Runs every crash reproducer in tests/fuzz/regressions/ through the fuzz target it was found
# with (decoder-* through tests/fuzz/regress-decoder, daemon-* through tests/fuzz/regress-daemon,
# ring-* through tests/fuzz/regress-ring: the targets built with the project's compiler and a
# plain main()), each in its own process, then the seed inputs that tests/fuzz/gen-corpus writes.  An input fails when its process
# does not exit 0 (an abort from the target's invariants, a sanitizer report under
# --enable-sanitizers, a crash) or runs longer than 60 s.
#
# tests/fuzz/regressions/KNOWN-FAILING names reproducers of defects not fixed yet (one name per
# line, # comments): they are run and reported as XFAIL or XPASS, without failing the test.
# Fixing a defect means deleting its line, so that its reproducer guards the fix from then on.
set -u
b=${SN_BUILDDIR:-.}
s=${SN_SRCDIR:-.}
dir=$s/tests/fuzz/regressions
known=$dir/KNOWN-FAILING
passed=0
failed=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

is_known() {
        test -f "$known" && grep -v '^#' "$known" | grep -qx "$1"
}

run() { # name driver input
        name=$1
        if timeout 60 "$2" "$3" >"$tmp/out" 2>&1; then
                if is_known "$name"; then
                        echo "XPASS: $name (listed in KNOWN-FAILING: fixed? then delete its line)"
                else
                        echo "PASS: $name"
                fi
                passed=$((passed + 1))
        else
                rc=$?
                if is_known "$name"; then
                        echo "XFAIL: $name (exit $rc; a known defect, see KNOWN-FAILING)"
                        passed=$((passed + 1))
                else
                        echo "FAIL: $name (exit $rc)"
                        tail -n 40 "$tmp/out" | sed 's/^/    /'
                        failed=$((failed + 1))
                fi
        fi
}

for f in "$dir"/decoder-* "$dir"/daemon-* "$dir"/ring-*; do
        test -f "$f" || continue
        name=$(basename "$f")
        case $name in
        decoder-*) run "$name" "$b/tests/fuzz/regress-decoder" "$f" ;;
        ring-*) run "$name" "$b/tests/fuzz/regress-ring" "$f" ;;
        *) run "$name" "$b/tests/fuzz/regress-daemon" "$f" ;;
        esac
done

# The seeds are valid sessions: each must leave the daemon as it found it.
"$b/tests/fuzz/gen-corpus" "$tmp" || { echo "FAIL: gen-corpus"; exit 1; }
for f in "$tmp"/corpus-decoder/*; do
        run "seed decoder/$(basename "$f")" "$b/tests/fuzz/regress-decoder" "$f"
done
for f in "$tmp"/corpus-daemon/*; do
        run "seed daemon/$(basename "$f")" "$b/tests/fuzz/regress-daemon" "$f"
done
for f in "$tmp"/corpus-ring/*; do
        run "seed ring/$(basename "$f")" "$b/tests/fuzz/regress-ring" "$f"
done

echo "$passed passed, $failed failed"
test "$failed" -eq 0
