# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# Sourced by the make check scripts that need Python (the binding kit, the Python binding's
# tests and type check): sets py to a python3 of at least 3.9 that can also import the modules
# named in py_modules (space-separated, optional), or skips the test (exit 77), printing
# py_skip (optional) as the reason.
py=""
for cand in "${PYTHON:-}" python3 /usr/bin/python3; do
        [ -n "$cand" ] || continue
        command -v "$cand" >/dev/null 2>&1 || continue
        if "$cand" -c "import sys
for m in '${py_modules:-}'.split(): __import__(m)
sys.exit(sys.version_info < (3, 9))" 2>/dev/null; then
                py=$cand
                break
        fi
done
if [ -z "$py" ]; then
        echo "SKIP: ${py_skip:-no python3 (>= 3.9) for the binding kit}"
        exit 77
fi
