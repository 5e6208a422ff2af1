/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * winsock-names.c - the names a Windows programmer reaches for exist in <socknotify/winsock.h>.
 *
 * Compiled (not run) by tests/check-headers.sh as -std=c11, -std=gnu11 and -std=c++17 with
 * warnings as errors: each line below fails to compile if its name is missing or has the wrong
 * kind (type, constant, macro, function).  Values are checked where Windows fixes them.
 */
#include <socknotify/winsock.h>

#if defined(__cplusplus)
#define SN_ASSERT(e) static_assert(e, #e)
#else
#define SN_ASSERT(e) _Static_assert(e, #e)
#endif

#ifndef _WINSOCK2API_
#error _WINSOCK2API_ is not defined
#endif
#ifndef _WINSOCKAPI_
#error _WINSOCKAPI_ is not defined
#endif

/* Error codes, with their Windows values. */
SN_ASSERT(ERROR_UNIDENTIFIED_ERROR == 1287 && ERROR_IO_PENDING == 997);
SN_ASSERT(ERROR_NETNAME_DELETED == 64 && ERROR_CONNECTION_ABORTED == 1236);
SN_ASSERT(ERROR_MORE_DATA == 234 && ERROR_OPERATION_ABORTED == 995);
SN_ASSERT(WAIT_FAILED == 0xFFFFFFFFu && WAIT_OBJECT_0 == 0 && WAIT_TIMEOUT == 258);
SN_ASSERT(WSA_IO_PENDING == 997 && WSA_WAIT_TIMEOUT == 258 && WSA_INFINITE == INFINITE);
SN_ASSERT(WSA_IO_INCOMPLETE == 996 && WSA_OPERATION_ABORTED == 995);
SN_ASSERT(ERROR_INSUFFICIENT_BUFFER == 122 && ERROR_CONNECTION_REFUSED == 1225);
SN_ASSERT(ERROR_PORT_UNREACHABLE == 1234 && ERROR_HANDLE_EOF == 38 && ERROR_CANCELLED == 1223);
SN_ASSERT(WSABASEERR == 10000 && WSAEINTR == 10004 && WSAEBADF == 10009);
SN_ASSERT(WSAEACCES == 10013 && WSAEFAULT == 10014 && WSAEINVAL == 10022 && WSAEMFILE == 10024);
SN_ASSERT(WSAEWOULDBLOCK == 10035 && WSAEINPROGRESS == 10036 && WSAEALREADY == 10037);
SN_ASSERT(WSAENOTSOCK == 10038 && WSAEDESTADDRREQ == 10039 && WSAEMSGSIZE == 10040);
SN_ASSERT(WSAEPROTOTYPE == 10041 && WSAENOPROTOOPT == 10042 && WSAEPROTONOSUPPORT == 10043);
SN_ASSERT(WSAESOCKTNOSUPPORT == 10044 && WSAEOPNOTSUPP == 10045 && WSAEPFNOSUPPORT == 10046);
SN_ASSERT(WSAEAFNOSUPPORT == 10047 && WSAEADDRINUSE == 10048 && WSAEADDRNOTAVAIL == 10049);
SN_ASSERT(WSAENETDOWN == 10050 && WSAENETUNREACH == 10051 && WSAENETRESET == 10052);
SN_ASSERT(WSAECONNABORTED == 10053 && WSAECONNRESET == 10054 && WSAENOBUFS == 10055);
SN_ASSERT(WSAEISCONN == 10056 && WSAENOTCONN == 10057 && WSAESHUTDOWN == 10058);
SN_ASSERT(WSAETOOMANYREFS == 10059 && WSAETIMEDOUT == 10060 && WSAECONNREFUSED == 10061);
SN_ASSERT(WSAELOOP == 10062 && WSAENAMETOOLONG == 10063 && WSAEHOSTDOWN == 10064);
SN_ASSERT(WSAEHOSTUNREACH == 10065 && WSAENOTEMPTY == 10066 && WSAEPROCLIM == 10067);
SN_ASSERT(WSAEUSERS == 10068 && WSAEDQUOT == 10069 && WSAESTALE == 10070 && WSAEREMOTE == 10071);
SN_ASSERT(WSASYSNOTREADY == 10091 && WSAVERNOTSUPPORTED == 10092 && WSANOTINITIALISED == 10093);
SN_ASSERT(WSAEDISCON == 10101 && WSAENOMORE == 10102 && WSAECANCELLED == 10103);
SN_ASSERT(WSAEINVALIDPROCTABLE == 10104 && WSAEINVALIDPROVIDER == 10105);
SN_ASSERT(WSAEPROVIDERFAILEDINIT == 10106 && WSASYSCALLFAILURE == 10107);
SN_ASSERT(WSASERVICE_NOT_FOUND == 10108 && WSATYPE_NOT_FOUND == 10109);
SN_ASSERT(WSA_E_NO_MORE == 10110 && WSA_E_CANCELLED == 10111 && WSAEREFUSED == 10112);
SN_ASSERT(WSAHOST_NOT_FOUND == 11001 && WSATRY_AGAIN == 11002 && WSANO_RECOVERY == 11003);
SN_ASSERT(WSANO_DATA == 11004);

