/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * handoff.h - test helper for the handoff suites: a predecessor process that dies holding a
 * lingering port.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/*
 * Forks a predecessor that connects to the daemon at path, creates port name with linger_ms,
 * registers fds[0..n-1] (ENABLE, filter, trigger) with keys base+i, posts one packet (key 7,
 * 70 bytes, overlapped 0x77) when post is set, and is then killed with SIGKILL, nothing closed
 * on its side.  Returns once the daemon freed its connection (status "connections").  Fails the
 * running test when any step of the predecessor failed.
 */
void handoff_predecessor(const char *path, const char *name, uint32_t linger_ms, const int *fds,
                         int n, uint64_t base, uint16_t filter, uint8_t trigger, bool post);
