/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * socknotify/winsock.h - Win32-compatible names for socket state notifications on Linux.
 *
 * Types, structure layouts and constants with the names, field names, widths and values of the
 * Windows SDK (winsock2.h, minwinbase.h, winerror.h), so that Windows code using
 * ProcessSocketNotifications and I/O completion ports compiles with few changes.  The values
 * are checked against the native API at compile time.
 *
 * It also carries the names Windows code around these calls usually needs (integer, string and
 * address types, WSAE and ERROR codes, SAL annotations, memory and word macros, WSAPoll,
 * WSASend/WSARecv without overlapped I/O) and defines _WINSOCK2API_ and _WINSOCKAPI_ as Windows'
 * own headers do.  send, sendto, sendmsg, recv, recvfrom and getsockopt become function-like
 * macros giving Winsock's behaviour (no SIGPIPE, Winsock error meanings), as does setsockopt;
 * see below.
 *
 * The functions are thin wrappers over the native API (<socknotify.h>): the library exports
 * them as sn_w32_*, and the Windows names below are static inline functions, so they exist only
 * where this header is included.  The first call connects to socknotifyd ($SOCKNOTIFY_SOCKET or
 * the default path).  Every difference from Windows is listed in socknotify-winsock(3).
 */
#pragma once

/* Windows' own headers define these; shims that test them ("is winsock2.h in?") then know the
 * Winsock names are available. */
#ifndef _WINSOCK2API_
#define _WINSOCK2API_
#endif
#ifndef _WINSOCKAPI_
#define _WINSOCKAPI_
#endif

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <stddef.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <wchar.h>
/* What winsock2.h brings along on Windows: addresses, protocols and conversions. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netdb.h>

#include <socknotify.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void *HANDLE;
typedef uintptr_t SOCKET;
typedef uint32_t DWORD;
typedef uint8_t UINT8;
typedef uint16_t UINT16;
typedef uint32_t UINT32;
typedef UINT8 *PUINT8;
typedef UINT16 *PUINT16;
typedef UINT32 *PUINT32;
typedef uint32_t ULONG;
typedef uintptr_t ULONG_PTR;
typedef ULONG_PTR *PULONG_PTR;
typedef ULONG *PULONG;
typedef DWORD *LPDWORD;
typedef void *PVOID;
typedef void *LPVOID;
typedef int BOOL;
typedef uint8_t BOOLEAN;
typedef uint16_t WORD;
typedef char CHAR;
typedef uint8_t BYTE;
typedef BYTE *PBYTE, *LPBYTE;
typedef unsigned char UCHAR;
typedef UCHAR *PUCHAR;
typedef short SHORT;
typedef unsigned short USHORT;
typedef USHORT *PUSHORT;
typedef int INT;
typedef unsigned int UINT;
typedef INT *PINT, *LPINT;
typedef UINT *PUINT;
typedef int32_t LONG; /* 32 bits on Windows, whatever the pointer size */
typedef LONG *PLONG, *LPLONG;
typedef int32_t INT32;
typedef int64_t INT64, LONG64, LONGLONG;
typedef uint64_t UINT64, ULONG64, DWORD64, ULONGLONG;
typedef INT32 *PINT32;
typedef INT64 *PINT64;
typedef UINT64 *PUINT64;
typedef intptr_t INT_PTR, LONG_PTR;
typedef uintptr_t UINT_PTR, DWORD_PTR;
typedef size_t SIZE_T;
typedef ptrdiff_t SSIZE_T;
typedef BOOL *PBOOL, *LPBOOL;
typedef WORD *PWORD, *LPWORD;
typedef DWORD *PDWORD;
typedef CHAR *PCHAR, *LPSTR, *PSTR;
typedef const CHAR *LPCSTR, *PCSTR;
typedef wchar_t WCHAR; /* 32 bits on Linux, 16 on Windows */
typedef WCHAR *PWCHAR, *LPWSTR, *PWSTR;
typedef const WCHAR *LPCWSTR, *PCWSTR;
typedef const void *LPCVOID;
typedef HANDLE *PHANDLE, *LPHANDLE;
typedef SOCKET *PSOCKET, *LPSOCKET;
typedef USHORT ADDRESS_FAMILY;
typedef struct sockaddr SOCKADDR, *PSOCKADDR, *LPSOCKADDR;
typedef struct sockaddr_in SOCKADDR_IN, *PSOCKADDR_IN, *LPSOCKADDR_IN;
typedef struct sockaddr_in6 SOCKADDR_IN6, *PSOCKADDR_IN6, *LPSOCKADDR_IN6;
typedef struct sockaddr_storage SOCKADDR_STORAGE, *PSOCKADDR_STORAGE, *LPSOCKADDR_STORAGE;
typedef struct in_addr IN_ADDR, *PIN_ADDR, *LPIN_ADDR;
typedef struct in6_addr IN6_ADDR, *PIN6_ADDR, *LPIN6_ADDR;
typedef struct linger LINGER, *PLINGER, *LPLINGER;
typedef struct timeval TIMEVAL, *PTIMEVAL, *LPTIMEVAL;
typedef fd_set FD_SET, *PFD_SET, *LPFD_SET;
#if defined(__USE_XOPEN2K) || defined(__cplusplus)
/* ws2tcpip.h's names for getaddrinfo(3) results (POSIX: not under strict ISO C). */
typedef struct addrinfo ADDRINFOA, *PADDRINFOA;
#endif
#if !defined(__USE_MISC) && !defined(__cplusplus)
/* BSD names that <sys/types.h> only declares outside strict ISO C; Winsock code uses them. */
typedef unsigned char u_char;
typedef unsigned short u_short;
typedef unsigned int u_int;
typedef unsigned long u_long;
#endif
#ifndef VOID
#define VOID void
#endif
#ifndef CONST
#define CONST const
#endif
#define WINAPI
#define WSAAPI
#define CALLBACK
#define APIENTRY
#define WINAPIV
/* Windows' FORCEINLINE is __forceinline: it says nothing of linkage, so Windows code writes
 * "static FORCEINLINE" or "FORCEINLINE" alone.  In C a FORCEINLINE function without static is an
 * inline definition (C99): give it static, as such code usually does, if its address is taken. */
