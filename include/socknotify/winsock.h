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
 * The functions are thin wrappers over the native API (<socknotify.h>): the library exports
 * them as sn_w32_*, and the Windows names below are static inline functions, so they exist only
 * where this header is included.  The first call connects to socknotifyd ($SOCKNOTIFY_SOCKET or
 * the default path).  Every difference from Windows is listed in socknotify-winsock(3).
 */
#pragma once

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/types.h>
/* What winsock2.h brings along on Windows: addresses, protocols and conversions. */
#include <arpa/inet.h>
#include <netinet/in.h>

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
#ifndef VOID
#define VOID void
#endif
#define WINAPI
#define WSAAPI

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
#define ZeroMemory(p, n) memset((p), 0, (n))
#define RTL_NUMBER_OF(a) (sizeof(a) / sizeof((a)[0]))

#define INVALID_SOCKET ((SOCKET)~(uintptr_t)0)
#define INVALID_HANDLE_VALUE ((HANDLE)(intptr_t)-1)
#define INFINITE 0xFFFFFFFFu
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
#define ERROR_ACCESS_DENIED 5L
#define ERROR_INVALID_HANDLE 6L
#define ERROR_NOT_ENOUGH_MEMORY 8L
#define ERROR_INVALID_PARAMETER 87L
#define ERROR_ALREADY_EXISTS 183L
#define WAIT_IO_COMPLETION 0xC0L
#define WAIT_TIMEOUT 258L
#define ERROR_ABANDONED_WAIT_0 735L
#define ERROR_OPERATION_ABORTED 995L
#define ERROR_NOT_FOUND 1168L
#define ERROR_TIMEOUT 1460L
#define ERROR_NOT_ENOUGH_QUOTA 1816L
#define ERROR_INVALID_FUNCTION 1L
#define ERROR_GEN_FAILURE 31L
#define ERROR_NOT_SUPPORTED 50L
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
#define WSAEDQUOT 10069L
#define WSASYSNOTREADY 10091L
#define WSAVERNOTSUPPORTED 10092L
#define WSANOTINITIALISED 10093L
#define WSA_INVALID_HANDLE ERROR_INVALID_HANDLE
#define WSA_NOT_ENOUGH_MEMORY ERROR_NOT_ENOUGH_MEMORY
#define WSA_INVALID_PARAMETER ERROR_INVALID_PARAMETER

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
