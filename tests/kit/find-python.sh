# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# Sourced by the kit's make check scripts: sets py to a python3 of at least 3.9, or skips the
# test (exit 77) when there is none.
py=""
for cand in "${PYTHON:-}" python3 /usr/bin/python3; do
        [ -n "$cand" ] || continue
        command -v "$cand" >/dev/null 2>&1 || continue
        if "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
                py=$cand
                break
        fi
done
if [ -z "$py" ]; then
        echo "SKIP: no python3 (>= 3.9) for the binding kit"
        exit 77
fi
