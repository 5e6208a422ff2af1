/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * lastgood.c - the last good settings: what the configuration file set when it was last read
 * without error, kept where the next image of the daemon finds it.  A start that takes over
 * clients (a restart, a restore after a crash, a re-exec) and finds the file bad runs on them:
 * a bad file never stops the service nor changes the limits its clients were served under.
 * (A fresh start, with no clients to take over, refuses a bad file: main.c.)
 *
 * They travel as a configuration text (settings_format(): the file's own JSON, read back with
 * the file's own parser) in a sealed memfd, independent of the state formats:
 *
 *   the descriptor store  named "snlive.settings", replaced (FDSTOREREMOVE=1, then
 *                         FDSTORE=1) at start and at every reload that read the file; the next
 *                         start gets it with LISTEN_FDS (fdstore_take() sets it aside, never
 *                         takes it for a listening socket nor closes it as garbage).  The name
 *                         is under "snlive." so that an older daemon started on this store (a
 *                         downgrade), which takes any name it does not know for a listening
 *                         socket and then refuses to start, takes it for an entry of its
 *                         predecessor's live store and removes it.  One entry of the store is
 *                         kept for it (srv->fdstore_max counts one less).  Between the removal
 *                         and the store no copy exists: a crash in those microseconds starts the
 *                         next daemon on the defaults if the file is bad then too.
 *   a re-exec             a new memfd without close-on-exec, its number in the environment
 *                         (SOCKNOTIFY_SETTINGS_FD, taken out at start): an older binary, which
 *                         knows no such option, ignores it and takes the state all the same.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "common/macro.h"
#include "daemon/base/settings.h"
#include "daemon/objects/world.h"
#include "daemon/restore/fdstore.h"
#include "daemon/service/lastgood.h"

int lastgood_memfd(const struct settings *s, bool cloexec)
{
        char *text = settings_format(s);
        size_t len, off = 0;
        int fd, r = 0;

        if (!text)
                return -ENOMEM;
        len = strlen(text);
        fd = memfd_create("socknotifyd-settings",
                          MFD_ALLOW_SEALING | (cloexec ? MFD_CLOEXEC : 0u));
        if (fd < 0)
                r = -errno;
        while (!r && off < len) {
                ssize_t w = write(fd, text + off, len - off);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        r = w < 0 ? -errno : -EIO;
                else
                        off += (size_t)w;
        }
        /* Read only from here on, by whoever gets it. */
        if (!r && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
                                                 F_SEAL_SEAL) < 0)
                r = -errno;
        free(text);
        if (r < 0) {
                if (fd >= 0)
                        close(fd);
                return r;
        }
        return fd;
}

int lastgood_keep(struct server *srv, const struct settings *file)
{
        char line[96];
        int fd, r;

        srv->file_settings = *file;
        if (!srv->lastgood_stored)
                return 0;
        fd = lastgood_memfd(file, true);
        if (fd < 0)
                return fd;
        sd_notify(0, "FDSTOREREMOVE=1\nFDNAME=" FDSTORE_SETTINGS_NAME);
        snprintf(line, sizeof(line), "FDSTORE=1\nFDPOLL=0\nFDNAME=%s", FDSTORE_SETTINGS_NAME);
        r = sd_pid_notify_with_fds(0, 0, line, &fd, 1);
        close(fd);
        return r > 0 ? 0 : r < 0 ? r : -ENOTCONN;
}
