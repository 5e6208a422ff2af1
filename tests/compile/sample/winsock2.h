/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/* winsock2.h for tests/compile/reference-sample.cpp: the Win32 names come from socknotify. */
#pragma once
#include <socknotify/winsock.h>
