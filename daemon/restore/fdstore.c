/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * fdstore.c - what a previous daemon left in the service manager's descriptor store, taken
 * back at start.
 *
 * While it runs under a service manager that keeps a store for it (NOTIFY_SOCKET set, and
 * FDSTORE naming the store's size, as systemd >= 254 sets it and our units set it for older
 * ones), the daemon keeps its state there at every moment (journal.c): "snjournal.GEN", the
 * journal, and "snlive.GEN.K", the boxes holding every descriptor the journal names.  An
 * orderly stop only marks the journal as left in order and exits; a crash leaves it as it was.
 * Either way the next start finds the newest generation's journal, reads its boxes (each
 * message names, for every descriptor it carries, the record that holds it) and hands both to
 * restore.c.  The boxes are only peeked at, so that a daemon that dies while it restores
 * leaves the store as it found it; the previous generation's entries are removed once ours
 * are stored (fdstore_forget_previous()).
 *
 * Also kept: "snlive.settings", the last good settings (lastgood.c), set aside for main.c.
 * Entries of older releases ("snstate", "snmap", "snbox.K": a stop-time handover no longer
 * made) are closed and removed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "common/fdmsg.h"
#include "common/log.h"
#include "common/macro.h"
#include "daemon/restore/fdstore.h"
#include "daemon/restore/restore.h"
#include "daemon/state/journal.h"

uint32_t fdstore_capacity(void)
{
        const char *notify = getenv("NOTIFY_SOCKET"), *env = getenv("FDSTORE");
        char *end;
        unsigned long v;

        if (!notify || !*notify || !env || !*env)
                return 0;
        errno = 0;
        v = strtoul(env, &end, 10);
        if (errno || *end || v > UINT32_MAX)
                return 0;
        return (uint32_t)v;
}

static void forget(const char *name)
{
        char line[96];

        snprintf(line, sizeof(line), "FDSTOREREMOVE=1\nFDNAME=%s", name);
        sd_notify(0, line);
}

void fdstore_forget_gen(uint32_t gen, uint32_t nboxes)
{
        char name[64];

        if (!fdstore_capacity())
                return;
        for (uint32_t k = 0; k < nboxes; k++) {
                snprintf(name, sizeof(name), "snlive.%u.%u", gen, k);
                forget(name);
        }
        snprintf(name, sizeof(name), "snjournal.%u", gen);
        forget(name);
}

/* ---- taking back -------------------------------------------------------------------------- */

/* What the previous daemon left: its newest journal and the descriptors of its boxes, and the
 * names to remove once ours are stored. */
static struct {
        uint8_t *journal;
        size_t size;
        struct restore_fds fds;
        bool have;
        char **names;
        uint32_t nnames;
        uint32_t gen;
        int settings_fd; /* snlive.settings, or -1 */
} prev = { .settings_fd = -1, .fds = { .keep_fd = -1 } };

static void prev_name(const char *name)
{
        char **v = realloc(prev.names, (prev.nnames + 1) * sizeof(*v));

        if (v && (v[prev.nnames] = strdup(name)))
                prev.nnames++;
        if (v)
                prev.names = v;
}

static void free_names(char **names)
{
        for (size_t i = 0; names && names[i]; i++)
                free(names[i]);
        free(names);
}

/* "snjournal.GEN" and "snlive.GEN.K": GEN, or 0 when name is neither. */
static uint32_t parse_gen(const char *name, bool *ret_journal)
{
        const char *p;
        char *end;
        unsigned long v;

        *ret_journal = !strncmp(name, "snjournal.", 10);
        if (*ret_journal)
                p = name + 10;
        else if (!strncmp(name, "snlive.", 7) && strcmp(name, FDSTORE_SETTINGS_NAME))
                p = name + 7;
        else
                return 0;
        errno = 0;
        v = strtoul(p, &end, 10);
        if (errno || end == p || v == 0 || v > UINT32_MAX)
                return 0;
        if (*ret_journal ? *end != 0 : *end != '.')
                return 0;
        return (uint32_t)v;
}

static bool legacy_name(const char *name)
{
        return !strcmp(name, "snstate") || !strcmp(name, "snmap") || !strncmp(name, "snbox.", 6);
}

static uint8_t *read_whole(int fd, size_t *ret_size)
{
        struct stat st;
        uint8_t *p;

        if (fstat(fd, &st) < 0 || st.st_size < JR_RECORD || st.st_size > (1ll << 36))
                return NULL;
        p = malloc((size_t)st.st_size);
        if (p && pread(fd, p, (size_t)st.st_size, 0) != st.st_size) {
                free(p);
                return NULL;
        }
        *ret_size = (size_t)st.st_size;
        return p;
}

static void place(int fd, uint32_t tag)
{
        restore_fds_add(&prev.fds, fd, tag);
}

/* Copies of the descriptors of a box, by the records that name them.  Peeked, not taken: the
 * box in the store keeps them until our own journal is stored. */
