#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# Runs the Python binding's pytest suite against the socknotifyd of this build tree (make check).
# Each test module starts its own daemon on a temporary socket (tests/conftest.py).  Skipped
# (exit 77) when no python3 with pytest is installed; fails when pytest collects no test.
# Ends with "N passed, M failed" for make check's summary.
set -u
src="${SN_SRCDIR:-.}"
build="${SN_BUILDDIR:-.}"
py_modules=pytest
py_skip="no python3 (>= 3.9) with pytest; on Debian: apt-get install python3-pytest"
. "$src/tests/kit/find-python.sh"
out=$(mktemp)
stage=""
trap 'rm -f "$out"; [ -z "$stage" ] || rm -rf "$stage"' EXIT
# configure writes socknotify/_version.py into the build tree: in a build outside the source
# tree (make distcheck), the package and its tests run from a copy that has it.
pydir="$src/bindings/python"
if [ ! -f "$pydir/socknotify/_version.py" ] && [ -f "$build/bindings/python/socknotify/_version.py" ]; then
        stage=$(mktemp -d)
        cp -R "$pydir/socknotify" "$pydir/tests" "$stage/"
        chmod -R u+w "$stage"
        cp "$build/bindings/python/socknotify/_version.py" "$stage/socknotify/"
        pydir=$stage
fi
SN_DAEMON="$build/daemon/socknotifyd" PYTHONDONTWRITEBYTECODE=1 \
        "$py" -m pytest -v -p no:cacheprovider --rootdir="$pydir" \
        "$pydir/tests" 2>&1 | tee "$out"
rc=$(sed -n 's/^==* \(.*\) in [0-9.]*s.*/\1/p' "$out" | tail -n 1)
passed=$(printf '%s\n' "$rc" | sed -n 's/.*\b\([0-9][0-9]*\) passed.*/\1/p')
failed=$(printf '%s\n' "$rc" | sed -n 's/.*\b\([0-9][0-9]*\) failed.*/\1/p')
errors=$(printf '%s\n' "$rc" | sed -n 's/.*\b\([0-9][0-9]*\) error.*/\1/p')
passed=${passed:-0}
failed=$(( ${failed:-0} + ${errors:-0} ))
echo "$passed passed, $failed failed"
if [ "$passed" -eq 0 ]; then
        echo "FAIL: pytest ran no test"
        exit 1
fi
[ "$failed" -eq 0 ] || exit 1
exit 0
