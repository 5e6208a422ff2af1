#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# Fails when proto/gen-vectors, run now, writes other test vectors than the checked-in ones in
# proto/vectors/ (byte for byte, and the same set of files).  The checked-in files are the
# reference: a change of an encoder or of a vector shows here.
set -eu
src="${SN_SRCDIR:-.}/proto/vectors"
gen="${SN_BUILDDIR:-.}/proto/gen-vectors"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gen" --write "$tmp"
if diff -r -u -x README.md "$src" "$tmp"; then
        echo "PASS: $(ls "$tmp" | wc -l) vector files match proto/vectors/"
else
        echo "FAIL: the vectors written now differ from proto/vectors/ (a wire change needs a"
        echo "      new protocol version; a new vector: $gen --write proto/vectors)"
        exit 1
fi
