/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * common.h - the "Common code" of Microsoft's socket state notification samples, ported.
 *
 * Kept as close to the reference as Linux allows: the Windows names come from
 * <socknotify/winsock.h>; threads, locks and printing use pthreads and stdio.  Fixes of the
 * reference's defects are marked "FIX" and listed in examples/README.md.  The EXAMPLE_*
 * counters are additions that let `make check` assert the outcome of each scenario.
 */
#pragma once

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <socknotify.h>
#include <socknotify/winsock.h>

#define SERVER_ADDRESS 0x0100007f /* localhost */
#define MAX_TIMEOUT ExampleMaxTimeout() /* the reference: 1000 */
#define CLIENT_LOOP_COUNT 10

/*
 * For tests, not in the reference: SOCKNOTIFY_EXAMPLE_TIMEOUT_MS=N (1 to 3600000) replaces the
 * reference's MAX_TIMEOUT of one second, the longest a server thread waits for a notification.
 * A test that restarts the daemon in the middle of a scenario on a busy machine needs more: a
 * wait parked in the daemon spans the restart.
 */
static inline DWORD ExampleMaxTimeout(void)
{
        const char *s = getenv("SOCKNOTIFY_EXAMPLE_TIMEOUT_MS");
        char *end;
        unsigned long v;

        if (!s || !*s)
                return 1000;
        v = strtoul(s, &end, 10);
        return *end || v == 0 || v > 3600000 ? 1000 : (DWORD)v;
}

/* FIX: the reference's SERVER_PORT is a placeholder (0xffff, and not in network order).  The
 * server binds port 0 and publishes the port the kernel chose here. */
static unsigned short g_serverPort;

typedef struct SERVER_CONTEXT {
        HANDLE ioCompletionPort;
        SOCKET listenerSocket;
} SERVER_CONTEXT;

typedef struct CLIENT_CONTEXT {
        UINT32 transmitCount;
        int socketType; /* SOCK_STREAM, or SOCK_DGRAM for the UDP scenario */
} CLIENT_CONTEXT;

static pthread_mutex_t g_printLock = PTHREAD_MUTEX_INITIALIZER;

/* ---- accounting for the tests (not in the reference) ---------------------------------- */
static atomic_long g_contextsAllocated, g_contextsFreed;
static atomic_long g_threadsStarted, g_threadsExited;
static atomic_long g_bytesReceived;
static long g_registrationsLeft = -1; /* measured before the port is closed */
static pthread_t g_clientThreads[256];
static atomic_int g_clientThreadCount;

static void *ExampleAlloc(size_t size)
{
        void *p = malloc(size);

        if (p)
                atomic_fetch_add(&g_contextsAllocated, 1);
        return p;
}

static inline void ExampleFree(void *p)
{
        if (p)
                atomic_fetch_add(&g_contextsFreed, 1);
        free(p);
}

/* Registrations the daemon holds right now (its status document), or -1. */
static inline long ExampleDaemonRegistrations(void)
{
        sn_conn_t *conn;
        char *json, *p;
        long n = -1;

        if (sn_conn_open(NULL, &conn) < 0)
                return -1;
        if (sn_conn_status(conn, &json) == 0) {
                p = strstr(json, "\"registrations\":");
                if (p)
                        n = strtol(p + strlen("\"registrations\":"), NULL, 10);
                free(json);
        }
        sn_conn_close(conn);
        return n;
}

/* Prints the outcome and returns the exit status: 0 when every check holds. */
static inline int ExampleReport(const char *name, long expectedBytes)
{
        long regs = g_registrationsLeft;
        int ok = atomic_load(&g_bytesReceived) == expectedBytes &&
                 atomic_load(&g_contextsAllocated) == atomic_load(&g_contextsFreed) &&
                 atomic_load(&g_threadsStarted) == atomic_load(&g_threadsExited) && regs == 0;

        printf("%s: received %ld of %ld bytes; contexts %ld allocated, %ld freed; threads %ld "
               "started, %ld exited; registrations left before the port closed: %ld => %s\n",
               name, atomic_load(&g_bytesReceived), expectedBytes,
               atomic_load(&g_contextsAllocated), atomic_load(&g_contextsFreed),
               atomic_load(&g_threadsStarted), atomic_load(&g_threadsExited), regs,
               ok ? "OK" : "FAILED");
        return ok ? 0 : 1;
}

