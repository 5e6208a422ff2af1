/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * counters.h - what the daemon counts for the status document (status.c): messages, calls,
 * failures by errno.  Knows no daemon object.
 */
#pragma once

#include <stdint.h>

#define SN_ERRNO_MAX 160
/* Refusals are counted per limit, by the limit's index in settings_limit_options (at most this
 * many; server_count_refusal() checks). */
#define SN_COUNTED_LIMITS 32
struct counters {
        uint64_t connections_total;
        uint64_t messages_in;
        uint64_t doorbells; /* wake-ups by a client's ring doorbell */
        uint64_t doorbell_mutes; /* doorbells muted for ringing for nothing */
        uint64_t messages_out;
        uint64_t registrations_applied;
        uint64_t notifications;
        uint64_t posted_delivered;
        uint64_t protocol_violations;
        uint64_t reexecs;           /* re-executions in place since the first start */
        uint64_t thread_reads;      /* /proc files read for client threads' states (port.c) */
        uint64_t restores;          /* starts that took over a previous daemon's clients (a
                                     * restart or a crash, through the descriptor store) */
        uint64_t refusals[SN_COUNTED_LIMITS]; /* requests refused by each limit */
        uint64_t call_errors[SN_ERRNO_MAX];  /* call-level failures by errno */
        uint64_t entry_errors[SN_ERRNO_MAX]; /* per-entry failures by errno */
};
