/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * fuzz.h - the libFuzzer entry points every target in tests/fuzz defines.
 *
 * The same sources are linked either with libFuzzer (clang -fsanitize=fuzzer, `make fuzz`) or
 * with tests/fuzz/driver.c, a plain main() that runs the files named on its command line
 * through the target once each (the regression tests of `make check`).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Runs one input.  Returns 0; a crash or abort() is a finding. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional one-time set-up (a target that needs none does not define it). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
