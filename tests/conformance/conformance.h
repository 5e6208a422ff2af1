/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * conformance.h - the conformance suite: one test per row of docs/semantics.md
 * section 2, one per rule of sections 3 and 4, and the everyday cases users hit.  Written
 * against the Win32-compatible API; every test runs in its own process against its own daemon.
 *
 * The list below is the one declaration of the suite: id, whether the row is a known divergence
 * from Windows (listed in docs/compatibility.md; the test asserts what socknotify does instead,
 * so it fails if the divergence disappears), and the behaviour it pins down.
 */
#pragma once

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/macro.h"
#include "socknotify/winsock.h"
#include "tests/helpers/daemon.h"

#define DIVERGES 1

#define CONFORMANCE_TESTS(X)                                                                       \
        X(row_01, 0, "registrations only (cc=0): applied, nothing dequeued, ERROR_SUCCESS")       \
        X(row_02, 0, "cc=0 with a timeout: call failure, nothing applied")                          \
        X(row_03, 0, "reg=0 with an array, or cc=0 with entries or count: call failure")            \
        X(row_04, DIVERGES, "cc>0 with NULL entries fails; an unwritable count pointer crashes")   \
        X(row_05, 0, "overlapping arrays: call failure")                                            \
        X(row_06, 0, "not a port: WSAEINVAL, nothing applied")                                     \
        X(row_07, 0, "a failed call changes nothing")                                               \
        X(row_08, 0, "after success every registrationResult is written, entries independent")      \
        X(row_09, 0, "not a socket: WSAENOTSOCK for that entry, the others apply")                  \
        X(row_10, DIVERGES, "no provider restriction: any kernel socket registers")                 \
        X(row_11, 0, "registrations apply first; the same call dequeues what they caused")          \
        X(row_12, 0, "WAIT_TIMEOUT with registrations applied")                                     \
        X(row_13, 0, "an operation with several bits or an unknown value: WSAEINVAL")               \
        X(row_14, 0, "OP_NONE changes nothing and succeeds")                                        \
        X(row_15, 0, "two entries for one socket apply in order")                                   \
        X(row_16, 0, "a signal to the waiting thread does not end the wait early")                  \
        X(row_17, 0, "timeout: WAIT_TIMEOUT and a count of 0")                                      \
        X(row_18, 0, "timeout 0 on an empty port returns at once with WAIT_TIMEOUT")                \
        X(row_19, 0, "INFINITE returns only when a packet arrives")                                  \
        X(row_20, 0, "a finite wait never ends before its timeout, in both transports")          \
        X(row_21, 0, "k queued, cc=m: min(k, m) entries at once")                                   \
        X(row_22, 0, "the count equals the entries written; nothing beyond is touched")             \
        X(row_23, 0, "PSN reports by return value and leaves the last error alone")                \
        X(row_24, 0, "ENABLE creates a registration with its key")                                  \
        X(row_25, 0, "ENABLE again overwrites filter and triggers")                                 \
        X(row_26, 0, "ENABLE again with another key keeps the first key")                           \
        X(row_27, 0, "a fired ONESHOT re-enabled reports a holding condition in the same call")     \
        X(row_28, 0, "DISABLE: nothing new is queued, the registration is kept")                    \
        X(row_29, 0, "ENABLE after DISABLE resumes, holding conditions reported")                   \
        X(row_30, 0, "DISABLE/REMOVE without registration, or REMOVE again after its packet")       \
        X(row_31, 0, "REMOVE: result 0, one REMOVE packet with the key, then nothing")              \
        X(row_32, 0, "DISABLE and REMOVE ignore filter and triggers")                               \
        X(row_33, 0, "after the REMOVE packet, ENABLE creates a fresh registration")                \
        X(row_34, 0, "LEVEL with EDGE, or neither: WSAEINVAL")                                      \
        X(row_35, 0, "ONESHOT with PERSISTENT: WSAEINVAL")                                          \
        X(row_36, 0, "LEVEL or EDGE alone means PERSISTENT")                                        \
        X(row_37, 0, "LEVEL+PERSISTENT repeats while the condition holds, not after")               \
        X(row_38, 0, "LEVEL+ONESHOT: one packet disables the whole registration")                   \
        X(row_39, 0, "EDGE: a condition holding at ENABLE is not reported")                         \
        X(row_40, DIVERGES, "EDGE: new data on a socket not drained gives another IN")             \
        X(row_41, 0, "EDGE+ONESHOT: one packet, then a new transition after ENABLE")                \
        X(row_42, 0, "LEVEL+ONESHOT with several threads: one change reaches one thread")           \
        X(row_43, 0, "a notification: key, event mask in the byte count, NULL overlapped")          \
        X(row_44, 0, "only filtered IN/OUT/HANGUP; ERR whatever the filter")                        \
        X(row_45, 0, "filter NONE is legal and can still report ERR")                               \
        X(row_46, 0, "filter bits outside 0x07: WSAEINVAL")                                         \
        X(row_47, 0, "a listening socket reports IN for a pending connection")                      \
        X(row_48, 0, "IN means recv will not block, OUT send; a connect completing gives OUT")      \
        X(row_49, 0, "a refused connect gives ERR alone")                                     \
        X(row_50, 0, "HANGUP on the peer's FIN and on its RST")                                     \
        X(row_51, 0, "UDP never reports HANGUP")                                                    \
        X(case_shutdown_receive, 0, "a local shutdown(SD_RECEIVE) is no HANGUP; the peer's close then is") \
        X(case_shutdown_both, 0, "a local shutdown(SD_BOTH): no HANGUP until the peer's FIN")     \
        X(case_shutdown_then_reset, 0, "after a local shutdown the peer's close or reset is a HANGUP") \
        X(case_shutdown_reexec, 0, "a local shutdown stays no HANGUP across a re-exec and a new trigger") \
        X(case_unix_shutdown_receive, DIVERGES, "Unix stream: a local shutdown(SD_RECEIVE) reports HANGUP") \
        X(row_52, 0, "after ERR a non-blocking recv gives WSAECONNRESET")                           \
        X(row_53, 0, "SocketNotificationRetrieveEvents returns the byte count of any entry")        \
        X(row_54, 0, "at most one packet per registration; IN and OUT share it")                    \
        X(row_55, 0, "posted packets leave in order")                                               \
        X(row_56, 0, "REMOVE is the last packet for its key")                                       \
        X(row_57, 0, "a REMOVE packet can carry IN; consumers test the bit")                        \
        X(row_58, 0, "LEVEL+ONESHOT IN|OUT: an OUT packet uses it up, IN waits for ENABLE")        \
        X(row_59, 0, "closesocket removes the registration without a REMOVE packet")                \
        X(row_60, 0, "closesocket: packets not yet dequeued are discarded (our choice)")            \
        X(row_61, 0, "after the REMOVE packet nothing more comes for its key")                      \
        X(row_62, 0, "closing a duplicate leaves the registration")                                  \
        X(row_63, 0, "a key reused after REMOVE only sees the new registration")                    \
        X(row_64, 0, "ENABLE on a second port: ERROR_ALREADY_EXISTS, the first unchanged")          \
        X(row_65, 0, "after the REMOVE packet the socket may go to another port")                   \
        X(row_66, 0, "a port belongs to the process that created it")                               \
        X(row_67, 0, "several threads on one port: every packet to exactly one")                    \
        X(row_68, 0, "PostQueuedCompletionStatus values come back exactly, mixed with sockets")     \
        X(row_69, 0, "a posted 0x80 looks like REMOVE; only the key tells them apart")              \
        X(row_70, 0, "GQCS returns TRUE, mask and key for a notification")                          \
        X(row_71, 0, "CreateIoCompletionPort: new port; ExistingCompletionPort must be NULL")      \
        X(row_72, 0, "concurrency: at the limit waiters stay parked; a running caller goes on")    \
        X(case_blocked_thread_frees_slot, 0, "a running thread that blocks frees its slot")       \
        X(case_blocked_thread_counts_again, 0, "a blocked thread that runs again counts again")    \
        X(row_73, 0, "waiters LIFO, packets FIFO, one caller takes up to its count")                \
        X(row_74, 0, "one thread may wait on one port and then another")                            \
        X(row_75, 0, "GQCS timeout: FALSE, NULL overlapped, WAIT_TIMEOUT; posted NULL: TRUE")       \
        X(row_76, DIVERGES, "GQCSEx: WAIT_TIMEOUT; fAlertable never gives WAIT_IO_COMPLETION")     \
        X(row_77, 0, "CloseHandle wakes waiters with ERROR_ABANDONED_WAIT_0; then INVALID_HANDLE")  \
        X(row_78, 0, "closing the port discards its queued packets")                                \
        X(row_79, 0, "PQCS: TRUE on a port, ERROR_INVALID_HANDLE after close")                      \
        X(row_80, 0, "CloseHandle under a blocked PSN: WSAEINTR, sockets freed")                   \
        X(rule_01, 0, "timeouts are WAIT_TIMEOUT (258), never ERROR_TIMEOUT")                       \
        X(rule_02, 0, "LEVEL or EDGE without ONESHOT/PERSISTENT is PERSISTENT")                     \
        X(rule_03, 0, "no DISABLE event bit; DISABLE queues nothing")                               \
        X(rule_04, 0, "re-ENABLE overwrites, re-arms, keeps the key")                               \
        X(rule_05, 0, "filter NONE: only ERR and REMOVE")                                           \
        X(rule_06, 0, "HANGUP with IN for streams; never for datagrams")                            \
        X(rule_07, 0, "level-triggered ERR and HANGUP repeat")                                      \
        X(rule_08, 0, "REMOVE while pending: success, no second packet; unknown: ERROR_NOT_FOUND")  \
        X(rule_09, 0, "CloseHandle: registrations dropped, copies released, waiters 735")           \
        X(rule_10, 0, "per-entry and call-level codes")                                             \
        X(rule_11, 0, "ONESHOT disarms when queued: later events do not merge or go elsewhere")     \
        X(rule_12, 0, "any socket type registers; a non-socket is WSAENOTSOCK")                     \
        X(rule_13, 0, "DISABLE/REMOVE through another port: ERROR_NOT_FOUND")                       \
        X(rule_14, 0, "a never-connected stream socket reports no OUT or HANGUP")                   \
        X(rule_15, 0, "EDGE: the exact rule of docs/compatibility.md")                              \
        X(rule_16, 0, "a 0 ms dequeue sees what began before it: the peer's FIN, every trigger")   \
        X(L1, DIVERGES, "closesocket drops the daemon's copy; plain close keeps the connection")           \
        X(L2, 0, "the socket, not the fd number, is the registration")                              \
        X(L3, 0, "a killed client leaves nothing behind; its peers see EOF")                        \
        X(L4, DIVERGES, "bounded memory: one packet per registration, a posted bound")                     \
        X(L5, 0, "another client's registrations cannot be touched")                                \
        X(L6, 0, "garbage in: an error reply, nothing lost, others unaffected")                     \
        X(L7, 0, "handoff: a lingering port outlives its killed process; a successor takes over")   \
        X(case_unix, 0, "Unix stream, datagram and seqpacket sockets")                              \
        X(case_peer_sends_and_closes, 0, "IN then HANGUP, the data still readable")                 \
        X(case_send_buffer, 0, "OUT stops when the send buffer fills and comes back")               \
        X(case_two_fds, 0, "one socket through two descriptors is one registration")              \
        X(case_edge_fin, 0, "EDGE: the peer's FIN gives IN|HANGUP, not the OUT that held")        \
        X(case_edge_out, 0, "EDGE: space after a full send buffer gives OUT alone")               \
        X(case_edge_connect, 0, "EDGE before connect: OUT when it completes, then IN alone")      \
        X(case_edge_descriptors, 0, "EDGE with OUT and IN/HANGUP holds two descriptors, LEVEL one") \
        X(case_edge_quota, 0, "the EDGE duplicate counts against the user's socket quota")       \
        X(case_edge_reexec, 0, "an EDGE OUT side survives a re-exec of the daemon")                \
        X(case_edge_local_shutdown, DIVERGES, "EDGE: a local shutdown(SD_SEND) reports OUT again") \
        X(case_edge_reset_unread, DIVERGES, "EDGE: a reset with unread data reports IN again")    \
        X(case_connect_zero_timeout, 0, "registered before connect: the next 0 ms dequeue has OUT") \
        X(case_closesocket_not_socket, 0, "closesocket on a non-socket: WSAENOTSOCK, left open")   \
        X(case_send_no_sigpipe, 0, "send to a reset peer: WSAECONNRESET, no SIGPIPE")             \
        X(case_so_error_winsock, 0, "getsockopt(SO_ERROR) after a refused connect: WSAECONNREFUSED") \
        X(case_so_error_resets_last_error, 0, "a successful getsockopt(SO_ERROR) resets the last error") \
        X(case_udp_port_unreachable, 0, "UDP port unreachable: recv fails with WSAECONNRESET")    \
        X(case_wsastartup_versions, 0, "WSAStartup: 1.0 to 2.2 served as asked, above as 2.2")    \
        X(case_wsacleanup_sockets, DIVERGES, "the last WSACleanup leaves sockets open")           \
        X(case_dequeue_many, 0, "one dequeue returns min(queued, requested), past one message")  \
        X(case_register_many, 0, "40,000 registrations in one call: each with its own result")   \
        X(case_wsasend_wsarecv, 0, "WSASend/WSARecv: gather, scatter, WSAECONNRESET, no SIGPIPE") \
        X(case_recv_msgsize, 0, "a datagram larger than the buffer: WSAEMSGSIZE")                 \
        X(case_iocp_socket_handle, DIVERGES, "CreateIoCompletionPort with a socket: ERROR_NOT_SUPPORTED") \
        X(case_exclusiveaddruse, 0, "SO_EXCLUSIVEADDRUSE: TRUE succeeds, binds stay exclusive")      \
        X(case_exclusiveaddruse_state, DIVERGES, "SO_EXCLUSIVEADDRUSE keeps no state: getsockopt says TRUE") \
        X(case_psn_bad_arguments, 0, "PSN argument failures: WSAEINVAL, nothing applied")          \
        X(case_psn_bad_port, 0, "PSN on a handle that is not an open port: WSAEINVAL")             \
        X(case_psn_closed_while_waiting, 0, "port closed under a waiting PSN: WSAEINTR")           \
        X(case_psn_no_memory, 0, "PSN without memory for its arrays: WSAENOBUFS")                  \
        X(case_psn_daemon_gone, 0, "PSN after the daemon died, no resume: WSAENETDOWN")            \
        X(case_psn_null_count, 0, "PSN with a NULL count: applied, entries written, no count")     \
        X(case_limit_ports, DIVERGES, "at most --max-ports ports per process: ERROR_NOT_ENOUGH_QUOTA") \
        X(case_limit_waits, DIVERGES, "at most --max-waits waiting calls per process")

