/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-systemd.c - socknotifyd as a systemd service: socket activation under the real
 * systemd-socket-activate, and the notify protocol (READY=1, STATUS=, WATCHDOG=1, STOPPING=1)
 * observed on a NOTIFY_SOCKET this test creates, as the service manager would.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "socknotify.h"
#include "tests/helpers/daemon.h"

static char dir[64];

static void setup(void)
{
        snprintf(dir, sizeof(dir), "/tmp/sn-systemd-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
}

static const char *daemon_bin(void)
{
        static char bin[512];

        snprintf(bin, sizeof(bin), "%s/daemon/socknotifyd", getenv("SN_BUILDDIR"));
        return bin;
}

static int exit_status(pid_t pid)
{
        int st;

        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static pid_t spawn_activated(const char *path, bool seqpacket)
{
        pid_t pid = fork();

        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (seqpacket)
                        execlp("systemd-socket-activate", "systemd-socket-activate", "--seqpacket",
                               "-l", path, daemon_bin(), (char *)NULL);
                else
                        execlp("systemd-socket-activate", "systemd-socket-activate", "-l", path,
                               daemon_bin(), (char *)NULL);
                _exit(127);
        }
        return pid;
}

START_TEST(test_socket_activation)
{
        char path[128], *json;
        sn_conn_t *c = NULL;
        sn_port_t *p;
        sn_entry_t e;
        pid_t pid;
        long long end = now_ms() + test_timeout_ms(10000);

        snprintf(path, sizeof(path), "%s/activated.sock", dir);
        pid = spawn_activated(path, true);
        /* The first connection starts the daemon, which adopts the listening socket. */
        while (sn_conn_open(path, &c) < 0) {
                ck_assert_msg(now_ms() < end, "activated daemon never answered");
                usleep(10000);
        }
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        ck_assert_int_eq(sn_port_post(p, 42, 1, 2), 0);
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 1000), 1);
        ck_assert_uint_eq(e.key, 42);
        ck_assert_int_eq(sn_conn_status(c, &json), 0);
        ck_assert_ptr_nonnull(strstr(json, path)); /* it reports the adopted socket's path */
        free(json);
        sn_port_close(p);
        sn_conn_close(c);
        kill(pid, SIGTERM);
        ck_assert_int_eq(exit_status(pid), 0);
}
END_TEST

START_TEST(test_activation_refuses_wrong_socket)
{
        char path[128];
        sn_conn_t *c;
        pid_t pid;
        int fd;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        /* A stream socket is not what socknotifyd serves: it says so and exits 1. */
        snprintf(path, sizeof(path), "%s/stream.sock", dir);
        pid = spawn_activated(path, false);
        strcpy(sa.sun_path, path);
        for (long long end = now_ms() + test_timeout_ms(10000);; usleep(10000)) {
                fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
                        break;
                close(fd);
                ck_assert(now_ms() < end);
        }
        ck_assert_int_eq(exit_status(pid), 1);
        close(fd);
        ck_assert_int_lt(sn_conn_open(path, &c), 0);
}
END_TEST

/* Receives notify datagrams until want is seen or timeout; appends them to log. */
static bool notify_wait(int sock, const char *want, int timeout_ms, char *log, size_t logsz)
{
        long long end = now_ms() + test_timeout_ms(timeout_ms);

        while (now_ms() < end) {
                struct pollfd p = { .fd = sock, .events = POLLIN };
                char buf[512];
                ssize_t n;

                if (poll(&p, 1, (int)(end - now_ms())) <= 0)
                        break;
                n = recv(sock, buf, sizeof(buf) - 1, 0);
                if (n <= 0)
                        continue;
                buf[n] = 0;
                strncat(log, buf, logsz - strlen(log) - 2);
                strcat(log, "\n");
                if (strstr(buf, want))
                        return true;
        }
        return false;
}