#ifndef FORCEINLINE
#define FORCEINLINE __inline__ __attribute__((__always_inline__))
#endif
#ifndef UNREFERENCED_PARAMETER
#define UNREFERENCED_PARAMETER(P) ((void)(P))
#endif
#define DBG_UNREFERENCED_PARAMETER(P) ((void)(P))
#define DBG_UNREFERENCED_LOCAL_VARIABLE(V) ((void)(V))

/* SAL annotations: documentation for Microsoft's analyser, nothing to the compiler. */
#ifndef _In_
#define _In_
#define _In_opt_
#define _In_z_
#define _In_opt_z_
#define _In_reads_(n)
#define _In_reads_opt_(n)
#define _In_reads_bytes_(n)
#define _In_reads_bytes_opt_(n)
#define _Out_
#define _Out_opt_
#define _Out_writes_(n)
#define _Out_writes_opt_(n)
#define _Out_writes_bytes_(n)
#define _Out_writes_bytes_opt_(n)
#define _Out_writes_to_(n, c)
#define _Out_writes_bytes_to_(n, c)
#define _Out_range_(lo, hi)
#define _Inout_
#define _Inout_opt_
#define _Inout_updates_(n)
#define _Inout_updates_bytes_(n)
#define _Outptr_
#define _Outptr_opt_
#define _Outptr_result_maybenull_
#define _Outptr_opt_result_maybenull_
#define _Deref_out_
#define _Post_invalid_
#define _Post_ptr_invalid_
#define _Pre_
#define _Post_
#define _Ret_maybenull_
#define _Ret_notnull_
#define _Success_(expr)
#define _Must_inspect_result_
#define _Check_return_
#define _Reserved_
#define _Printf_format_string_
#define _Field_size_(n)
#define _Field_size_bytes_(n)
#define _Frees_ptr_
#define _Frees_ptr_opt_
#define _When_(cond, ann)
#define _Guarded_by_(lock)
#define _Requires_lock_held_(lock)
#define _Requires_lock_not_held_(lock)
#define _Acquires_exclusive_lock_(lock)
#define _Releases_exclusive_lock_(lock)
#define _Acquires_shared_lock_(lock)
#define _Releases_shared_lock_(lock)
#define _Analysis_assume_(expr)
#define _Use_decl_annotations_
#define _IRQL_requires_max_(level)
#endif

typedef struct _OVERLAPPED {
        ULONG_PTR Internal;
        ULONG_PTR InternalHigh;
        union {
                struct {
                        DWORD Offset;
                        DWORD OffsetHigh;
                };
                PVOID Pointer;
        };
        HANDLE hEvent;
} OVERLAPPED, *LPOVERLAPPED;

typedef struct _OVERLAPPED_ENTRY {
        ULONG_PTR lpCompletionKey;
        LPOVERLAPPED lpOverlapped;
        ULONG_PTR Internal;
        DWORD dwNumberOfBytesTransferred;
} OVERLAPPED_ENTRY, *LPOVERLAPPED_ENTRY;

typedef struct SOCK_NOTIFY_REGISTRATION {
        SOCKET socket;
        PVOID completionKey;
        UINT16 eventFilter;
        UINT8 operation;
        UINT8 triggerFlags;
        DWORD registrationResult;
} SOCK_NOTIFY_REGISTRATION;

#define WSADESCRIPTION_LEN 256
#define WSASYS_STATUS_LEN 128
typedef struct WSAData {
        WORD wVersion;
        WORD wHighVersion;
        unsigned short iMaxSockets;
        unsigned short iMaxUdpDg;
        char *lpVendorInfo;
        char szDescription[WSADESCRIPTION_LEN + 1];
        char szSystemStatus[WSASYS_STATUS_LEN + 1];
} WSADATA, *LPWSADATA;

#define MAKEWORD(low, high) ((WORD)(((uint8_t)(low)) | ((WORD)((uint8_t)(high))) << 8))
#define WINSOCK_VERSION MAKEWORD(2, 2)
#define SOCKET_ERROR (-1)
#define SD_RECEIVE 0x00
#define SD_SEND 0x01
#define SD_BOTH 0x02
/* Windows' value, built from the platform's SO_REUSEADDR as Windows builds it: negative, so it
 * names no Linux option.  setsockopt below understands it. */