#define CONF_DECLARE(id, div, text) void conf_##id(int _i);
CONFORMANCE_TESTS(CONF_DECLARE)

/* The fixture: a daemon of the test's own, WSAStartup done, one port open. */
extern struct test_daemon D;
extern HANDLE P;

/* Applies one registration on port p; the call must succeed; returns registrationResult. */
DWORD reg(HANDLE p, SOCKET s, uintptr_t key, UINT16 filter, UINT8 op, UINT8 trig);
/* Dequeues with GetQueuedCompletionStatusEx; returns the count, or 0 after a timeout. */
ULONG deq(HANDLE p, OVERLAPPED_ENTRY *e, ULONG n, DWORD ms);
/* Expects exactly one entry within 1 s, with key; returns its events. */
UINT32 one(HANDLE p, uintptr_t key);
/* Expects nothing within ms. */
void none(HANDLE p, DWORD ms);
/* OR of the events seen for key within ms (stops early once all of want are seen). */
UINT32 collect(HANDLE p, uintptr_t key, UINT32 want, int ms);
/* REMOVE, and dequeue until its packet. */
void remove_wait(HANDLE p, SOCKET s, uintptr_t key);
/* Number in the daemon's status document ("registrations", "waiters", "queued"...). */
long daemon_count(const char *field);
/* Waits until the daemon has n waiters. */
void wait_waiters(long n);
/* Drains a non-blocking socket. */
void drain(int fd);
/* Closes fd so that its peer gets a reset (SO_LINGER 0). */
void reset_peer(int fd);