START_TEST(test_notify_protocol)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char sock_path[128], notify_path[128], log[8192] = "";
        int ns, watchdogs = 0;
        sn_conn_t *c;
        pid_t pid;

        snprintf(sock_path, sizeof(sock_path), "%s/s.sock", dir);
        snprintf(notify_path, sizeof(notify_path), "%s/notify", dir);
        ns = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        strcpy(sa.sun_path, notify_path);
        ck_assert_int_eq(bind(ns, (struct sockaddr *)&sa, sizeof(sa)), 0);

        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                char wpid[32];

                prctl(PR_SET_PDEATHSIG, SIGKILL);
                snprintf(wpid, sizeof(wpid), "%d", (int)getpid());
                setenv("NOTIFY_SOCKET", notify_path, 1);
                setenv("WATCHDOG_USEC", "200000", 1);
                setenv("WATCHDOG_PID", wpid, 1);
                execl(daemon_bin(), daemon_bin(), "--socket", sock_path, (char *)NULL);
                _exit(127);
        }
        ck_assert_msg(notify_wait(ns, "READY=1", 10000, log, sizeof(log)), "no READY=1: %s", log);
        ck_assert_ptr_nonnull(strstr(log, "STATUS=0 connection(s), 0 port(s), 0 registration(s)"));
        /* WATCHDOG=1 every 100 ms (half of WATCHDOG_USEC). */
        long long t0 = now_ms();
        while (now_ms() - t0 < 1000 && watchdogs < 5)
                watchdogs += notify_wait(ns, "WATCHDOG=1", 500, log, sizeof(log));
        ck_assert_int_ge(watchdogs, 5);
        ck_assert_int_lt(now_ms() - t0, 1000);
        /* STATUS= follows what the daemon serves. */
        ck_assert_int_eq(sn_conn_open(sock_path, &c), 0);
        ck_assert_msg(notify_wait(ns, "STATUS=1 connection(s)", 3000, log, sizeof(log)),
                      "no STATUS update: %s", log);
        sn_conn_close(c);
        kill(pid, SIGTERM);
        ck_assert_msg(notify_wait(ns, "STOPPING=1", 3000, log, sizeof(log)), "no STOPPING=1: %s",
                      log);
        ck_assert_int_eq(exit_status(pid), 0);
        close(ns);
}
END_TEST


static void write_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");

        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
}

static uint32_t max_ports_seen(const char *sock_path)
{
        sn_limits_t l;
        sn_conn_t *c;

        ck_assert_int_eq(sn_conn_open(sock_path, &c), 0);
        ck_assert_int_eq(sn_conn_limits(c, &l), 0);
        sn_conn_close(c);
        return l.max_ports;
}

/* The configuration file at start and at SIGHUP (systemctl reload), with the notify protocol
 * a service manager sees: RELOADING=1, READY=1, and the outcome on the STATUS= line. */
START_TEST(test_reload)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char sock_path[128], notify_path[128], conf[128], log[16384] = "";
        sn_port_t *p[5];
        sn_conn_t *c;
        int ns;
        pid_t pid;

        snprintf(sock_path, sizeof(sock_path), "%s/s.sock", dir);
        snprintf(notify_path, sizeof(notify_path), "%s/notify", dir);
        snprintf(conf, sizeof(conf), "%s/socknotifyd.json", dir);
        write_file(conf, "{ \"max-ports\": 2, \"max-waits\": 7 }\n");
        ns = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        strcpy(sa.sun_path, notify_path);
        ck_assert_int_eq(bind(ns, (struct sockaddr *)&sa, sizeof(sa)), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                char arg[160];

                prctl(PR_SET_PDEATHSIG, SIGKILL);
                setenv("NOTIFY_SOCKET", notify_path, 1);
                snprintf(arg, sizeof(arg), "--config=%s", conf);
                /* The command line wins over the file for max-waits. */
                execl(daemon_bin(), daemon_bin(), "--socket", sock_path, arg, "--max-waits=9",
                      (char *)NULL);
                _exit(127);
        }
        ck_assert_msg(notify_wait(ns, "READY=1", 10000, log, sizeof(log)), "no READY=1: %s", log);
        ck_assert_uint_eq(max_ports_seen(sock_path), 2);
        sn_limits_t l;
        ck_assert_int_eq(sn_conn_open(sock_path, &c), 0);
        ck_assert_int_eq(sn_conn_limits(c, &l), 0);
        ck_assert_uint_eq(l.max_waits, 9);
        ck_assert_int_eq(sn_port_create(c, 0, &p[0]), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p[1]), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p[2]), -EDQUOT);

        /* Raised at reload: the next request may hold more. */
        write_file(conf, "{\n  \"max-ports\": 4,\n  \"log-level\": \"debug\"\n}\n");
        kill(pid, SIGHUP);
        ck_assert_msg(notify_wait(ns, "RELOADING=1", 3000, log, sizeof(log)), "%s", log);
        ck_assert_msg(notify_wait(ns, "READY=1", 3000, log, sizeof(log)), "%s", log);
        ck_assert_msg(strstr(log, "configuration reloaded"), "no outcome on STATUS=: %s", log);
        ck_assert_int_eq(sn_port_create(c, 0, &p[2]), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p[3]), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p[4]), -EDQUOT);

        /* Lowered: what is held stays usable, nothing new above the limit. */
        write_file(conf, "{ \"max-ports\": 1 }\n");
        log[0] = 0;
        kill(pid, SIGHUP);
        ck_assert_msg(notify_wait(ns, "READY=1", 3000, log, sizeof(log)), "%s", log);
        ck_assert_uint_eq(max_ports_seen(sock_path), 1);
        for (int i = 0; i < 4; i++) {
                sn_entry_t e;

                ck_assert_int_eq(sn_port_post(p[i], (uint64_t)i, 0, 0), 0);
                ck_assert_int_eq(sn_port_dequeue(p[i], &e, 1, 1000), 1);
                ck_assert_uint_eq(e.key, (uint64_t)i);
        }
        ck_assert_int_eq(sn_port_close(p[3]), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p[3]), -EDQUOT);

        /* A bad file at reload: logged, and the running configuration stays. */
        write_file(conf, "{ \"max-ports\": 1,\n  \"max-portz\": 5 }\n");
        log[0] = 0;
        kill(pid, SIGHUP);
        ck_assert_msg(notify_wait(ns, "READY=1", 3000, log, sizeof(log)), "%s", log);
        ck_assert_msg(strstr(log, "reload failed") && strstr(log, ":2: unknown key"),
                      "no failure on STATUS=: %s", log);
        ck_assert_uint_eq(max_ports_seen(sock_path), 1);
        write_file(conf, "{ \"max-ports\": ");
        kill(pid, SIGHUP);
        ck_assert_msg(notify_wait(ns, "reload failed", 3000, log, sizeof(log)), "%s", log);
        ck_assert_uint_eq(max_ports_seen(sock_path), 1);

        for (int i = 0; i < 3; i++)
                sn_port_close(p[i]);
        sn_conn_close(c);
        kill(pid, SIGTERM);
        ck_assert_int_eq(exit_status(pid), 0);
        close(ns);
}
END_TEST

