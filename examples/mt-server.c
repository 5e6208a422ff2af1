/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * mt-server.c - "Multi-threaded server" from Microsoft's samples, on Linux.
 *
 * SERVER_THREAD_COUNT server threads share one completion port with one-shot level-triggered
 * registrations; per-socket contexts ride in the completion keys; a posted packet with
 * SERVER_EXIT_KEY tells the threads to leave, each passing it on.  CLIENT_THREAD_COUNT client
 * threads each send CLIENT_LOOP_COUNT payloads.  Exit status 0 when all data arrived, every
 * accepted socket's registration was removed (REMOVE seen), no socket was ever handled by two
 * threads at once, and every context and thread is gone.
 */
#include "examples/common.h"

#define CLIENT_THREAD_COUNT 100
// The I/O completion port infrastructure ensures that the system isn't over-subscribed by
// ensuring server-side threads block if they exceed the number of logical processors.
#define SERVER_THREAD_COUNT 16
#define SERVER_DEQUEUE_COUNT 3
#define SERVER_EXIT_KEY ((ULONG_PTR)-1)

typedef struct SERVER_THREAD_CONTEXT {
        SERVER_CONTEXT *commonContext;
        pthread_mutex_t stateLock;
        UINT32 deregisterCount;
        BOOLEAN shouldExit;
} SERVER_THREAD_CONTEXT;

typedef enum SOCKET_TYPE { SOCKET_TYPE_LISTENER, SOCKET_TYPE_ACCEPT } SOCKET_TYPE;

typedef struct SOCKET_CONTEXT {
        SOCKET_TYPE socketType;
        SOCKET socket;
        atomic_int inUse; /* test addition: set while one thread handles the socket */
} SOCKET_CONTEXT;

static atomic_long g_sharedHandling; /* times a socket was handled by two threads at once */

static VOID CancelServerThreadsAsync(SERVER_THREAD_CONTEXT *serverThreadContext)
{
        pthread_mutex_lock(&serverThreadContext->stateLock);
        serverThreadContext->shouldExit = TRUE;
        pthread_mutex_unlock(&serverThreadContext->stateLock);
}

static VOID IndicateServerThreadExit(HANDLE ioCompletionPort)
{
        // Notify a server thread that it needs to exit. It can then notify the other threads
        // when it exits.
        //
        // If this fails, then server threads may hang, and this program will never terminate.
        // That is an unrecoverable error.
        if (!PostQueuedCompletionStatus(ioCompletionPort, 0, SERVER_EXIT_KEY, NULL)) {
                abort();
        }
}

static VOID DestroySocketContext(SOCKET_CONTEXT *socketContext)
{
        if (socketContext->socket != INVALID_SOCKET) {
                closesocket(socketContext->socket);
        }

        ExampleFree(socketContext);
}

static DWORD AcceptConnection(SOCKET listenSocket, SOCKET_CONTEXT **socketContextOut)
{
        DWORD errorCode;
        SOCKET_CONTEXT *socketContext = NULL;

        socketContext = (SOCKET_CONTEXT *)ExampleAlloc(sizeof(*socketContext));
        if (socketContext == NULL) {
                errorCode = ERROR_NOT_ENOUGH_MEMORY;
                goto Exit;
        }

        ZeroMemory(socketContext, sizeof(*socketContext));
        socketContext->socketType = SOCKET_TYPE_ACCEPT;
        socketContext->socket = accept(listenSocket, NULL, NULL);
        if (socketContext->socket == INVALID_SOCKET) {
                errorCode = GetLastError();
                goto Exit;
        }

        *socketContextOut = socketContext;
        socketContext = NULL;
        errorCode = ERROR_SUCCESS; /* FIX: the reference returns it uninitialized on success */

Exit:
        if (socketContext != NULL) {
                DestroySocketContext(socketContext);
        }

        return errorCode;
}