static int peek_box(int box)
{
        int zero = 0;

        if (setsockopt(box, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)) < 0)
                return -errno;
        for (;;) {
                int fds[JR_BOX_MAX];
                uint32_t tags[JR_BOX_MAX + 1];
                unsigned nfds = 0;
                ssize_t n = sn__fdmsg_recv(box, tags, sizeof(tags), fds, JR_BOX_MAX, &nfds,
                                           MSG_DONTWAIT | MSG_PEEK);

                if (n <= 0 && !nfds)
                        return n == 0 || n == -EAGAIN ? 0 : (int)n;
                if (n < 4 || (size_t)n != (1 + (size_t)nfds) * 4 || tags[0] != nfds) {
                        /* Not one of our messages: nothing in it can be placed. */
                        log_warning("fd store: a box message of %zd byte(s) with %u "
                                    "descriptor(s) is not one of ours", n, nfds);
                        for (unsigned i = 0; i < nfds; i++)
                                place(fds[i], 0);
                        if (n < 0)
                                return (int)n;
                        continue;
                }
                for (unsigned i = 0; i < nfds; i++)
                        place(fds[i], tags[1 + i]);
        }
}

struct got {
        int fd;
        uint32_t gen;
        bool journal, live, settings, legacy;
};

/* The newest generation's journal and boxes, as prev; the others' entries only forgotten. */
static void take_previous(struct got *g, int n)
{
        int jfd = -1;

        for (int k = 0; k < n; k++)
                if (g[k].journal && g[k].gen == prev.gen)
                        jfd = g[k].fd;
        if (jfd < 0)
                return;
        prev.journal = read_whole(jfd, &prev.size);
        if (!prev.journal || restore_check(prev.journal, prev.size) < 0) {
                log_error("fd store: the previous daemon's journal is not one this daemon "
                          "reads; its clients lose their sessions");
                free(prev.journal);
                prev.journal = NULL;
                return;
        }
        prev.fds.ntags = (uint32_t)SN_MIN(prev.size / JR_RECORD,
                                          (size_t)((struct jr_header *)prev.journal)->capacity);
        prev.fds.by_tag = malloc(prev.fds.ntags * sizeof(int));
        if (!prev.fds.by_tag) {
                free(prev.journal);
                prev.journal = NULL;
                return;
        }
        memset(prev.fds.by_tag, 0xff, prev.fds.ntags * sizeof(int));
        for (int k = 0; k < n; k++)
                if (g[k].live && !g[k].journal && g[k].gen == prev.gen) {
                        int e = peek_box(g[k].fd);

                        if (e < 0)
                                log_error("fd store: reading a box of the previous daemon: %s",
                                          strerror(-e));
                }
        prev.have = true;
}

int fdstore_take(int *ret_listen_fd)
{
        char **names = NULL;
        struct got *g;
        int n, nlisten = 0, listen_fd = 0;

        *ret_listen_fd = 0;
        n = sd_listen_fds_with_names(1, &names);
        if (n <= 0) {
                free_names(names);
                if (n < 0)
                        log_error("LISTEN_FDS: %s", strerror(-n));
                return n;
        }
        g = calloc((size_t)n, sizeof(*g));
        if (!g) {
                free_names(names);
                return -ENOMEM;
        }
        for (int k = 0; k < n; k++) {
                const char *name = names && names[k] ? names[k] : "";

                g[k].fd = SD_LISTEN_FDS_START + k;
                g[k].gen = parse_gen(name, &g[k].journal);
                g[k].live = g[k].gen != 0;
                g[k].settings = !strcmp(name, FDSTORE_SETTINGS_NAME);
                g[k].legacy = legacy_name(name);
                if (g[k].live || g[k].legacy)
                        prev_name(name);
                if (g[k].journal)
                        prev.gen = SN_MAX(prev.gen, g[k].gen);
                if (!g[k].live && !g[k].settings && !g[k].legacy) {
                        nlisten++;
                        listen_fd = g[k].fd;
                }
        }
        take_previous(g, n);
        /* Close what was received, but the last good settings (replaced by ours in the store,
         * see lastgood.c) and the activated listening socket. */
        for (int k = 0; k < n; k++) {
                bool keep = g[k].settings ? prev.settings_fd < 0
                                          : !g[k].live && !g[k].legacy && nlisten == 1;

                if (g[k].settings && keep)
                        prev.settings_fd = g[k].fd;
                if (!keep)
                        close(g[k].fd);
        }
        free(g);
        free_names(names);
        if (nlisten > 1) {
                log_error("socket activation passed %d sockets; socknotifyd takes exactly one",
                          nlisten);
                return -EINVAL;
        }
        *ret_listen_fd = listen_fd;
        return nlisten;
}

bool fdstore_previous(uint8_t **journal, size_t *size, struct restore_fds *fds)
{
        if (!prev.have)
                return false;
        *journal = prev.journal;
        *size = prev.size;
        *fds = prev.fds;
        prev.journal = NULL;
        memset(&prev.fds, 0, sizeof(prev.fds));
        prev.fds.keep_fd = -1;
        prev.have = false;
        return true;
}

int fdstore_take_settings(void)
{
        int fd = prev.settings_fd;

        prev.settings_fd = -1;
        return fd;
}

void fdstore_note_gen(uint32_t gen)
{
        prev.gen = SN_MAX(prev.gen, gen);
}

uint32_t fdstore_next_gen(void)
{
        uint32_t t = (uint32_t)time(NULL);

        return prev.gen && prev.gen + 1 > t ? prev.gen + 1 : SN_MAX(t, prev.gen + 1);
}

void fdstore_forget_previous(void)
{
        for (uint32_t i = 0; i < prev.nnames; i++) {
                forget(prev.names[i]);
                free(prev.names[i]);
        }
        free(prev.names);
        prev.names = NULL;
        prev.nnames = 0;
        free(prev.journal);
        prev.journal = NULL;
        restore_fds_done(&prev.fds, NULL);
        prev.have = false;
}