static inline void JoinClientThreads(void)
{
        int n = atomic_load(&g_clientThreadCount);

        for (int i = 0; i < n; i++)
                pthread_join(g_clientThreads[i], NULL);
}

/* ---- the reference's common code ---------------------------------------------------- */

static inline VOID DestroyServerContext(SERVER_CONTEXT *serverContext)
{
        if (serverContext->listenerSocket != INVALID_SOCKET) {
                closesocket(serverContext->listenerSocket);
        }

        /* Test addition: what the port still holds once the sockets are closed (rule L1 drops
         * a registration on closesocket, without a REMOVE). */
        if (serverContext->ioCompletionPort != NULL) {
                g_registrationsLeft = ExampleDaemonRegistrations();
        }

        if (serverContext->ioCompletionPort != NULL) {
                CloseHandle(serverContext->ioCompletionPort);
        }

        ExampleFree(serverContext);
}

static inline DWORD CreateServerContext(SERVER_CONTEXT **serverContext)
{
        DWORD errorCode;
        SERVER_CONTEXT *localContext = NULL;
        struct sockaddr_in serverAddress = { 0 };
        socklen_t addressLength = sizeof(serverAddress);

        localContext = (SERVER_CONTEXT *)ExampleAlloc(sizeof(*localContext));
        if (localContext == NULL) {
                errorCode = ERROR_NOT_ENOUGH_MEMORY;
                goto Exit;
        }

        ZeroMemory(localContext, sizeof(*localContext));
        localContext->listenerSocket = INVALID_SOCKET;

        localContext->ioCompletionPort = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        if (localContext->ioCompletionPort == NULL) {
                errorCode = GetLastError();
                goto Exit;
        }

        localContext->listenerSocket = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
        if (localContext->listenerSocket == INVALID_SOCKET) {
                errorCode = GetLastError();
                goto Exit;
        }

        serverAddress.sin_family = AF_INET;
        serverAddress.sin_addr.s_addr = SERVER_ADDRESS;
        serverAddress.sin_port = 0; /* FIX: let the kernel choose (see g_serverPort) */
        if (bind(localContext->listenerSocket, (struct sockaddr *)&serverAddress,
                 sizeof(serverAddress)) != 0) {
                errorCode = GetLastError();
                goto Exit;
        }
        getsockname(localContext->listenerSocket, (struct sockaddr *)&serverAddress,
                    &addressLength);
        g_serverPort = serverAddress.sin_port;

        /* FIX: a backlog of 0 cannot hold the 100 clients of the multi-threaded scenario. */
        if (listen(localContext->listenerSocket, SOMAXCONN) != 0) {
                errorCode = GetLastError();
                goto Exit;
        }

        *serverContext = localContext;
        localContext = NULL;
        errorCode = ERROR_SUCCESS;

Exit:
        if (localContext != NULL) {
                DestroyServerContext(localContext);
        }

        return errorCode;
}

/*
 * For tests, not in the reference: with SOCKNOTIFY_EXAMPLE_PAUSE=FILE every client thread stops
 * halfway through its messages until FILE exists (each prints "paused N", N counting the client
 * threads paused so far), so that a test can restart or kill the daemon in the middle of a
 * scenario: server threads waiting in the daemon, registrations armed, data half sent.
 */
static inline void ExampleMidpoint(void)
{
        static atomic_int paused;
        const char *file = getenv("SOCKNOTIFY_EXAMPLE_PAUSE");

        if (!file)
                return;
        pthread_mutex_lock(&g_printLock);
        printf("paused %d\n", atomic_fetch_add(&paused, 1) + 1);
        fflush(stdout);
        pthread_mutex_unlock(&g_printLock);
        while (access(file, F_OK) != 0)
                usleep(10000);
}