/* Runs `socknotifyd --check-config` on a configuration file; returns its exit status, its
 * stderr in err. */
static int run_with_config(const char *text, char *err, size_t errsz)
{
        char conf[128], errpath[128], arg[160], sock_path[128];
        pid_t pid;
        FILE *f;
        size_t n;
        int st;

        snprintf(conf, sizeof(conf), "%s/bad.json", dir);
        snprintf(errpath, sizeof(errpath), "%s/stderr", dir);
        snprintf(sock_path, sizeof(sock_path), "%s/t.sock", dir);
        write_file(conf, text);
        snprintf(arg, sizeof(arg), "--config=%s", conf);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (!freopen(errpath, "w", stderr))
                        _exit(126);
                execl(daemon_bin(), daemon_bin(), "--check-config", "--socket", sock_path, arg,
                      (char *)NULL);
                _exit(127);
        }
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        f = fopen(errpath, "r");
        ck_assert_ptr_nonnull(f);
        n = fread(err, 1, errsz - 1, f);
        err[n] = 0;
        fclose(f);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A bad file found by --check-config: exit 1, naming file, line and key.  (A start with a bad
 * file: a fresh one exits 1, one that takes sessions over stays up; test-config.) */
START_TEST(test_bad_config_at_start)
{
        char err[1024];

        ck_assert_int_eq(run_with_config("{\n \"max-ports\": 3,\n \"max-wiats\": 2\n}\n", err,
                                         sizeof(err)), 1);
        ck_assert_msg(strstr(err, "bad.json:3: unknown key \"max-wiats\""), "%s", err);
        ck_assert_int_eq(run_with_config("{\n \"max-ports\": 0\n}\n", err, sizeof(err)), 1);
        ck_assert_msg(strstr(err, "bad.json:2: key \"max-ports\": an integer from 1"), "%s", err);
        ck_assert_int_eq(run_with_config("{\n \"log-level\": \"loud\"\n}\n", err, sizeof(err)), 1);
        ck_assert_msg(strstr(err, "bad.json:2: key \"log-level\""), "%s", err);
        ck_assert_int_eq(run_with_config("{\n \"max-ports\": 3,,\n}\n", err, sizeof(err)), 1);
        ck_assert_msg(strstr(err, "bad.json:2:"), "%s", err);
        ck_assert_int_eq(run_with_config("[1, 2]", err, sizeof(err)), 1);
        ck_assert_msg(strstr(err, "must be a JSON object"), "%s", err);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("systemd");
        TCase *tc = tcase_create("systemd");

        if (access("/usr/bin/systemd-socket-activate", X_OK) != 0 &&
            access("/bin/systemd-socket-activate", X_OK) != 0) {
                printf("SKIP: systemd-socket-activate not installed\n");
                return 77;
        }
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_socket_activation);
        tcase_add_test(tc, test_activation_refuses_wrong_socket);
        tcase_add_test(tc, test_notify_protocol);
        tcase_add_test(tc, test_reload);
        tcase_add_test(tc, test_bad_config_at_start);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}