/* A thread in GetQueuedCompletionStatus(port, ms): what it got, its last error, and when. */
struct gq {
        HANDLE port;
        DWORD ms;
        BOOL ok;
        ULONG_PTR key;
        DWORD bytes;
        DWORD error;
        LPOVERLAPPED ov;
        long long returned;
};
void *gq_thread(void *arg);
/* A do-nothing signal handler, and a thread that sends SIGUSR1 to *(pthread_t *)arg after
 * 50 ms: a signal in the middle of a wait. */
void on_signal(int sig);
void *kick(void *arg);

#define LEVEL SOCK_NOTIFY_TRIGGER_LEVEL
#define EDGE SOCK_NOTIFY_TRIGGER_EDGE
#define ONESHOT SOCK_NOTIFY_TRIGGER_ONESHOT
#define PERSISTENT SOCK_NOTIFY_TRIGGER_PERSISTENT
#define F_IN SOCK_NOTIFY_REGISTER_EVENT_IN
#define F_OUT SOCK_NOTIFY_REGISTER_EVENT_OUT
#define F_HUP SOCK_NOTIFY_REGISTER_EVENT_HANGUP
#define E_IN SOCK_NOTIFY_EVENT_IN
#define E_OUT SOCK_NOTIFY_EVENT_OUT
#define E_HUP SOCK_NOTIFY_EVENT_HANGUP
#define E_ERR SOCK_NOTIFY_EVENT_ERR
#define E_REMOVE SOCK_NOTIFY_EVENT_REMOVE
#define OP_ENABLE SOCK_NOTIFY_OP_ENABLE
#define OP_DISABLE SOCK_NOTIFY_OP_DISABLE
#define OP_REMOVE SOCK_NOTIFY_OP_REMOVE
