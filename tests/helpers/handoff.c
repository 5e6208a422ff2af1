/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * handoff.c - the predecessor process of the handoff tests (see handoff.h).
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/handoff.h"
#include "tests/helpers/status.h"

void handoff_predecessor(const char *path, const char *name, uint32_t linger_ms, const int *fds,
                         int n, uint64_t base, uint16_t filter, uint8_t trigger, bool post)
{
        int pipefd[2], st;
        long long before, deadline;
        sn_conn_t *status;
        pid_t pid;
        char c;

        ck_assert_int_eq(pipe(pipefd), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sn_port_options_t o = { .linger_ms = linger_ms };
                sn_registration_t *r = calloc((size_t)n + 1, sizeof(*r));
                sn_conn_t *conn;
                sn_port_t *p;

                if (!r || sn_conn_open(path, &conn) < 0 ||
                    sn_port_create_named_ex(conn, name, &o, &p) < 0)
                        _exit(2);
                for (int i = 0; i < n; i++)
                        r[i] = (sn_registration_t){ .fd = fds[i], .key = base + (uint64_t)i,
                                                    .op = SN_OP_ENABLE, .trigger = trigger,
                                                    .filter = filter };
                if (n && sn_port_process(p, r, (uint32_t)n, NULL, 0, 0) != 0)
                        _exit(3);
                for (int i = 0; i < n; i++)
                        if (r[i].result)
                                _exit(4);
                if (post && sn_port_post(p, 7, 70, 0x77) < 0)
                        _exit(5);
                if (write(pipefd[1], "k", 1) != 1)
                        _exit(6);
                pause();
                _exit(0);
        }
        close(pipefd[1]);
        /* EOF instead of "k": the predecessor failed a step (its exit status says which). */
        ck_assert_int_eq(read(pipefd[0], &c, 1), 1);
        close(pipefd[0]);
        ck_assert_int_eq(sn_conn_open(path, &status), 0);
        before = test_status_number(status, "connections");
        ck_assert_int_eq(kill(pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        /* The daemon has read the connection's end once it freed the connection (its
         * registrations are ownerless or gone by then). */
        deadline = now_ms() + test_timeout_ms(5000);
        while (test_status_number(status, "connections") >= before) {
                ck_assert_msg(now_ms() < deadline, "the daemon kept the predecessor's connection");
                usleep(2000);
        }
        sn_conn_close(status);
}
