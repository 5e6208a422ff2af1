/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * errmap.c - the one table between errno values and Win32 codes, and the thread's last error.
 *
 * One row per errno value, with the code it becomes in each of the four places the Win32
 * layer reports errors: after a plain socket call (WSAE*), as the result of a completion-port
 * call (ERROR_*), as a per-registration result of ProcessSocketNotifications, and as the return
 * value of a ProcessSocketNotifications call that failed as a whole.
 *
 * That last column is a Winsock function's: its reference page promises ERROR_SUCCESS,
 * WAIT_TIMEOUT or a WSAE* code, so a caller may hand any other return to the code that reports
 * socket errors.  An argument it refuses, or a port handle that is not an open port, is
 * WSAEINVAL (the port is one of its arguments; WSAENOTSOCK stays the per-registration answer for
 * a registration's socket, so the two failures are told apart).  A port closed while the call
 * waited is WSAEINTR, what a Winsock call blocked on a socket that another thread closes
 * reports.  No memory or a daemon quota is WSAENOBUFS.  A daemon that ended and left no session
 * to resume (or cannot be reached) is WSAENETDOWN, the Winsock name for a failed subsystem; a
 * daemon that ended while the call was in its hands, the session resumed, is WSAENETRESET: the
 * same call may be made again.  Errors that cannot come from this call keep their socket code.
 *
 * Last error.  Windows keeps one last-error value per thread, which socket calls also set.  On
 * Linux socket calls set errno instead, so GetLastError() reads errno through this table,
 * unless the Win32 layer (or SetLastError) set a code more recently: that code is stored per
 * thread and errno is set to a private negative mark; as long as errno still holds the mark,
 * the stored code is returned.  Any later failing libc call overwrites errno, and its error is
 * what GetLastError() reports, as on Windows.
 */
#include "config.h"

#include <errno.h>

#include "client/win32.h"

static const struct sn_w32_errmap {
        int err;
        DWORD socket_code;
        DWORD call_code;
        DWORD entry_code;
        DWORD psn_code;
} table[] = {
        { 0, ERROR_SUCCESS, ERROR_SUCCESS, ERROR_SUCCESS, ERROR_SUCCESS },
        /* call: try again */
        { EAGAIN, WSAEWOULDBLOCK, ERROR_RETRY, ERROR_GEN_FAILURE, WSAEWOULDBLOCK },
        { EINPROGRESS, WSAEWOULDBLOCK, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAENETDOWN },
        { EALREADY, WSAEALREADY, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAENETDOWN },
        { EINTR, WSAEINTR, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAEINTR },
        { EBADF, WSAENOTSOCK, ERROR_INVALID_HANDLE, WSAENOTSOCK, WSAEINVAL },
        { ENOTSOCK, WSAENOTSOCK, ERROR_INVALID_HANDLE, WSAENOTSOCK, WSAEINVAL },
        { EBADFD, WSAENOTSOCK, ERROR_INVALID_HANDLE, WSAENOTSOCK, WSAEINVAL },
        { EINVAL, WSAEINVAL, ERROR_INVALID_PARAMETER, WSAEINVAL, WSAEINVAL },
        { E2BIG, WSAEINVAL, ERROR_INVALID_PARAMETER, WSAEINVAL, WSAEINVAL },
        { EFAULT, WSAEFAULT, ERROR_INVALID_PARAMETER, WSAEFAULT, WSAEFAULT },
        { EACCES, WSAEACCES, ERROR_ACCESS_DENIED, WSAEACCES, WSAEACCES },
        { EPERM, WSAEACCES, ERROR_GEN_FAILURE, WSAEACCES, WSAEACCES },
        { EMFILE, WSAEMFILE, ERROR_NOT_ENOUGH_MEMORY, WSAEMFILE, WSAEMFILE },
        { ENFILE, WSAEMFILE, ERROR_NOT_ENOUGH_MEMORY, WSAEMFILE, WSAEMFILE },
        { ENOMEM, WSA_NOT_ENOUGH_MEMORY, ERROR_NOT_ENOUGH_MEMORY, ERROR_NOT_ENOUGH_MEMORY,
          WSAENOBUFS },
        { ENOBUFS, WSAENOBUFS, ERROR_NOT_ENOUGH_MEMORY, ERROR_NOT_ENOUGH_MEMORY, WSAENOBUFS },
        { ENOSPC, WSAENOBUFS, ERROR_NOT_ENOUGH_MEMORY, ERROR_NOT_ENOUGH_MEMORY, WSAENOBUFS },
        { EDQUOT, WSAEDQUOT, ERROR_NOT_ENOUGH_QUOTA, ERROR_NOT_ENOUGH_QUOTA, WSAENOBUFS },
        { EEXIST, WSAEINVAL, ERROR_ALREADY_EXISTS, ERROR_ALREADY_EXISTS, WSAEINVAL },
        { ENOENT, WSAEINVAL, ERROR_NOT_FOUND, ERROR_NOT_FOUND, WSAEINVAL },
        { ETIMEDOUT, WSAETIMEDOUT, WAIT_TIMEOUT, ERROR_GEN_FAILURE, WAIT_TIMEOUT },
        { ECANCELED, WSAEINTR, ERROR_ABANDONED_WAIT_0, ERROR_GEN_FAILURE, WSAEINTR },
        { ESHUTDOWN, WSAESHUTDOWN, ERROR_ABANDONED_WAIT_0, ERROR_GEN_FAILURE, WSAENETDOWN },
        /* The daemon ended during the call; the session resumed (docs/reconnect.md). */
        { EIO, WSAENETRESET, ERROR_OPERATION_ABORTED, ERROR_GEN_FAILURE, WSAENETRESET },
        { EPIPE, WSAESHUTDOWN, ERROR_INVALID_HANDLE, ERROR_GEN_FAILURE, WSAENETDOWN },
        { ECONNRESET, WSAECONNRESET, ERROR_INVALID_HANDLE, ERROR_GEN_FAILURE, WSAENETDOWN },
        { ECONNREFUSED, WSAECONNREFUSED, WSASYSNOTREADY, ERROR_GEN_FAILURE, WSAENETDOWN },
        { EPROTO, WSAEINVAL, WSASYSNOTREADY, ERROR_GEN_FAILURE, WSAENETDOWN },
        { EOPNOTSUPP, WSAEOPNOTSUPP, ERROR_NOT_SUPPORTED, WSAEOPNOTSUPP, WSAEOPNOTSUPP },
        { EDESTADDRREQ, WSAEDESTADDRREQ, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAEDESTADDRREQ },
        { EMSGSIZE, WSAEMSGSIZE, ERROR_INVALID_PARAMETER, ERROR_GEN_FAILURE, WSAEINVAL },
        { EPROTOTYPE, WSAEPROTOTYPE, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAEPROTOTYPE },
        { ENOPROTOOPT, WSAENOPROTOOPT, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAENOPROTOOPT },
        { EPROTONOSUPPORT, WSAEPROTONOSUPPORT, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE,
          WSAEPROTONOSUPPORT },
        { ESOCKTNOSUPPORT, WSAESOCKTNOSUPPORT, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE,
          WSAESOCKTNOSUPPORT },
        { EPFNOSUPPORT, WSAEPFNOSUPPORT, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAEPFNOSUPPORT },
        { EAFNOSUPPORT, WSAEAFNOSUPPORT, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAEAFNOSUPPORT },
        { EADDRINUSE, WSAEADDRINUSE, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAEADDRINUSE },
        { EADDRNOTAVAIL, WSAEADDRNOTAVAIL, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAEADDRNOTAVAIL },
        { ENETDOWN, WSAENETDOWN, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAENETDOWN },
        { ENETUNREACH, WSAENETUNREACH, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAENETUNREACH },
        { ENETRESET, WSAENETRESET, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAENETRESET },
        { ECONNABORTED, WSAECONNABORTED, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAECONNABORTED },
        { EISCONN, WSAEISCONN, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAEISCONN },
        { ENOTCONN, WSAENOTCONN, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAENOTCONN },
        { ETOOMANYREFS, WSAETOOMANYREFS, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAETOOMANYREFS },
        { ELOOP, WSAELOOP, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAELOOP },
        { ENAMETOOLONG, WSAENAMETOOLONG, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAENAMETOOLONG },
        { EHOSTDOWN, WSAEHOSTDOWN, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAEHOSTDOWN },
        { EHOSTUNREACH, WSAEHOSTUNREACH, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE, WSAEHOSTUNREACH },
};

DWORD sn__w32_map(int err, enum sn_w32_ctx ctx)
{
        if (err < 0)
                err = -err;
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
                if (table[i].err != err)
                        continue;
                return ctx == SN_W32_SOCKET ? table[i].socket_code
                       : ctx == SN_W32_CALL ? table[i].call_code
                       : ctx == SN_W32_PSN  ? table[i].psn_code
                                            : table[i].entry_code;
        }
        /* An error the table does not know: for a call that may only answer WSAE*, the
         * subsystem failed. */
        return ctx == SN_W32_PSN ? (DWORD)WSAENETDOWN : ERROR_GEN_FAILURE;
}

static __thread DWORD tl_code;
static __thread int tl_mark; /* 0 until set: errno 0 then reads as ERROR_SUCCESS either way */

SN_EXPORT DWORD sn_w32_from_errno(int err)
{
        return sn__w32_map(err, SN_W32_SOCKET);
}

SN_EXPORT DWORD sn_w32_get_last_error(void)
{
        if (errno == tl_mark)
                return tl_code;
        return sn__w32_map(errno, SN_W32_SOCKET);
}

SN_EXPORT void sn_w32_set_last_error(DWORD code)
{
        tl_code = code;
        tl_mark = -(int)(code & 0x3fffffff) - 1;
        errno = tl_mark;
}