#define SO_EXCLUSIVEADDRUSE ((int)(~SO_REUSEADDR))
#define ZeroMemory(p, n) memset((p), 0, (n))
#define CopyMemory(d, s, n) memcpy((d), (s), (n))
#define MoveMemory(d, s, n) memmove((d), (s), (n))
#define FillMemory(d, n, v) memset((d), (v), (n))
#define RtlZeroMemory ZeroMemory
#define RtlCopyMemory CopyMemory
#define RtlMoveMemory MoveMemory
#define RtlFillMemory FillMemory
#define SecureZeroMemory(p, n) sn_w32_secure_zero_memory((p), (n))
#define RTL_NUMBER_OF(a) (sizeof(a) / sizeof((a)[0]))
#define ARRAYSIZE(a) RTL_NUMBER_OF(a)
#ifndef _countof
#define _countof(a) RTL_NUMBER_OF(a)
#endif
#define LOBYTE(w) ((BYTE)(((DWORD_PTR)(w)) & 0xff))
#define HIBYTE(w) ((BYTE)((((DWORD_PTR)(w)) >> 8) & 0xff))
#define LOWORD(l) ((WORD)(((DWORD_PTR)(l)) & 0xffff))
#define HIWORD(l) ((WORD)((((DWORD_PTR)(l)) >> 16) & 0xffff))
#define MAKELONG(low, high) ((LONG)(((WORD)((DWORD_PTR)(low) & 0xffff)) |                          \
                                    ((DWORD)((WORD)((DWORD_PTR)(high) & 0xffff))) << 16))

#define INVALID_SOCKET ((SOCKET)~(uintptr_t)0)
#define INVALID_HANDLE_VALUE ((HANDLE)(intptr_t)-1)
#define INFINITE 0xFFFFFFFFu
#define WAIT_OBJECT_0 0x00000000L
#define WAIT_ABANDONED 0x00000080L
#define WAIT_ABANDONED_0 WAIT_ABANDONED
#define WAIT_FAILED ((DWORD)0xFFFFFFFF)
#define MAXDWORD 0xFFFFFFFFu
#define WSA_INFINITE INFINITE
#define WSA_WAIT_EVENT_0 WAIT_OBJECT_0
#define WSA_WAIT_FAILED WAIT_FAILED
#define WSA_WAIT_TIMEOUT WAIT_TIMEOUT
#define WSA_WAIT_IO_COMPLETION WAIT_IO_COMPLETION
#define WSA_MAXIMUM_WAIT_EVENTS 64
#ifndef TRUE
#define TRUE 1
#endif
#ifndef FALSE
#define FALSE 0
#endif

#define SOCK_NOTIFY_REGISTER_EVENT_NONE 0x00
#define SOCK_NOTIFY_REGISTER_EVENT_IN 0x01
#define SOCK_NOTIFY_REGISTER_EVENT_OUT 0x02
#define SOCK_NOTIFY_REGISTER_EVENT_HANGUP 0x04
#define SOCK_NOTIFY_REGISTER_EVENTS_ALL                                                            \
        (SOCK_NOTIFY_REGISTER_EVENT_IN | SOCK_NOTIFY_REGISTER_EVENT_OUT |                         \
         SOCK_NOTIFY_REGISTER_EVENT_HANGUP)

#define SOCK_NOTIFY_EVENT_IN SOCK_NOTIFY_REGISTER_EVENT_IN
#define SOCK_NOTIFY_EVENT_OUT SOCK_NOTIFY_REGISTER_EVENT_OUT
#define SOCK_NOTIFY_EVENT_HANGUP SOCK_NOTIFY_REGISTER_EVENT_HANGUP
#define SOCK_NOTIFY_EVENT_ERR 0x40
#define SOCK_NOTIFY_EVENT_REMOVE 0x80
#define SOCK_NOTIFY_EVENTS_ALL                                                                     \
        (SOCK_NOTIFY_REGISTER_EVENTS_ALL | SOCK_NOTIFY_EVENT_ERR | SOCK_NOTIFY_EVENT_REMOVE)

#define SOCK_NOTIFY_OP_NONE 0x00
#define SOCK_NOTIFY_OP_ENABLE 0x01
#define SOCK_NOTIFY_OP_DISABLE 0x02
#define SOCK_NOTIFY_OP_REMOVE 0x04

#define SOCK_NOTIFY_TRIGGER_ONESHOT 0x01
#define SOCK_NOTIFY_TRIGGER_PERSISTENT 0x02
#define SOCK_NOTIFY_TRIGGER_LEVEL 0x04
#define SOCK_NOTIFY_TRIGGER_EDGE 0x08
#define SOCK_NOTIFY_TRIGGER_ALL                                                                    \
        (SOCK_NOTIFY_TRIGGER_ONESHOT | SOCK_NOTIFY_TRIGGER_PERSISTENT | SOCK_NOTIFY_TRIGGER_LEVEL | \
         SOCK_NOTIFY_TRIGGER_EDGE)