/* Types, with Windows' widths. */
SN_ASSERT(sizeof(BYTE) == 1 && sizeof(UCHAR) == 1 && sizeof(USHORT) == 2 && sizeof(WORD) == 2);
SN_ASSERT(sizeof(LONG) == 4 && sizeof(ULONG) == 4 && sizeof(DWORD) == 4 && sizeof(INT) == 4);
SN_ASSERT(sizeof(UINT) == 4 && sizeof(INT32) == 4 && sizeof(UINT32) == 4);
SN_ASSERT(sizeof(ULONGLONG) == 8 && sizeof(UINT64) == 8 && sizeof(INT64) == 8);
SN_ASSERT(sizeof(UINT_PTR) == sizeof(void *) && sizeof(INT_PTR) == sizeof(void *));
SN_ASSERT(sizeof(LONG_PTR) == sizeof(void *) && sizeof(DWORD_PTR) == sizeof(void *));
SN_ASSERT(sizeof(ULONG_PTR) == sizeof(void *) && sizeof(SIZE_T) == sizeof(void *));
SN_ASSERT(sizeof(SOCKET) == sizeof(void *));
SN_ASSERT(sizeof(SOCKADDR_IN) == 16 && sizeof(SOCKADDR_IN6) == 28 && sizeof(IN_ADDR) == 4);
SN_ASSERT(sizeof(SOCKADDR_STORAGE) == 128 && sizeof(SOCKADDR) == 16);
SN_ASSERT(sizeof(WSAPOLLFD) == (sizeof(void *) == 8 ? 16 : 8));
/* Documented differences (docs/compatibility.md): u_long is the platform's long. */
SN_ASSERT(sizeof(u_long) == sizeof(long) && sizeof(WCHAR) == sizeof(wchar_t));

/* Macros. */
SN_ASSERT(LOBYTE(0x1234) == 0x34 && HIBYTE(0x1234) == 0x12);
SN_ASSERT(LOWORD(0x12345678) == 0x5678 && HIWORD(0x12345678) == 0x1234);
SN_ASSERT(MAKEWORD(2, 2) == 0x0202 && WINSOCK_VERSION == 0x0202);
SN_ASSERT(SOCKET_ERROR == -1 && INVALID_SOCKET == (SOCKET)~(SOCKET)0);
SN_ASSERT(SD_RECEIVE == 0 && SD_SEND == 1 && SD_BOTH == 2);
SN_ASSERT(POLLRDNORM != 0 && POLLWRNORM != 0 && TCP_NODELAY != 0 && FIONBIO != 0);
SN_ASSERT(TRUE == 1 && FALSE == 0);
SN_ASSERT(SO_EXCLUSIVEADDRUSE == (int)(~SO_REUSEADDR) && SO_EXCLUSIVEADDRUSE < 0);
SN_ASSERT(sizeof(*(PUINT32)0) == 4 && sizeof(*(PINT32)0) == 4 && sizeof(*(PUINT64)0) == 8);
SN_ASSERT(sizeof(*(PUINT8)0) == 1 && sizeof(*(PUINT16)0) == 2 && sizeof(*(PINT64)0) == 8);

typedef struct CONTEXT {
        _Guarded_by_(lock) LONG count;
        HANDLE port;
} CONTEXT;

static DWORD CALLBACK worker(_In_ PVOID arg)
{
        UNREFERENCED_PARAMETER(arg);
        return 0;
}

FORCEINLINE UINT twice(_In_ UINT x)
{
        return 2 * x;
}

/* FORCEINLINE carries no storage class, as Windows' __forceinline: "static FORCEINLINE" too. */
static FORCEINLINE int one_more(_In_ int x)
{
        return x + 1;
}

static FORCEINLINE void add32(_Inout_ PUINT32 p, _In_ UINT32 n)
{
        *p += n;
}

