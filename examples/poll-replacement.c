/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * poll-replacement.c - "Simple replacement for polling" from Microsoft's samples, on Linux.
 *
 * Single-threaded, one persistent level-triggered registration (IN | HANGUP) on an accepted
 * TCP connection, notifications dequeued with GetQueuedCompletionStatusEx.  A client thread
 * sends CLIENT_LOOP_COUNT 4-byte payloads and disconnects.  Exit status 0 when all data arrived,
 * the registration was removed, and every context and thread is gone.
 */
#include "examples/common.h"

static DWORD SimplePollReplacement(void)
{
        DWORD errorCode;
        WSADATA wsaData;
        SERVER_CONTEXT *serverContext = NULL;
        SOCKET tcpAcceptSocket = INVALID_SOCKET;
        unsigned long nonBlocking = 1;
        SOCKET currentSocket;
        SOCK_NOTIFY_REGISTRATION registration = { 0 };
        OVERLAPPED_ENTRY notification;
        ULONG notificationCount;
        UINT32 events;
        CHAR dataBuffer[512];
        ssize_t received;

        if (WSAStartup(WINSOCK_VERSION, &wsaData) != 0) {
                errorCode = GetLastError();
                PrintError(errorCode);
                return errorCode;
        }

        errorCode = CreateServerContext(&serverContext);
        if (errorCode != ERROR_SUCCESS) {
                goto Exit;
        }

        errorCode = CreateClientThread(CLIENT_LOOP_COUNT);
        if (errorCode != ERROR_SUCCESS) {
                goto Exit;
        }

        tcpAcceptSocket = accept(serverContext->listenerSocket, NULL, NULL);
        if (tcpAcceptSocket == INVALID_SOCKET) {
                errorCode = GetLastError();
                goto Exit;
        }

        if (ioctlsocket(tcpAcceptSocket, FIONBIO, &nonBlocking) != 0) {
                errorCode = GetLastError();
                goto Exit;
        }

        // Register the accepted connection.
        registration.completionKey = (PVOID)tcpAcceptSocket;
        registration.eventFilter = SOCK_NOTIFY_REGISTER_EVENT_IN | SOCK_NOTIFY_REGISTER_EVENT_HANGUP;
        registration.operation = SOCK_NOTIFY_OP_ENABLE;
        registration.triggerFlags = SOCK_NOTIFY_TRIGGER_LEVEL;
        registration.socket = tcpAcceptSocket;
        errorCode = ProcessSocketNotifications(serverContext->ioCompletionPort, 1, &registration, 0,
                                               0, NULL, NULL);

        // Make sure all registrations were processed.
        if (errorCode != ERROR_SUCCESS) {
                goto Exit;
        }

        // Make sure each registration was successful.
        if (registration.registrationResult != ERROR_SUCCESS) {
                errorCode = registration.registrationResult;
                goto Exit;
        }

        // Keep receiving data until the client disconnects.
        while (TRUE) {

                printf("Waiting for client action...\n");

                if (!GetQueuedCompletionStatusEx(serverContext->ioCompletionPort, &notification, 1,
                                                 &notificationCount, MAX_TIMEOUT, FALSE)) {
                        errorCode = GetLastError();
                        goto Exit;
                }

                // The completion key is the socket we supplied above.
                //
                // The events are stored in the number-of-bytes-received field.
                events = SocketNotificationRetrieveEvents(&notification);

                currentSocket = (SOCKET)notification.lpCompletionKey;
                if (events & SOCK_NOTIFY_EVENT_IN) {

                        // We don't check for a 0-size receive because we subscribed to
                        // hang-up notifications.
                        received = recv(currentSocket, dataBuffer, sizeof(dataBuffer), 0);
                        if (received < 0) {
                                errorCode = GetLastError();
                                goto Exit;
                        }

                        atomic_fetch_add(&g_bytesReceived, received);
                        printf("Received client data.\n");
                }

                if (events & SOCK_NOTIFY_EVENT_HANGUP) {
                        printf("Client hung up. Exiting. \n");
                        break;
                }

                if (events & SOCK_NOTIFY_EVENT_ERR) {
                        printf("The socket was ungracefully reset or another error occurred. "
                               "Exiting.\n");
                        // Obtain a more detailed error code by issuing a non-blocking receive.
                        recv(currentSocket, dataBuffer, sizeof(dataBuffer), 0);
                        errorCode = GetLastError();
                        goto Exit;
                }
        }

        errorCode = ERROR_SUCCESS;

Exit:
        if (errorCode != ERROR_SUCCESS) {
                PrintError(errorCode);
        }

        if (serverContext != NULL) {
                if (tcpAcceptSocket != INVALID_SOCKET) {
                        DWORD removeError = DeregisterAndWait(serverContext->ioCompletionPort,
                                                              tcpAcceptSocket);
                        /* FIX: the reference ignores a failed deregistration. */
                        if (removeError != ERROR_SUCCESS) {
                                PrintError(removeError);
                                if (errorCode == ERROR_SUCCESS)
                                        errorCode = removeError;
                        }
                }

                DestroyServerContext(serverContext);
        }

        if (tcpAcceptSocket != INVALID_SOCKET) {
                closesocket(tcpAcceptSocket);
        }

        JoinClientThreads();
        WSACleanup();
        return errorCode;
}

int main(void)
{
        DWORD errorCode = SimplePollReplacement();
        int status = ExampleReport("poll-replacement", CLIENT_LOOP_COUNT * 4);

        return errorCode == ERROR_SUCCESS ? status : 1;
}