#define ERROR_SUCCESS 0L
#define NO_ERROR 0L
#define ERROR_INVALID_FUNCTION 1L
#define ERROR_FILE_NOT_FOUND 2L
#define ERROR_ACCESS_DENIED 5L
#define ERROR_INVALID_HANDLE 6L
#define ERROR_NOT_ENOUGH_MEMORY 8L
#define ERROR_INVALID_DATA 13L
#define ERROR_OUTOFMEMORY 14L
#define ERROR_NOT_READY 21L
#define ERROR_GEN_FAILURE 31L
#define ERROR_HANDLE_EOF 38L
#define ERROR_NOT_SUPPORTED 50L
#define ERROR_NETNAME_DELETED 64L
#define ERROR_INVALID_PARAMETER 87L
#define ERROR_BROKEN_PIPE 109L
#define ERROR_SEM_TIMEOUT 121L
#define ERROR_INSUFFICIENT_BUFFER 122L
#define ERROR_ALREADY_EXISTS 183L
#define ERROR_MORE_DATA 234L
#define ERROR_NO_MORE_ITEMS 259L
#define WAIT_IO_COMPLETION 0xC0L
#define WAIT_TIMEOUT 258L
#define ERROR_ABANDONED_WAIT_0 735L
#define ERROR_OPERATION_ABORTED 995L
#define ERROR_IO_INCOMPLETE 996L
#define ERROR_IO_PENDING 997L
#define ERROR_NOACCESS 998L
#define ERROR_NOT_FOUND 1168L
#define ERROR_INVALID_NETNAME 1214L
#define ERROR_CANCELLED 1223L
#define ERROR_CONNECTION_REFUSED 1225L
#define ERROR_GRACEFUL_DISCONNECT 1226L
#define ERROR_ADDRESS_ALREADY_ASSOCIATED 1227L
#define ERROR_NETWORK_UNREACHABLE 1231L
#define ERROR_HOST_UNREACHABLE 1232L
#define ERROR_PROTOCOL_UNREACHABLE 1233L
#define ERROR_PORT_UNREACHABLE 1234L
#define ERROR_RETRY 1237L
#define ERROR_REQUEST_ABORTED 1235L
#define ERROR_CONNECTION_ABORTED 1236L
#define ERROR_CONNECTION_INVALID 1229L
#define ERROR_CONNECTION_ACTIVE 1230L
#define ERROR_UNIDENTIFIED_ERROR 1287L
#define ERROR_NO_SYSTEM_RESOURCES 1450L
#define ERROR_TIMEOUT 1460L
#define ERROR_INVALID_USER_BUFFER 1784L
#define ERROR_NOT_ENOUGH_QUOTA 1816L
#define WSABASEERR 10000L
#define WSAEINTR 10004L
#define WSAEBADF 10009L
#define WSAEACCES 10013L
#define WSAEFAULT 10014L
#define WSAEINVAL 10022L
#define WSAEMFILE 10024L
#define WSAEWOULDBLOCK 10035L
#define WSAEINPROGRESS 10036L
#define WSAEALREADY 10037L
#define WSAENOTSOCK 10038L
#define WSAEDESTADDRREQ 10039L
#define WSAEMSGSIZE 10040L
#define WSAEPROTOTYPE 10041L
#define WSAENOPROTOOPT 10042L
#define WSAEPROTONOSUPPORT 10043L
#define WSAESOCKTNOSUPPORT 10044L
#define WSAEOPNOTSUPP 10045L
#define WSAEPFNOSUPPORT 10046L
#define WSAEAFNOSUPPORT 10047L
#define WSAEADDRINUSE 10048L
#define WSAEADDRNOTAVAIL 10049L
#define WSAENETDOWN 10050L
#define WSAENETUNREACH 10051L
#define WSAENETRESET 10052L
#define WSAECONNABORTED 10053L
#define WSAECONNRESET 10054L
#define WSAENOBUFS 10055L
#define WSAEISCONN 10056L
#define WSAENOTCONN 10057L
#define WSAESHUTDOWN 10058L
#define WSAETOOMANYREFS 10059L
#define WSAETIMEDOUT 10060L
#define WSAECONNREFUSED 10061L
#define WSAELOOP 10062L
#define WSAENAMETOOLONG 10063L
#define WSAEHOSTDOWN 10064L
#define WSAEHOSTUNREACH 10065L
#define WSAENOTEMPTY 10066L
#define WSAEPROCLIM 10067L
#define WSAEUSERS 10068L
#define WSAEDQUOT 10069L
#define WSAESTALE 10070L
#define WSAEREMOTE 10071L
#define WSASYSNOTREADY 10091L
#define WSAVERNOTSUPPORTED 10092L
#define WSANOTINITIALISED 10093L
#define WSAEDISCON 10101L
#define WSAENOMORE 10102L
#define WSAECANCELLED 10103L
#define WSAEINVALIDPROCTABLE 10104L
#define WSAEINVALIDPROVIDER 10105L
#define WSAEPROVIDERFAILEDINIT 10106L
#define WSASYSCALLFAILURE 10107L
#define WSASERVICE_NOT_FOUND 10108L
#define WSATYPE_NOT_FOUND 10109L
#define WSA_E_NO_MORE 10110L
#define WSA_E_CANCELLED 10111L
#define WSAEREFUSED 10112L
#define WSAHOST_NOT_FOUND 11001L
#define WSATRY_AGAIN 11002L
#define WSANO_RECOVERY 11003L
#define WSANO_DATA 11004L
#define WSANO_ADDRESS WSANO_DATA
#define WSA_IO_PENDING ERROR_IO_PENDING
#define WSA_IO_INCOMPLETE ERROR_IO_INCOMPLETE
#define WSA_INVALID_HANDLE ERROR_INVALID_HANDLE
#define WSA_INVALID_PARAMETER ERROR_INVALID_PARAMETER
#define WSA_NOT_ENOUGH_MEMORY ERROR_NOT_ENOUGH_MEMORY
#define WSA_OPERATION_ABORTED ERROR_OPERATION_ABORTED