/* Every name in use, the way Windows code uses it. */
int names_in_use(_In_ SOCKET s, _Out_ PHANDLE out, _Out_opt_ LPDWORD count, _Inout_ CONTEXT *c);
int names_in_use(_In_ SOCKET s, _Out_ PHANDLE out, _Out_opt_ LPDWORD count, _Inout_ CONTEXT *c)
{
        BYTE b = LOBYTE(0x102);
        USHORT us = 1;
        UCHAR uc = HIBYTE(0x102);
        INT i = 0;
        UINT_PTR up = 0;
        INT_PTR ip = 0;
        LONG_PTR lp = 0;
        DWORD_PTR dp = 0;
        SIZE_T n = 0;
        ULONGLONG ull = 0;
        UINT64 u64 = 0;
        INT32 i32 = 0;
        char text[8] = "abc";
        LPSTR str = text;
        LPCSTR cstr = "abc";
        SOCKADDR_IN sin;
        SOCKADDR_IN6 sin6;
        SOCKADDR_STORAGE ss;
        PSOCKADDR sa = (PSOCKADDR)&ss;
        IN_ADDR ia;
        LINGER lg = { 1, 0 };
        u_long nb = 1;
        u_short port = htons(80);
        fd_set set;
        WSAPOLLFD pfd[2];
        WSADATA wsa;
        int opt = 1, err = 0;
        int len = (int)sizeof(err);
        BYTE secret[16];
        BYTE copy[16];
        OVERLAPPED_ENTRY entries[4];
        ULONG removed = 0;

        ZeroMemory(&sin, sizeof(sin));
        SecureZeroMemory(secret, sizeof(secret));
        CopyMemory(copy, secret, sizeof(copy));
        ZeroMemory(&sin6, sizeof(sin6));
        ZeroMemory(pfd, sizeof(pfd));
        sin.sin_family = AF_INET;
        sin.sin_port = port;
        ia.s_addr = htonl(INADDR_LOOPBACK);
        sin.sin_addr = ia;
        FD_ZERO(&set);
        pfd[0].fd = s;
        pfd[0].events = POLLRDNORM | POLLWRNORM;
        pfd[1].fd = INVALID_SOCKET;
        *out = NULL;
        if (count)
                *count = (DWORD)(ARRAYSIZE(entries) + _countof(copy) + RTL_NUMBER_OF(secret));
        c->count = (LONG)twice((UINT)worker(NULL));
        if (WSAStartup(MAKEWORD(2, 2), &wsa) != 0)
                return WSAGetLastError();
        ioctlsocket(s, FIONBIO, &nb);
        setsockopt((int)s, IPPROTO_TCP, TCP_NODELAY, (const char *)&opt, sizeof(opt));
        setsockopt((int)s, SOL_SOCKET, SO_LINGER, (const char *)&lg, sizeof(lg));
        getsockopt(s, SOL_SOCKET, SO_ERROR, (char *)&err, &len);
        setsockopt(s, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, (const char *)&opt, sizeof(opt));
        getsockopt(s, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, (char *)&opt, &len);
        {
                /* in_addr.S_un cannot be given; s_addr, Windows' own macro for
                 * S_un.S_addr, is the replacement that compiles on both. */
                IN_ADDR any;
                UINT32 sum = 0;

                any.s_addr = htonl(INADDR_ANY);
                add32(&sum, (UINT32)any.s_addr);
                i += one_more((int)sum);
        }
        if (WSAPoll(pfd, 2, 0) == SOCKET_ERROR && WSAGetLastError() == WSAENOTSOCK)
                return 1;
        if (send(s, "x", 1, 0) == SOCKET_ERROR || sendto(s, "x", 1, 0, sa, sizeof(ss)) < 0)
                i = WSAGetLastError() == WSAECONNRESET;
        if (recv(s, text, 1, 0) < 0 && WSAGetLastError() == WSAEWOULDBLOCK)
                i++;
        {
                WSABUF wb = { 1, text };
                DWORD done = 0, flags = 0;
                SOCKADDR_IN from;
                INT fromlen = (INT)sizeof(from);

                if (WSASend(s, &wb, 1, &done, 0, NULL, NULL) == SOCKET_ERROR ||
                    WSARecvFrom(s, &wb, 1, &done, &flags, (PSOCKADDR)&from, &fromlen, NULL,
                                NULL) == SOCKET_ERROR)
                        i++;
        }
        if (!GetQueuedCompletionStatusEx(*out, entries, 4, &removed, WSA_INFINITE, FALSE) &&
            GetLastError() == WAIT_TIMEOUT)
                i++;
        closesocket(s);
        WSACleanup();
        return (int)(b + us + uc + i + up + ip + lp + dp + n + ull + u64 + i32 + str[0] + cstr[0]) +
               (int)sizeof(sin6) + (int)FD_ISSET(0, &set) + c->count;
}
