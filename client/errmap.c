/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * errmap.c - the one table between errno values and Win32 codes, and the thread's last error.
 *
 * One row per errno value, with the code it becomes in each of the three places the Win32
 * layer reports errors: after a plain socket call (WSAE*), as the result of a completion-port
 * call (ERROR_*), and as a per-registration result of ProcessSocketNotifications.
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
} table[] = {
        { 0, ERROR_SUCCESS, ERROR_SUCCESS, ERROR_SUCCESS },
        { EAGAIN, WSAEWOULDBLOCK, ERROR_RETRY, ERROR_GEN_FAILURE }, /* call: try again */
        { EINPROGRESS, WSAEWOULDBLOCK, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { EALREADY, WSAEALREADY, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { EINTR, WSAEINTR, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { EBADF, WSAENOTSOCK, ERROR_INVALID_HANDLE, WSAENOTSOCK },
        { ENOTSOCK, WSAENOTSOCK, ERROR_INVALID_HANDLE, WSAENOTSOCK },
        { EBADFD, WSAENOTSOCK, ERROR_INVALID_HANDLE, WSAENOTSOCK },
        { EINVAL, WSAEINVAL, ERROR_INVALID_PARAMETER, WSAEINVAL },
        { E2BIG, WSAEINVAL, ERROR_INVALID_PARAMETER, WSAEINVAL },
        { EFAULT, WSAEFAULT, ERROR_INVALID_PARAMETER, WSAEFAULT },
        { EACCES, WSAEACCES, ERROR_ACCESS_DENIED, WSAEACCES },
        { EPERM, WSAEACCES, ERROR_GEN_FAILURE, WSAEACCES },
        { EMFILE, WSAEMFILE, ERROR_NOT_ENOUGH_MEMORY, WSAEMFILE },
        { ENFILE, WSAEMFILE, ERROR_NOT_ENOUGH_MEMORY, WSAEMFILE },
        { ENOMEM, WSA_NOT_ENOUGH_MEMORY, ERROR_NOT_ENOUGH_MEMORY, ERROR_NOT_ENOUGH_MEMORY },
        { ENOBUFS, WSAENOBUFS, ERROR_NOT_ENOUGH_MEMORY, ERROR_NOT_ENOUGH_MEMORY },
        { ENOSPC, WSAENOBUFS, ERROR_NOT_ENOUGH_MEMORY, ERROR_NOT_ENOUGH_MEMORY },
        { EDQUOT, WSAEDQUOT, ERROR_NOT_ENOUGH_QUOTA, ERROR_NOT_ENOUGH_QUOTA },
        { EEXIST, WSAEINVAL, ERROR_ALREADY_EXISTS, ERROR_ALREADY_EXISTS },
        { ENOENT, WSAEINVAL, ERROR_NOT_FOUND, ERROR_NOT_FOUND },
        { ETIMEDOUT, WSAETIMEDOUT, WAIT_TIMEOUT, ERROR_GEN_FAILURE },
        { ECANCELED, WSAEINTR, ERROR_ABANDONED_WAIT_0, ERROR_GEN_FAILURE },
        { ESHUTDOWN, WSAESHUTDOWN, ERROR_ABANDONED_WAIT_0, ERROR_GEN_FAILURE },
        /* The daemon ended during the call; the session resumed (docs/reconnect.md). */
        { EIO, WSAENETRESET, ERROR_OPERATION_ABORTED, ERROR_GEN_FAILURE },
        { EPIPE, WSAESHUTDOWN, ERROR_INVALID_HANDLE, ERROR_GEN_FAILURE },
        { ECONNRESET, WSAECONNRESET, ERROR_INVALID_HANDLE, ERROR_GEN_FAILURE },
        { ECONNREFUSED, WSAECONNREFUSED, WSASYSNOTREADY, ERROR_GEN_FAILURE },
        { EPROTO, WSAEINVAL, WSASYSNOTREADY, ERROR_GEN_FAILURE },
        { EOPNOTSUPP, WSAEOPNOTSUPP, ERROR_NOT_SUPPORTED, WSAEOPNOTSUPP },
        { EDESTADDRREQ, WSAEDESTADDRREQ, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { EMSGSIZE, WSAEMSGSIZE, ERROR_INVALID_PARAMETER, ERROR_GEN_FAILURE },
        { EPROTOTYPE, WSAEPROTOTYPE, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { ENOPROTOOPT, WSAENOPROTOOPT, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { EPROTONOSUPPORT, WSAEPROTONOSUPPORT, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { ESOCKTNOSUPPORT, WSAESOCKTNOSUPPORT, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { EPFNOSUPPORT, WSAEPFNOSUPPORT, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { EAFNOSUPPORT, WSAEAFNOSUPPORT, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { EADDRINUSE, WSAEADDRINUSE, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { EADDRNOTAVAIL, WSAEADDRNOTAVAIL, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { ENETDOWN, WSAENETDOWN, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { ENETUNREACH, WSAENETUNREACH, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { ENETRESET, WSAENETRESET, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { ECONNABORTED, WSAECONNABORTED, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { EISCONN, WSAEISCONN, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { ENOTCONN, WSAENOTCONN, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { ETOOMANYREFS, WSAETOOMANYREFS, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { ELOOP, WSAELOOP, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { ENAMETOOLONG, WSAENAMETOOLONG, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { EHOSTDOWN, WSAEHOSTDOWN, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
        { EHOSTUNREACH, WSAEHOSTUNREACH, ERROR_GEN_FAILURE, ERROR_GEN_FAILURE },
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
                                            : table[i].entry_code;
        }
        return ERROR_GEN_FAILURE;
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