static void *ServerThreadRoutine(void *serverThreadContextPointer)
{
        DWORD errorCode;
        SERVER_THREAD_CONTEXT *serverThreadContext;
        HANDLE ioCompletionPort;
        // Accepting a connection requires two registrations: one to re-enable the listening
        // socket notification, and one to register the newly-accepted connection.
        SOCK_NOTIFY_REGISTRATION registrationBuffer[SERVER_DEQUEUE_COUNT * 2];
        UINT32 registrationCount;
        SOCK_NOTIFY_REGISTRATION *registration;
        OVERLAPPED_ENTRY notifications[SERVER_DEQUEUE_COUNT];
        UINT32 notificationCount;
        UINT32 events;
        SOCKET_CONTEXT *socketContext;
        SOCKET_CONTEXT *acceptedContext = NULL;
        BOOLEAN shouldExit;
        CHAR dataBuffer[512];
        ssize_t received;

        serverThreadContext = (SERVER_THREAD_CONTEXT *)serverThreadContextPointer;
        ioCompletionPort = serverThreadContext->commonContext->ioCompletionPort;

        // Boot-strap the loop process.
        registrationCount = 0;

        // Keep looping, processing notifications until exit has been requested.
        while (TRUE) {

                pthread_mutex_lock(&serverThreadContext->stateLock);
                shouldExit = serverThreadContext->shouldExit;
                pthread_mutex_unlock(&serverThreadContext->stateLock);
                if (shouldExit) {
                        errorCode = ERROR_SUCCESS;
                        goto Exit;
                }

                // Process notifications and re-register one-shot notifications that were
                // processed on a previous iteration.
                errorCode = ProcessSocketNotifications(
                        ioCompletionPort, registrationCount,
                        (registrationCount == 0) ? NULL : registrationBuffer, MAX_TIMEOUT,
                        RTL_NUMBER_OF(notifications), notifications, &notificationCount);

                // FIX: a timeout is not a failure: the registrations were applied and nothing
                // arrived.  The reference treats it as an error and stops the server.
                if (errorCode == WAIT_TIMEOUT) {
                        notificationCount = 0;
                        errorCode = ERROR_SUCCESS;
                }

                if (errorCode != ERROR_SUCCESS) {
                        goto Exit;
                }

                // Check whether any registrations failed, and attempt to clean up if they did.
                DWORD firstFailure = ERROR_SUCCESS;
                for (UINT32 i = 0; i < registrationCount; i += 1) {
                        registration = &registrationBuffer[i];
                        if (registration->registrationResult == ERROR_SUCCESS) {
                                continue;
                        }

                        // Preserve the first failure code.  FIX: the reference overwrites it
                        // with the result of the clean-up call below.
                        if (firstFailure == ERROR_SUCCESS) {
                                firstFailure = registration->registrationResult;
                        }

                        socketContext = (SOCKET_CONTEXT *)registration->completionKey;
                        if (socketContext->socketType == SOCKET_TYPE_LISTENER) {
                                continue;
                        }

                        // Best-effort de-registration. In case of failure, simply get rid of the
                        // socket and context.
                        registration->operation = SOCK_NOTIFY_OP_REMOVE;
                        DWORD removeError = ProcessSocketNotifications(ioCompletionPort, 1,
                                                                       registration, 0, 0, NULL,
                                                                       NULL);

                        if ((removeError != ERROR_SUCCESS) ||
                            (registration->registrationResult != ERROR_SUCCESS)) {
                                DestroySocketContext(socketContext);
                        }
                }
                if (firstFailure != ERROR_SUCCESS) {
                        PrintError(firstFailure);
                }

                // Process the notifications. Many will need to be re-enabled because they are
                // one-shot, so ensure that we can build that incrementally.
                registrationCount = 0;
                ZeroMemory(registrationBuffer, sizeof(registrationBuffer));

                for (UINT32 i = 0; i < notificationCount; i += 1) {
                        if (notifications[i].lpCompletionKey == SERVER_EXIT_KEY) {
                                // On exit, this thread will post the next exit message.
                                errorCode = ERROR_SUCCESS;
                                goto Exit;
                        }

                        socketContext = (SOCKET_CONTEXT *)notifications[i].lpCompletionKey;
                        events = SocketNotificationRetrieveEvents(&notifications[i]);

                        /* Test addition: one-shot registrations must never give one socket to
                         * two threads at once. */
                        if (atomic_exchange(&socketContext->inUse, 1) != 0) {
                                atomic_fetch_add(&g_sharedHandling, 1);
                        }

                        // Process the socket notification, taking socket-specific actions.
                        switch (socketContext->socketType) {
                        case SOCKET_TYPE_LISTENER:

                                // Perform an accept regardless of the notification. The only
                                // possible notifications are for available connections or error
                                // conditions. Any possible error conditions will be processed as
                                // part of the accept.
                                errorCode = AcceptConnection(socketContext->socket,
                                                             &acceptedContext);
                                if (errorCode == ERROR_SUCCESS) {
                                        // Register the accepted connection.
                                        registration = &registrationBuffer[registrationCount];
                                        registration->socket = acceptedContext->socket;
                                        registration->completionKey = acceptedContext;
                                        registration->eventFilter =
                                                SOCK_NOTIFY_REGISTER_EVENT_IN |
                                                SOCK_NOTIFY_REGISTER_EVENT_HANGUP;
                                        registration->operation = SOCK_NOTIFY_OP_ENABLE;
                                        registration->triggerFlags = SOCK_NOTIFY_TRIGGER_ONESHOT |
                                                                     SOCK_NOTIFY_TRIGGER_LEVEL;
                                        registrationCount += 1;
                                }

                                // Re-arm the existing listening socket registration.
                                registration = &registrationBuffer[registrationCount];
                                registration->socket = socketContext->socket;
                                registration->completionKey = socketContext;
                                registration->eventFilter = SOCK_NOTIFY_REGISTER_EVENT_IN;
                                registration->operation = SOCK_NOTIFY_OP_ENABLE;
                                registration->triggerFlags = SOCK_NOTIFY_TRIGGER_ONESHOT |
                                                             SOCK_NOTIFY_TRIGGER_LEVEL;
                                registrationCount += 1;
                                atomic_store(&socketContext->inUse, 0);
                                break;

                        case SOCKET_TYPE_ACCEPT:
                                // The registration was removed. Clean up the context.
                                if (events & SOCK_NOTIFY_EVENT_REMOVE) {
                                        pthread_mutex_lock(&serverThreadContext->stateLock);
                                        serverThreadContext->deregisterCount += 1;
                                        if (serverThreadContext->deregisterCount >=
                                            CLIENT_THREAD_COUNT) {
                                                serverThreadContext->shouldExit = TRUE;
                                        }
                                        pthread_mutex_unlock(&serverThreadContext->stateLock);

                                        DestroySocketContext(socketContext);
                                        continue;
                                }

                                registration = &registrationBuffer[registrationCount];

                                // If a hangup occurred, then remove the registration.
                                if (events & SOCK_NOTIFY_EVENT_HANGUP) {
                                        registration->eventFilter = 0;
                                        registration->operation = SOCK_NOTIFY_OP_REMOVE;
                                }

                                // Receive data.
                                if (events & (SOCK_NOTIFY_EVENT_IN | SOCK_NOTIFY_EVENT_ERR)) {
                                        received = recv(socketContext->socket, dataBuffer,
                                                        sizeof(dataBuffer), 0);
                                        if (received < 0) {
                                                registration->operation = SOCK_NOTIFY_OP_REMOVE;
                                                registration->eventFilter = 0;
                                        } else {
                                                atomic_fetch_add(&g_bytesReceived, received);
                                                /* FIX: the reference ORs ENABLE into a REMOVE
                                                 * when IN and HANGUP come together, making the
                                                 * invalid operation 5 (row 13). */
                                                if (registration->operation !=
                                                    SOCK_NOTIFY_OP_REMOVE) {
                                                        registration->operation =
                                                                SOCK_NOTIFY_OP_ENABLE;
                                                        registration->triggerFlags =
                                                                SOCK_NOTIFY_TRIGGER_ONESHOT |
                                                                SOCK_NOTIFY_TRIGGER_LEVEL;
                                                        registration->eventFilter =
                                                                SOCK_NOTIFY_REGISTER_EVENT_IN |
                                                                SOCK_NOTIFY_REGISTER_EVENT_HANGUP;
                                                }
                                        }
                                }

                                registration->socket = socketContext->socket;
                                registration->completionKey = socketContext;
                                registrationCount += 1;
                                atomic_store(&socketContext->inUse, 0);
                                break;

                        default:
                                errorCode = ERROR_INVALID_FUNCTION;
                                goto Exit;
                        }
                }
        }

Exit:
        // If an error occurred, then ensure the other threads know they should exit.
        if (errorCode != ERROR_SUCCESS) {
                PrintError(errorCode);
                CancelServerThreadsAsync(serverThreadContext);
        }

        // Wake a remaining server thread.
        IndicateServerThreadExit(ioCompletionPort);

        pthread_mutex_lock(&g_printLock);
        printf("Server thread %d exited\n", (int)gettid());
        pthread_mutex_unlock(&g_printLock);

        atomic_fetch_add(&g_threadsExited, 1);
        return (void *)(uintptr_t)errorCode;
}

