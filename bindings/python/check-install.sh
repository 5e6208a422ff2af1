#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# The Python README's install commands work as written: a new venv with the system's packages
# (python3 -m venv --system-site-packages, which sees Debian's python3-wheel and
# python3-setuptools), then pip install --no-build-isolation bindings/python, offline.  The
# package then imports from the venv with this build's version, and the source tree is left
# as it was: no build/, no socknotify.egg-info, no __pycache__ (setup.py builds elsewhere).
# Skipped (exit 77) without a python3 that has venv, ensurepip, wheel and setuptools; on
# Debian: apt-get install python3-venv python3-wheel python3-setuptools.
set -eu
src="${SN_SRCDIR:-.}"
build="${SN_BUILDDIR:-.}"
py_modules="venv ensurepip wheel setuptools"
py_skip="no python3 (>= 3.9) with venv, wheel and setuptools; on Debian: apt-get install python3-venv python3-wheel python3-setuptools"
. "$src/tests/kit/find-python.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# configure writes socknotify/_version.py into the build tree: in a build outside the source
# tree (make distcheck, whose source is read-only) the install is made from a copy that has it.
pydir="$src/bindings/python"
if [ ! -f "$pydir/socknotify/_version.py" ]; then
        mkdir "$work/src"
        cp -R "$pydir/." "$work/src/"
        chmod -R u+w "$work/src"
        cp "$build/bindings/python/socknotify/_version.py" "$work/src/socknotify/"
        pydir="$work/src"
fi
version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$pydir/socknotify/_version.py")
# make check -j runs the binding's other checks beside this one, in the same directory: their
# logs and results (*.log, *.trs) are not the install's.
listing() { (cd "$pydir" && find . ! -name '*.log' ! -name '*.trs' | LC_ALL=C sort); }
listing >"$work/before"
fail=0
# The pip commands of bindings/python/README.md, as written; nothing from the network.
if ! "$py" -m venv --system-site-packages "$work/venv" >"$work/out" 2>&1 ||
   ! PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
        "$work/venv/bin/pip" install --no-build-isolation "$pydir" >>"$work/out" 2>&1; then
        cat "$work/out"
        echo "FAIL: python3 -m venv --system-site-packages; pip install --no-build-isolation"
        fail=1
else
        tail -n 1 "$work/out"
        got=$(cd "$work" && "$work/venv/bin/python" -c \
                'import socknotify; print(socknotify.__version__, socknotify.__file__)')
        case "$got" in
        "$version $work/venv/"*) echo "PASS: the venv imports socknotify $got" ;;
        *)
                echo "FAIL: the venv's socknotify is '$got', not version $version from the venv"
                fail=1
                ;;
        esac
fi
listing >"$work/after"
if diff "$work/before" "$work/after" >"$work/diff"; then
        echo "PASS: the source tree is left as it was"
else
        echo "FAIL: the install left files in $pydir:"
        sed -n 's/^> /  /p' "$work/diff"
        fail=1
fi
exit $fail
