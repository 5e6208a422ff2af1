/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * udp-edge.c - "Edge-triggered UDP server" from Microsoft's samples, on Linux.
 *
 * The UDP socket is registered edge-triggered for IN before it is bound, so no datagram can
 * arrive unseen; after each notification it is drained until WSAEWOULDBLOCK, as an edge is only
 * seen again once the condition has stopped holding.  No HANGUP ever comes for UDP.  A client
 * thread sends CLIENT_LOOP_COUNT datagrams.  Exit status 0 when all arrived, the registration was
 * removed, and every context and thread is gone.
 */
#include "examples/common.h"

static DWORD SimpleEdgeTriggeredSample(void)
{
        DWORD errorCode;
        WSADATA wsaData;
        SOCKET serverSocket = INVALID_SOCKET;
        SOCKET currentSocket;
        HANDLE ioCompletionPort = NULL;
        struct sockaddr_in serverAddress = { 0 };
        socklen_t addressLength = sizeof(serverAddress);
        unsigned long nonBlocking = 1;
        SOCK_NOTIFY_REGISTRATION registration = { 0 };
        OVERLAPPED_ENTRY notification;
        ULONG notificationCount;
        UINT32 events;
        CHAR dataBuffer[512];
        UINT32 datagramCount;
        ssize_t receiveResult;

        if (WSAStartup(WINSOCK_VERSION, &wsaData) != 0) {
                errorCode = GetLastError();
                PrintError(errorCode);
                return errorCode;
        }

        ioCompletionPort = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        if (ioCompletionPort == NULL) {
                errorCode = GetLastError();
                goto Exit;
        }

        serverSocket = socket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
        if (serverSocket == INVALID_SOCKET) {
                errorCode = GetLastError();
                goto Exit;
        }

        // Register the server UDP socket before binding to a port to ensure data doesn't become
        // present before the registration. Otherwise, the server could miss the notification and
        // hang.
        //
        // Edge-triggered is not recommended with one-shot due to the difficulty in re-registering.
        registration.completionKey = (PVOID)serverSocket;
        registration.eventFilter = SOCK_NOTIFY_REGISTER_EVENT_IN;
        registration.operation = SOCK_NOTIFY_OP_ENABLE;
        registration.triggerFlags = SOCK_NOTIFY_TRIGGER_EDGE;
        registration.socket = serverSocket;
        errorCode = ProcessSocketNotifications(ioCompletionPort, 1, &registration, 0, 0, NULL,
                                               NULL);
        if (errorCode != ERROR_SUCCESS) {
                goto Exit;
        }

        if (registration.registrationResult != ERROR_SUCCESS) {
                errorCode = registration.registrationResult;
                goto Exit;
        }

        // Use non-blocking sockets with edge-triggered notifications, since the data must be
        // drained before a rising edge can be observed again.
        if (ioctlsocket(serverSocket, FIONBIO, &nonBlocking) != 0) {
                errorCode = WSAGetLastError(); /* FIX: not ioctlsocket's return value */
                goto Exit;
        }

        serverAddress.sin_family = AF_INET;
        serverAddress.sin_addr.s_addr = SERVER_ADDRESS;
        serverAddress.sin_port = 0; /* FIX: see g_serverPort */
        if (bind(serverSocket, (struct sockaddr *)&serverAddress, sizeof(serverAddress)) != 0) {
                errorCode = GetLastError();
                goto Exit;
        }
        getsockname(serverSocket, (struct sockaddr *)&serverAddress, &addressLength);
        g_serverPort = serverAddress.sin_port;

        // Create the client.  FIX: the reference assumes a UDP variant of CreateClientThread;
        // this one exists.
        errorCode = CreateClientThreadOfType(CLIENT_LOOP_COUNT, SOCK_DGRAM);
        if (errorCode != ERROR_SUCCESS) {
                goto Exit;
        }

        // Receive the packets.
        datagramCount = 0;
        while (datagramCount < CLIENT_LOOP_COUNT) {

                printf("Waiting for client action...\n");

                if (!GetQueuedCompletionStatusEx(ioCompletionPort, &notification, 1,
                                                 &notificationCount, MAX_TIMEOUT, FALSE)) {
                        errorCode = GetLastError();
                        goto Exit;
                }

                // The completion key is the socket we supplied above.
                events = SocketNotificationRetrieveEvents(&notification);

                currentSocket = (SOCKET)notification.lpCompletionKey;
                if (events & SOCK_NOTIFY_EVENT_ERR) {
                        // Obtain a more detailed error code by issuing a non-blocking receive.
                        recv(currentSocket, dataBuffer, sizeof(dataBuffer), 0);
                        errorCode = GetLastError();
                        goto Exit;
                }

                if ((events & SOCK_NOTIFY_EVENT_IN) == 0) {
                        continue;
                }

                // Keep looping receiving data until the read would block, otherwise the edge
                // may not have been reset.
                while (TRUE) {
                        receiveResult = recv(currentSocket, dataBuffer, sizeof(dataBuffer), 0);
                        if (receiveResult < 0) {
                                errorCode = GetLastError();
                                if (errorCode != WSAEWOULDBLOCK) {
                                        goto Exit;
                                }

                                break;
                        }

                        datagramCount += 1;
                        atomic_fetch_add(&g_bytesReceived, receiveResult);
                        printf("Received client data.\n");
                }
        }

        printf("Received all data. Exiting... \n");
        errorCode = ERROR_SUCCESS;

Exit:
        if (errorCode != ERROR_SUCCESS) {
                PrintError(errorCode);
        }

        if (serverSocket != INVALID_SOCKET) {
                if (ioCompletionPort != NULL) {
                        DWORD removeError = DeregisterAndWait(ioCompletionPort, serverSocket);
                        if (removeError != ERROR_SUCCESS && errorCode == ERROR_SUCCESS)
                                errorCode = removeError;
                }

                closesocket(serverSocket);
        }

        if (ioCompletionPort != NULL) {
                g_registrationsLeft = ExampleDaemonRegistrations();
                CloseHandle(ioCompletionPort);
        }

        JoinClientThreads();
        WSACleanup();
        return errorCode;
}

int main(void)
{
        DWORD errorCode = SimpleEdgeTriggeredSample();
        int status = ExampleReport("udp-edge", CLIENT_LOOP_COUNT * 4);

        return errorCode == ERROR_SUCCESS ? status : 1;
}
