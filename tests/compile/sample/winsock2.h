/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/* winsock2.h for the reference's sample code (SN_REFERENCE_SAMPLE in tests/check-headers.sh): the Win32 names come from socknotify. */
#pragma once
#include <socknotify/winsock.h>
