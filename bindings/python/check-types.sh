#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# The Python package's type hints hold: mypy --strict on bindings/python/socknotify (the
# package ships py.typed, so programs that use it are checked against these hints).  Skipped
# (exit 77) without mypy; on Debian: apt-get install python3-mypy.
set -eu
src="${SN_SRCDIR:-.}"
build="${SN_BUILDDIR:-.}"
py_modules=mypy
py_skip="no python3 (>= 3.9) with mypy; on Debian: apt-get install python3-mypy"
. "$src/tests/kit/find-python.sh"
# The package as installed: its sources and the _version.py configure wrote.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp -R "$src/bindings/python/socknotify" "$stage/"
chmod -R u+w "$stage"
rm -rf "$stage/socknotify/__pycache__"
cp "$build/bindings/python/socknotify/_version.py" "$stage/socknotify/"
cd "$stage"
if "$py" -m mypy --strict --no-incremental --cache-dir=/dev/null socknotify; then
        echo "PASS: mypy --strict socknotify"
else
        echo "FAIL: mypy --strict socknotify"
        exit 1
fi
