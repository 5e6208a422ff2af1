/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * monitor.h - socknotifyctl monitor (monitor.c).
 */
#pragma once

#include <stdbool.h>

/* Runs `socknotifyctl monitor` with its arguments (argv[0] is "monitor") until Ctrl-C or the
 * daemon ends it; socket_path and json are the options given before the verb.  Returns the exit
 * status. */
int ctl_monitor(int argc, char **argv, const char *socket_path, bool json);