static DWORD MultiThreadedTcpServer(void)
{
        DWORD errorCode;
        WSADATA wsaData;
        SERVER_THREAD_CONTEXT serverContext = { NULL, PTHREAD_MUTEX_INITIALIZER, 0, FALSE };
        SOCKET_CONTEXT listenContext = { 0 };
        SOCK_NOTIFY_REGISTRATION registration = { 0 };
        pthread_t serverThreads[SERVER_THREAD_COUNT];
        UINT32 serverThreadCount = 0;

        if (WSAStartup(WINSOCK_VERSION, &wsaData) != 0) {
                errorCode = GetLastError();
                PrintError(errorCode);
                return errorCode;
        }

        listenContext.socket = INVALID_SOCKET;
        listenContext.socketType = SOCKET_TYPE_LISTENER;
        errorCode = CreateServerContext(&serverContext.commonContext);
        if (errorCode != ERROR_SUCCESS) {
                goto Exit;
        }

        // Register the listening socket with the I/O completion port so the server threads are
        // notified of incoming connections.
        listenContext.socket = serverContext.commonContext->listenerSocket;
        registration.completionKey = &listenContext;
        registration.eventFilter = SOCK_NOTIFY_REGISTER_EVENT_IN;
        registration.operation = SOCK_NOTIFY_OP_ENABLE;
        /* FIX: the reference registers the listener PERSISTENT here (the threads re-arm it
         * ONESHOT later), so one pending connection can reach several threads at once; with a
         * blocking listener all but one then block in accept(), possibly forever. */
        registration.triggerFlags = SOCK_NOTIFY_TRIGGER_LEVEL | SOCK_NOTIFY_TRIGGER_ONESHOT;
        registration.socket = listenContext.socket;
        errorCode = ProcessSocketNotifications(serverContext.commonContext->ioCompletionPort, 1,
                                               &registration, 0, 0, NULL, NULL);

        if (errorCode != ERROR_SUCCESS) {
                goto Exit;
        }
        /* FIX: the reference never looks at the registration's own result. */
        if (registration.registrationResult != ERROR_SUCCESS) {
                errorCode = registration.registrationResult;
                goto Exit;
        }

        // Create the server threads. These are likely over-subscribed, but the I/O completion
        // port ensures that they scale appropriately.
        while (serverThreadCount < RTL_NUMBER_OF(serverThreads)) {
                atomic_fetch_add(&g_threadsStarted, 1);
                if (pthread_create(&serverThreads[serverThreadCount], NULL, ServerThreadRoutine,
                                   &serverContext) != 0) {
                        atomic_fetch_sub(&g_threadsStarted, 1);
                        errorCode = ERROR_NOT_ENOUGH_MEMORY;
                        goto Exit;
                }
                serverThreadCount += 1; /* FIX: the reference never counts, and loops forever */
        }

        // Create the client threads, which are badly over-subscribed.
        for (UINT32 i = 0; i < CLIENT_THREAD_COUNT; i += 1) {
                errorCode = CreateClientThread(CLIENT_LOOP_COUNT);
                if (errorCode != ERROR_SUCCESS) {
                        goto Exit;
                }
        }

        errorCode = ERROR_SUCCESS;

Exit:
        if (errorCode != ERROR_SUCCESS) {
                PrintError(errorCode);

                // In case of error, ensure that all server threads know to exit.
                if (serverContext.commonContext != NULL) {
                        CancelServerThreadsAsync(&serverContext);
                        IndicateServerThreadExit(serverContext.commonContext->ioCompletionPort);
                }
        }

        if (serverThreadCount > 0) {
                printf("Waiting for %u server threads to exit...\n", serverThreadCount);
                for (UINT32 i = 0; i < serverThreadCount; i += 1) {
                        void *threadResult;

                        pthread_join(serverThreads[i], &threadResult);
                        if ((uintptr_t)threadResult != ERROR_SUCCESS && errorCode == ERROR_SUCCESS)
                                errorCode = (DWORD)(uintptr_t)threadResult;
                }
        }

        JoinClientThreads();
        if (serverContext.commonContext != NULL) {
                DestroyServerContext(serverContext.commonContext);
        }

        WSACleanup();
        if (serverContext.deregisterCount != CLIENT_THREAD_COUNT) {
                printf("only %u of %u connections were deregistered\n",
                       serverContext.deregisterCount, CLIENT_THREAD_COUNT);
                errorCode = ERROR_GEN_FAILURE;
        }
        if (atomic_load(&g_sharedHandling)) {
                printf("a socket was handled by two threads at once %ld time(s)\n",
                       atomic_load(&g_sharedHandling));
                errorCode = ERROR_GEN_FAILURE;
        }
        return errorCode;
}

int main(void)
{
        DWORD errorCode = MultiThreadedTcpServer();
        int status = ExampleReport("mt-server", CLIENT_THREAD_COUNT * CLIENT_LOOP_COUNT * 4);

        return errorCode == ERROR_SUCCESS ? status : 1;
}