/* Scatter/gather buffers of WSASend/WSARecv (Windows' layout: length first). */
typedef struct _WSABUF {
        ULONG len;
        CHAR *buf;
} WSABUF, *LPWSABUF;
typedef OVERLAPPED WSAOVERLAPPED, *LPWSAOVERLAPPED;
#ifndef MSG_PARTIAL
#define MSG_PARTIAL 0x8000
#endif
typedef void(CALLBACK *LPWSAOVERLAPPED_COMPLETION_ROUTINE)(DWORD dwError, DWORD cbTransferred,
                                                           LPWSAOVERLAPPED lpOverlapped,
                                                           DWORD dwFlags);

/* WSAPoll: the Windows structure (a SOCKET, so not struct pollfd's layout) with the Linux poll
 * bits; POLLRDNORM and POLLWRNORM exist on Linux only outside strict ISO C. */
#ifndef POLLRDNORM
#define POLLRDNORM 0x040
#define POLLRDBAND 0x080
#define POLLWRNORM 0x100
#define POLLWRBAND 0x200
#endif
typedef struct sn_wsapollfd {
        SOCKET fd;
        SHORT events;
        SHORT revents;
} WSAPOLLFD, *PWSAPOLLFD, *LPWSAPOLLFD;

/* ---- functions (exported as sn_w32_*, see the comment at the top) ---------------------- */

SN_EXPORT HANDLE sn_w32_create_io_completion_port(HANDLE file, HANDLE existing, ULONG_PTR key,
                                                  DWORD threads);
SN_EXPORT BOOL sn_w32_get_queued_completion_status(HANDLE port, LPDWORD bytes, PULONG_PTR key,
                                                   LPOVERLAPPED *overlapped, DWORD ms);
SN_EXPORT BOOL sn_w32_get_queued_completion_status_ex(HANDLE port, LPOVERLAPPED_ENTRY entries,
                                                      ULONG count, PULONG removed, DWORD ms,
                                                      BOOL alertable);
SN_EXPORT BOOL sn_w32_post_queued_completion_status(HANDLE port, DWORD bytes, ULONG_PTR key,
                                                    LPOVERLAPPED overlapped);
SN_EXPORT BOOL sn_w32_close_handle(HANDLE handle);
SN_EXPORT HANDLE sn_w32_create_named_port(const char *name, DWORD threads);
SN_EXPORT HANDLE sn_w32_open_port(const char *name);
/* A socket taken over from a lingering port (SnTakeIoCompletionPortSockets). */
typedef struct SN_TAKEN_SOCKET {
        SOCKET socket;             /* the socket, now the caller's; INVALID_SOCKET: not received */
        SOCKET previousSocket;     /* its number in the process that registered it */
        PVOID completionKey;       /* as registered, unchanged */
        UINT16 eventFilter;        /* SOCK_NOTIFY_REGISTER_EVENT_* */
        UINT8 triggerFlags;        /* SOCK_NOTIFY_TRIGGER_* */
        UINT8 enabled;             /* TRUE: enabled; FALSE: disabled */
        UINT8 armed;               /* FALSE: disabled, or a ONESHOT whose packet was dequeued:
                                    * ENABLE it again (SOCK_NOTIFY_OP_ENABLE) to hear of it */
} SN_TAKEN_SOCKET, *PSN_TAKEN_SOCKET;
SN_EXPORT HANDLE sn_w32_create_named_port_ex(const char *name, DWORD threads, DWORD linger_ms);
SN_EXPORT BOOL sn_w32_set_port_linger(HANDLE port, DWORD linger_ms);
SN_EXPORT BOOL sn_w32_take_port_sockets(HANDLE port, SN_TAKEN_SOCKET *sockets, ULONG count,
                                        PULONG taken, PULONG remaining, PULONG holders);
SN_EXPORT DWORD sn_w32_process_socket_notifications(HANDLE port, UINT32 count,
                                                    SOCK_NOTIFY_REGISTRATION *infos,
                                                    UINT32 timeout_ms, ULONG completion_count,
                                                    OVERLAPPED_ENTRY *entries,
                                                    UINT32 *received);
SN_EXPORT int sn_w32_closesocket(SOCKET s);
SN_EXPORT int sn_w32_wsa_startup(WORD version, LPWSADATA data);
SN_EXPORT int sn_w32_wsa_cleanup(void);
SN_EXPORT int sn_w32_ioctlsocket(SOCKET s, long cmd, unsigned long *arg);
SN_EXPORT DWORD sn_w32_get_last_error(void);
SN_EXPORT void sn_w32_set_last_error(DWORD code);
/* The Win32 code for an errno value as a socket call would report it (WSAE*). */
SN_EXPORT DWORD sn_w32_from_errno(int err);
SN_EXPORT int sn_w32_wsa_poll(LPWSAPOLLFD fds, ULONG n, INT timeout);
/* send(2), sendto(2), sendmsg(2) with MSG_NOSIGNAL: a broken connection fails the call with
 * ECONNRESET (WSAECONNRESET) or EPIPE (WSAESHUTDOWN) and never raises SIGPIPE. */
