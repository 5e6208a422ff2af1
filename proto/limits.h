/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * limits.h - the numbers by which LIMIT_INFO_REPLY names the daemon's limits.
 *
 * One row per limit that can refuse a request: its number on the wire (never reused), its name
 * (the option and configuration key of socknotifyd(8)), and what it bounds (the scope).  The
 * daemon maps the name it logs a refusal with to the number; a client maps the number back to
 * the name, and prints a number it does not know (from a newer daemon) as a number.
 */
#pragma once

#include <stdint.h>
#include <string.h>

/* What a limit counts: one connection's, one port's, one user's, all users' but root's and the
 * daemon's own together, the daemon's, or the value of one request. */
#define SN_PROTO_LIMIT_SCOPE_CONNECTION 1u
#define SN_PROTO_LIMIT_SCOPE_PORT 2u
#define SN_PROTO_LIMIT_SCOPE_USER 3u
#define SN_PROTO_LIMIT_SCOPE_UNPRIVILEGED 4u
#define SN_PROTO_LIMIT_SCOPE_DAEMON 5u
#define SN_PROTO_LIMIT_SCOPE_REQUEST 6u

/* L(number, name, scope) */
#define SN_LIMITS(L)                                                                               \
        L(1, "max-ports", CONNECTION)                                                              \
        L(2, "max-registrations", PORT)                                                            \
        L(3, "max-posted", PORT)                                                                   \
        L(4, "max-waits", CONNECTION)                                                              \
        L(5, "max-connections", DAEMON)                                                            \
        L(6, "max-output", CONNECTION)                                                             \
        L(7, "max-sockets-per-user", USER)                                                         \
        L(8, "max-connections-per-user", USER)                                                     \
        L(9, "max-ports-per-user", USER)                                                           \
        L(10, "max-waits-per-user", USER)                                                          \
        L(11, "max-posted-per-user", USER)                                                         \
        L(12, "max-staged-per-user", USER)                                                         \
        L(13, "max-output-per-user", USER)                                                         \
        L(14, "max-linger", REQUEST)                                                               \
        L(15, "reserve-fds", UNPRIVILEGED)                                                         \
        L(16, "reserve-connections", UNPRIVILEGED)                                                 \
        L(17, "max-output-unprivileged", UNPRIVILEGED)                                             \
        L(18, "max-posted-unprivileged", UNPRIVILEGED)                                             \
        L(19, "max-staged-unprivileged", UNPRIVILEGED)                                             \
        L(20, "max-waits-unprivileged", UNPRIVILEGED)

/* The number of the limit called name, or 0 (not in the table). */
static inline uint16_t sn_limit_number(const char *name)
{
#define SN_LIMIT_NUMBER(n, s, scope)                                                               \
        if (!strcmp(name, s))                                                                      \
                return n;
        SN_LIMITS(SN_LIMIT_NUMBER)
#undef SN_LIMIT_NUMBER
        return 0;
}

/* The name of limit number n, or NULL (unknown). */
static inline const char *sn_limit_name_of(uint32_t n)
{
#define SN_LIMIT_NAME(num, s, scope)                                                               \
        if (n == num)                                                                              \
                return s;
        SN_LIMITS(SN_LIMIT_NAME)
#undef SN_LIMIT_NAME
        return NULL;
}

/* The scope of limit number n, or 0 (unknown). */
static inline uint16_t sn_limit_scope_of(uint32_t n)
{
#define SN_LIMIT_SCOPE(num, s, scope)                                                              \
        if (n == num)                                                                              \
                return SN_PROTO_LIMIT_SCOPE_##scope;
        SN_LIMITS(SN_LIMIT_SCOPE)
#undef SN_LIMIT_SCOPE
        return 0;
}
