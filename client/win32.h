/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * win32.h - internals of the Win32 layer.
 */
#pragma once

#include "client/client.h"
#include "socknotify/winsock.h"

enum sn_w32_ctx {
        SN_W32_SOCKET, /* a plain socket call failed */
        SN_W32_CALL,   /* a completion-port call failed */
        SN_W32_ENTRY,  /* one registration of ProcessSocketNotifications failed */
        SN_W32_PSN,    /* a ProcessSocketNotifications call failed as a whole: WSAE* only */
};

/* The Win32 code of an errno value (sign ignored) in a context; ERROR_GEN_FAILURE if none
 * (WSAENETDOWN for SN_W32_PSN). */
DWORD sn__w32_map(int err, enum sn_w32_ctx ctx);