SN_EXPORT ssize_t sn_w32_send(SOCKET s, const void *buf, size_t len, int flags);
SN_EXPORT ssize_t sn_w32_sendto(SOCKET s, const void *buf, size_t len, int flags,
                                const struct sockaddr *to, socklen_t tolen);
SN_EXPORT ssize_t sn_w32_sendmsg(SOCKET s, const struct msghdr *msg, int flags);
/* recv(2), recvfrom(2): a datagram socket's ICMP port unreachable reads as ECONNRESET
 * (WSAECONNRESET), and a datagram larger than the buffer fails with EMSGSIZE (WSAEMSGSIZE, the
 * rest discarded), as Winsock reports them. */
SN_EXPORT ssize_t sn_w32_recv(SOCKET s, void *buf, size_t len, int flags);
SN_EXPORT ssize_t sn_w32_recvfrom(SOCKET s, void *buf, size_t len, int flags,
                                  struct sockaddr *from, void *fromlen);
/* WSASend/WSASendTo/WSARecv/WSARecvFrom without overlapped I/O: sendmsg(2)/recvmsg(2) over the
 * WSABUF array, MSG_NOSIGNAL, 0 or SOCKET_ERROR with the last error set.  to/from may be NULL.
 * An overlapped structure or completion routine fails with WSAEOPNOTSUPP. */
SN_EXPORT int sn_w32_wsa_send(SOCKET s, LPWSABUF bufs, DWORD n, LPDWORD sent, DWORD flags,
                              const struct sockaddr *to, int tolen, LPWSAOVERLAPPED ov,
                              LPWSAOVERLAPPED_COMPLETION_ROUTINE done);
SN_EXPORT int sn_w32_wsa_recv(SOCKET s, LPWSABUF bufs, DWORD n, LPDWORD received, LPDWORD flags,
                              struct sockaddr *from, LPINT fromlen, LPWSAOVERLAPPED ov,
                              LPWSAOVERLAPPED_COMPLETION_ROUTINE done);
/* getsockopt(2); SOL_SOCKET/SO_ERROR yields the Winsock code (WSAECONNREFUSED...), and
 * SOL_SOCKET/SO_EXCLUSIVEADDRUSE whether a bind would be exclusive (neither SO_REUSEADDR nor
 * SO_REUSEPORT set; TRUE on a new socket, where Windows says FALSE until it is set).  The length
 * (fromlen above too) may point to an int, as on Windows, or to a socklen_t. */
SN_EXPORT int sn_w32_getsockopt(SOCKET s, int level, int name, void *val, void *len);
/* setsockopt(2), and SOL_SOCKET/SO_EXCLUSIVEADDRUSE, which Linux lacks: a bind without
 * SO_REUSEADDR or SO_REUSEPORT is exclusive on Linux already, so TRUE succeeds unless one of
 * them is set (then WSAEINVAL, as on Windows) and FALSE changes nothing.  A negative length is
 * WSAEFAULT, as on Windows. */
SN_EXPORT int sn_w32_setsockopt(SOCKET s, int level, int name, const void *val, int len);

static inline HANDLE CreateIoCompletionPort(HANDLE FileHandle, HANDLE ExistingCompletionPort,
                                            ULONG_PTR CompletionKey,
                                            DWORD NumberOfConcurrentThreads)
{
        return sn_w32_create_io_completion_port(FileHandle, ExistingCompletionPort, CompletionKey,
                                                NumberOfConcurrentThreads);
}

static inline BOOL GetQueuedCompletionStatus(HANDLE CompletionPort,
                                             LPDWORD lpNumberOfBytesTransferred,
                                             PULONG_PTR lpCompletionKey,
                                             LPOVERLAPPED *lpOverlapped, DWORD dwMilliseconds)
{
        return sn_w32_get_queued_completion_status(CompletionPort, lpNumberOfBytesTransferred,
                                                   lpCompletionKey, lpOverlapped, dwMilliseconds);
}

static inline BOOL GetQueuedCompletionStatusEx(HANDLE CompletionPort,
                                               LPOVERLAPPED_ENTRY lpCompletionPortEntries,
                                               ULONG ulCount, PULONG ulNumEntriesRemoved,
                                               DWORD dwMilliseconds, BOOL fAlertable)
{
        return sn_w32_get_queued_completion_status_ex(CompletionPort, lpCompletionPortEntries,
                                                      ulCount, ulNumEntriesRemoved,
                                                      dwMilliseconds, fAlertable);
}

static inline BOOL PostQueuedCompletionStatus(HANDLE CompletionPort,
                                              DWORD dwNumberOfBytesTransferred,
                                              ULONG_PTR dwCompletionKey, LPOVERLAPPED lpOverlapped)
{
        return sn_w32_post_queued_completion_status(CompletionPort, dwNumberOfBytesTransferred,
                                                    dwCompletionKey, lpOverlapped);
}

