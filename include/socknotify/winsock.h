/*
 * socknotify/winsock.h - Win32-compatible names for socket state notifications on Linux.
 *
 * Types, structure layouts and constants with the names, field names, widths and values of the
 * Windows SDK (winsock2.h, minwinbase.h, winerror.h), so that Windows code using
 * ProcessSocketNotifications and I/O completion ports compiles with few changes.  The values
 * are checked against the native API at compile time.
 *
 * This release provides the types and constants; the Win32 functions (CreateIoCompletionPort,
 * ProcessSocketNotifications, GetQueuedCompletionStatus(Ex), PostQueuedCompletionStatus, ...)
 * are not part of it yet.  Use the native API of <socknotify.h> meanwhile.
 */
#pragma once

#include <stdint.h>

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
#define WSAEFAULT 10014L
#define WSAEINVAL 10022L
#define WSAEWOULDBLOCK 10035L
#define WSAENOTSOCK 10038L
#define WSAEOPNOTSUPP 10045L
#define WSAECONNRESET 10054L
#define WSANOTINITIALISED 10093L

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
