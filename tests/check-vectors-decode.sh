#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# Decodes the bytes of every checked-in test vector (proto/vectors/) with the codec and fails
# when the result differs from the vector's "decoded" form, when the codec's framing check
# disagrees with the vector's "expect", or when a message type has no valid vector.  Unlike
# check-vectors.sh, this holds even when the generator changed together with the codec.
set -eu
"${SN_BUILDDIR:-.}/proto/gen-vectors" --check "${SN_SRCDIR:-.}/proto/vectors"