/* socknotify extensions (no Windows equivalent): a completion port shared by the processes of
 * one user.  The creator names it; others open it by name and wait on it like threads of one
 * process.  Errors: ERROR_ALREADY_EXISTS (name taken), ERROR_NOT_FOUND (no such port),
 * ERROR_ACCESS_DENIED (another user's), ERROR_INVALID_PARAMETER (name empty or over 255). */
static inline HANDLE SnCreateNamedIoCompletionPort(const char *lpName,
                                                   DWORD NumberOfConcurrentThreads)
{
        return sn_w32_create_named_port(lpName, NumberOfConcurrentThreads);
}

static inline HANDLE SnOpenIoCompletionPort(const char *lpName)
{
        return sn_w32_open_port(lpName);
}

/* Handoff extensions (socknotify(3), "Handoff").  A named port created with a linger time is
 * kept dwLingerMs milliseconds after its last handle closes (even when its process is killed),
 * with its sockets, registrations and queued packets; a process of the same user that opens it
 * in that time takes its sockets over with SnTakeIoCompletionPortSockets().  Errors:
 * ERROR_NOT_ENOUGH_QUOTA (over the daemon's --max-linger), ERROR_INVALID_PARAMETER (a port
 * without a name), and those of SnCreateNamedIoCompletionPort. */
static inline HANDLE SnCreateNamedIoCompletionPortEx(const char *lpName,
                                                     DWORD NumberOfConcurrentThreads,
                                                     DWORD dwLingerMs)
{
        return sn_w32_create_named_port_ex(lpName, NumberOfConcurrentThreads, dwLingerMs);
}

static inline BOOL SnSetIoCompletionPortLinger(HANDLE CompletionPort, DWORD dwLingerMs)
{
        return sn_w32_set_port_linger(CompletionPort, dwLingerMs);
}

/* Takes up to ulCount sockets without an owner (their registering process is gone) from the
 * port: each arrives as a new socket of the caller, its registration (key, filter, triggers,
 * state, a queued entry) unchanged and now the caller's.  *lpTaken: how many; lpRemaining and
 * lpHolders (may be NULL): sockets still without an owner, and other processes' handles to the
 * port.  Re-ENABLE a socket taken over with armed FALSE: a ONESHOT whose predecessor dequeued
 * its packet. */
static inline BOOL SnTakeIoCompletionPortSockets(HANDLE CompletionPort, SN_TAKEN_SOCKET *lpSockets,
                                                 ULONG ulCount, PULONG lpTaken,
                                                 PULONG lpRemaining, PULONG lpHolders)
{
        return sn_w32_take_port_sockets(CompletionPort, lpSockets, ulCount, lpTaken, lpRemaining,
                                        lpHolders);
}

static inline BOOL CloseHandle(HANDLE hObject)
{
        return sn_w32_close_handle(hObject);
}

static inline DWORD ProcessSocketNotifications(HANDLE completionPort, UINT32 registrationCount,
                                               SOCK_NOTIFY_REGISTRATION *registrationInfos,
                                               UINT32 timeoutMs, ULONG completionCount,
                                               OVERLAPPED_ENTRY *completionPortEntries,
                                               UINT32 *receivedEntryCount)
{
        return sn_w32_process_socket_notifications(completionPort, registrationCount,
                                                   registrationInfos, timeoutMs, completionCount,
                                                   completionPortEntries, receivedEntryCount);
}

static inline int closesocket(SOCKET s)
{
        return sn_w32_closesocket(s);
}

static inline int WSAStartup(WORD wVersionRequested, LPWSADATA lpWSAData)
{
        return sn_w32_wsa_startup(wVersionRequested, lpWSAData);
}

static inline int WSACleanup(void)
{
        return sn_w32_wsa_cleanup();
}

static inline int ioctlsocket(SOCKET s, long cmd, unsigned long *argp)
{
        return sn_w32_ioctlsocket(s, cmd, argp);
}

static inline DWORD GetLastError(void)
{
        return sn_w32_get_last_error();
}

static inline void SetLastError(DWORD dwErrCode)
{
        sn_w32_set_last_error(dwErrCode);
}

static inline int WSAGetLastError(void)
{
        return (int)sn_w32_get_last_error();
}

static inline void WSASetLastError(int iError)
{
        sn_w32_set_last_error((DWORD)iError);
}

static inline PVOID sn_w32_secure_zero_memory(PVOID p, SIZE_T n)
{
        volatile unsigned char *v = (volatile unsigned char *)p;

        while (n--)
                *v++ = 0;
        return p;
}

/* WSAPoll: poll(2) over WSAPOLLFD entries; SOCKET_ERROR and WSAGetLastError() on failure.  A
 * negative or out-of-range fd (INVALID_SOCKET) is ignored, as poll(2) ignores negative ones. */
static inline int WSAPoll(LPWSAPOLLFD fdArray, ULONG fds, INT timeout)
{
        return sn_w32_wsa_poll(fdArray, fds, timeout);
}

static inline int WSASend(SOCKET s, LPWSABUF lpBuffers, DWORD dwBufferCount,
                          LPDWORD lpNumberOfBytesSent, DWORD dwFlags, LPWSAOVERLAPPED lpOverlapped,
                          LPWSAOVERLAPPED_COMPLETION_ROUTINE lpCompletionRoutine)
{
        return sn_w32_wsa_send(s, lpBuffers, dwBufferCount, lpNumberOfBytesSent, dwFlags, NULL, 0,
                               lpOverlapped, lpCompletionRoutine);
}