// Create a socket, connect to the server, send transmitCount copies of the
// payload, then disconnect.
static void *ClientThreadRoutine(void *clientContextPointer)
{
        const UINT32 payload = 0xdeadbeef;
        CLIENT_CONTEXT *clientContext = (CLIENT_CONTEXT *)clientContextPointer;
        int type = clientContext->socketType;

        struct sockaddr_in serverAddress = { 0 };
        SOCKET clientSocket = socket(AF_INET, type, type == SOCK_DGRAM ? IPPROTO_UDP : IPPROTO_TCP);
        if (clientSocket == INVALID_SOCKET) {
                goto Exit;
        }

        serverAddress.sin_family = AF_INET;
        serverAddress.sin_addr.s_addr = SERVER_ADDRESS;
        serverAddress.sin_port = g_serverPort;
        if (connect(clientSocket, (struct sockaddr *)&serverAddress, sizeof(serverAddress)) != 0) {
                goto Exit;
        }

        for (UINT32 Index = 0; Index < clientContext->transmitCount; Index += 1) {
                if (Index == clientContext->transmitCount / 2) {
                        ExampleMidpoint();
                }
                if (send(clientSocket, (const char *)&payload, sizeof(payload), 0) < 0) {
                        goto Exit;
                }
        }

        if (type == SOCK_STREAM && shutdown(clientSocket, SD_BOTH) != 0) {
                goto Exit;
        }

Exit:
        if (clientSocket != INVALID_SOCKET) {
                closesocket(clientSocket); /* FIX: the reference closes INVALID_SOCKET */
        }

        ExampleFree(clientContext);
        atomic_fetch_add(&g_threadsExited, 1);

        return NULL;
}

static inline DWORD CreateClientThreadOfType(UINT32 transmitCount, int socketType)
{
        DWORD errorCode = ERROR_SUCCESS;
        CLIENT_CONTEXT *clientContext = NULL;
        int slot;

        clientContext = (CLIENT_CONTEXT *)ExampleAlloc(sizeof(*clientContext));
        if (clientContext == NULL) {
                errorCode = ERROR_NOT_ENOUGH_MEMORY;
                goto Exit;
        }

        ZeroMemory(clientContext, sizeof(*clientContext));
        clientContext->transmitCount = transmitCount;
        clientContext->socketType = socketType;

        /* pthreads instead of CreateThread; threads are joined (JoinClientThreads) so that
         * the tests can check that every one exited. */
        slot = atomic_fetch_add(&g_clientThreadCount, 1);
        atomic_fetch_add(&g_threadsStarted, 1);
        if (slot >= (int)RTL_NUMBER_OF(g_clientThreads) ||
            pthread_create(&g_clientThreads[slot], NULL, ClientThreadRoutine, clientContext) != 0) {
                atomic_fetch_sub(&g_clientThreadCount, 1);
                atomic_fetch_sub(&g_threadsStarted, 1);
                errorCode = ERROR_NOT_ENOUGH_MEMORY;
                goto Exit;
        }

        clientContext = NULL;

Exit:
        if (clientContext != NULL) {
                ExampleFree(clientContext);
        }

        return errorCode;
}

static inline DWORD CreateClientThread(UINT32 transmitCount)
{
        return CreateClientThreadOfType(transmitCount, SOCK_STREAM);
}

static inline VOID PrintError(DWORD errorCode)
{
        pthread_mutex_lock(&g_printLock);
        printf("Server thread %d encountered an error %u.\n", (int)gettid(), (unsigned)errorCode);
        pthread_mutex_unlock(&g_printLock);
}

// This routine must be used only if a single socket is registered.
static inline DWORD DeregisterAndWait(HANDLE ioCompletionPort, SOCKET socket)
{
        DWORD errorCode;
        SOCK_NOTIFY_REGISTRATION registration = { 0 };
        OVERLAPPED_ENTRY notification;
        UINT32 notificationCount;

        // Keep looping until the registration is removed, or a timeout is hit.
        while (TRUE) {

                registration.operation = SOCK_NOTIFY_OP_REMOVE;
                registration.socket = socket;
                errorCode = ProcessSocketNotifications(ioCompletionPort, 1, &registration,
                                                       MAX_TIMEOUT, 1, &notification,
                                                       &notificationCount);

                if (errorCode != ERROR_SUCCESS) {
                        goto Exit;
                }

                if (registration.registrationResult != ERROR_SUCCESS) {
                        errorCode = registration.registrationResult;
                        goto Exit;
                }

                // Drops all non-removal notifications. Must be used only
                // if a single socket is registered.
                if (SocketNotificationRetrieveEvents(&notification) & SOCK_NOTIFY_EVENT_REMOVE) {
                        break;
                }
        }

Exit:
        return errorCode;
}