static inline int WSASendTo(SOCKET s, LPWSABUF lpBuffers, DWORD dwBufferCount,
                            LPDWORD lpNumberOfBytesSent, DWORD dwFlags, const struct sockaddr *lpTo,
                            int iTolen, LPWSAOVERLAPPED lpOverlapped,
                            LPWSAOVERLAPPED_COMPLETION_ROUTINE lpCompletionRoutine)
{
        return sn_w32_wsa_send(s, lpBuffers, dwBufferCount, lpNumberOfBytesSent, dwFlags, lpTo,
                               iTolen, lpOverlapped, lpCompletionRoutine);
}

static inline int WSARecv(SOCKET s, LPWSABUF lpBuffers, DWORD dwBufferCount,
                          LPDWORD lpNumberOfBytesRecvd, LPDWORD lpFlags,
                          LPWSAOVERLAPPED lpOverlapped,
                          LPWSAOVERLAPPED_COMPLETION_ROUTINE lpCompletionRoutine)
{
        return sn_w32_wsa_recv(s, lpBuffers, dwBufferCount, lpNumberOfBytesRecvd, lpFlags, NULL,
                               NULL, lpOverlapped, lpCompletionRoutine);
}

static inline int WSARecvFrom(SOCKET s, LPWSABUF lpBuffers, DWORD dwBufferCount,
                              LPDWORD lpNumberOfBytesRecvd, LPDWORD lpFlags,
                              struct sockaddr *lpFrom, LPINT lpFromlen, LPWSAOVERLAPPED lpOverlapped,
                              LPWSAOVERLAPPED_COMPLETION_ROUTINE lpCompletionRoutine)
{
        return sn_w32_wsa_recv(s, lpBuffers, dwBufferCount, lpNumberOfBytesRecvd, lpFlags, lpFrom,
                               lpFromlen, lpOverlapped, lpCompletionRoutine);
}

/*
 * The socket calls whose Linux behaviour a Windows program would notice: send, sendto and
 * sendmsg never raise SIGPIPE (the process's signal disposition is left alone); recv/recvfrom
 * and getsockopt(SO_ERROR) report errors with Winsock's meaning; setsockopt and getsockopt know
 * SO_EXCLUSIVEADDRUSE.  They are function-like macros over the sn_w32_* functions, active where
 * this header is included.  Define SN_WINSOCK_NO_SOCKET_WRAPPERS before including it to keep
 * the plain libc calls (which refuse SO_EXCLUSIVEADDRUSE with ENOPROTOOPT).
 */
#ifndef SN_WINSOCK_NO_SOCKET_WRAPPERS
#define send(s, buf, len, flags) sn_w32_send((SOCKET)(s), (buf), (size_t)(len), (flags))
#define sendto(s, buf, len, flags, to, tolen)                                                     \
        sn_w32_sendto((SOCKET)(s), (buf), (size_t)(len), (flags), (to), (socklen_t)(tolen))
#define sendmsg(s, msg, flags) sn_w32_sendmsg((SOCKET)(s), (msg), (flags))
#define recv(s, buf, len, flags) sn_w32_recv((SOCKET)(s), (buf), (size_t)(len), (flags))
#define recvfrom(s, buf, len, flags, from, fromlen)                                               \
        sn_w32_recvfrom((SOCKET)(s), (buf), (size_t)(len), (flags), (from), (fromlen))
#define getsockopt(s, level, name, val, len)                                                      \
        sn_w32_getsockopt((SOCKET)(s), (level), (name), (val), (len))
#define setsockopt(s, level, name, val, len)                                                      \
        sn_w32_setsockopt((SOCKET)(s), (level), (name), (val), (int)(len))
#endif

static inline UINT32 SocketNotificationRetrieveEvents(OVERLAPPED_ENTRY *notification)
{
        return (UINT32)notification->dwNumberOfBytesTransferred;
}

#if !defined(__cplusplus)
_Static_assert(sizeof(SOCK_NOTIFY_REGISTRATION) == (sizeof(void *) == 8 ? 24 : 16),
               "SOCK_NOTIFY_REGISTRATION layout");
_Static_assert(sizeof(OVERLAPPED_ENTRY) == (sizeof(void *) == 8 ? 32 : 16),
               "OVERLAPPED_ENTRY layout");
_Static_assert(SOCK_NOTIFY_EVENTS_ALL == SN_EVENTS_ALL && SOCK_NOTIFY_OP_REMOVE == SN_OP_REMOVE &&
                       SOCK_NOTIFY_TRIGGER_EDGE == SN_TRIGGER_EDGE,
               "values shared with the native API");
#else
static_assert(sizeof(SOCK_NOTIFY_REGISTRATION) == (sizeof(void *) == 8 ? 24 : 16),
              "SOCK_NOTIFY_REGISTRATION layout");
static_assert(sizeof(OVERLAPPED_ENTRY) == (sizeof(void *) == 8 ? 32 : 16),
              "OVERLAPPED_ENTRY layout");
#endif

#ifdef __cplusplus
}
#endif
