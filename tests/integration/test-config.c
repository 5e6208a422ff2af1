/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-config.c - the configuration file against a real daemon: what is read (a regular file
 * of at most 1 MiB, never blocking: /dev/zero and a FIFO are refused at once, the daemon's
 * memory stays small and its loop keeps answering), `--check-config` (exit 0 or 1, the file,
 * the line and the key), an explicitly named missing file (an error), and that a bad file
 * never takes the service down: a reload keeps the running settings and says so in full to
 * `socknotifyctl reload` (exit 1) and on a STATUS= line cut only between words; a start that
 * takes sessions over (a re-exec, a restart or a crash restore through the descriptor store)
 * keeps every session, runs on the last good settings (else the defaults) and logs the error
 * at err.  A fresh start, with no session to keep, refuses a bad file: exit 1, the error at
 * err, nothing served.
 *
 * The daemon's log is its stderr, captured to a file per test.  Time bounds scale with
 * CK_TIMEOUT_MULTIPLIER.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
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
#include "tests/helpers/status.h"
#include "tests/helpers/manager.h"

static char dir[64];
static char logpath[128];

static void setup(void)
{
        snprintf(dir, sizeof(dir), "/tmp/sn-config-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(logpath, sizeof(logpath), "%s/daemon.log", dir);
}

static void teardown(void)
{
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
}

static int scaled(int ms)
{
        const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
        int k = m ? atoi(m) : 1;

        return ms * (k > 0 ? k : 1);
}

static const char *builddir(void)
{
        const char *b = getenv("SN_BUILDDIR");

        return b ? b : SN_BUILDDIR;
}

static void write_file(const char *path, const char *text)
{
        char tmp[256];
        FILE *f;

        /* Replaced whole, as an editor or a package does. */
        snprintf(tmp, sizeof(tmp), "%s.new", path);
        f = fopen(tmp, "w");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        ck_assert_int_eq(fclose(f), 0);
        ck_assert_int_eq(rename(tmp, path), 0);
}

/* The daemon's log so far (static buffer). */
static const char *daemon_log(void)
{
        static char buf[1 << 16];
        FILE *f = fopen(logpath, "r");
        size_t n = 0;

        buf[0] = 0;
        if (f) {
                n = fread(buf, 1, sizeof(buf) - 1, f);
                fclose(f);
        }
        buf[n] = 0;
        return buf;
}

/* Waits (bounded) until the daemon's log holds want. */
static bool log_wait(const char *want, int ms)
{
        long long end = now_ms() + scaled(ms);

        while (!strstr(daemon_log(), want)) {
                if (now_ms() > end)
                        return false;
                usleep(5000);
        }
        return true;
}

/* Starts the daemon (fds as test_daemon_start_with_fds() when nfds), its stderr to the log. */
static void start(struct test_daemon *d, const char *const *args, const int *fds, unsigned nfds,
                  const char *names)
{
        int saved = dup(2), lf = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

        ck_assert_int_ge(lf, 0);
        ck_assert_int_ge(saved, 0);
        dup2(lf, 2);
        if (nfds)
                test_daemon_start_with_fds(d, args, fds, nfds, names);
        else
                test_daemon_start(d, args);
        dup2(saved, 2);
        close(saved);
        close(lf);
}

static sn_limits_t limits_of(const struct test_daemon *d)
{
        sn_limits_t l;
        sn_conn_t *c;

        ck_assert_int_eq(sn_conn_open(d->path, &c), 0);
        ck_assert_int_eq(sn_conn_limits(c, &l), 0);
        sn_conn_close(c);
        return l;
}

/* Kilobytes of the daemon's resident memory. */
static long rss_kb(pid_t pid)
{
        char path[64], line[256];
        long kb = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "r");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
                        break;
        fclose(f);
        return kb;
}

/* Runs cmd (a shell line) with stdout and stderr in out; returns its exit status. */
static int run(char *out, size_t size, const char *cmd)
{
        char full[2048];
        size_t n = 0;
        FILE *f;
        int st;

        snprintf(full, sizeof(full), "%s 2>&1", cmd);
        f = popen(full, "r");
        ck_assert_ptr_nonnull(f);
        while (n + 1 < size && !feof(f))
                n += fread(out + n, 1, size - 1 - n, f);
        out[n] = 0;
        st = pclose(f);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int check_config(char *out, size_t size, const char *conf)
{
        char cmd[1024];

        snprintf(cmd, sizeof(cmd), "%s/daemon/socknotifyd --check-config --socket %s/no.sock "
                 "--config='%s'", builddir(), dir, conf);
        return run(out, size, cmd);
}

static int ctl(char *out, size_t size, const struct test_daemon *d, const char *args)
{
        char cmd[1024];

        snprintf(cmd, sizeof(cmd), "%s/ctl/socknotifyctl --socket %s %s", builddir(), d->path,
                 args);
        return run(out, size, cmd);
}

/* ---- reading --------------------------------------------------------------------------------- */

START_TEST(test_check_config)
{
        char conf[128], out[4096], big[160];
        long long t0;
        FILE *f;

        snprintf(conf, sizeof(conf), "%s/good.json", dir);
        write_file(conf, "{ \"max-ports\": 3 }\n");
        ck_assert_int_eq(check_config(out, sizeof(out), conf), 0);
        ck_assert_msg(strstr(out, "good.json: OK"), "%s", out);
        snprintf(conf, sizeof(conf), "%s/bad.json", dir);
        write_file(conf, "{\n \"max-ports\": 3,\n \"max-wiats\": 2\n}\n");
        ck_assert_int_eq(check_config(out, sizeof(out), conf), 1);
        ck_assert_msg(strstr(out, "bad.json:3: unknown key \"max-wiats\""), "%s", out);
        /* A long key is found all the same (not cut to a buffer). */
        write_file(conf, "{\n \"log-level\": \"info\",\n\n \"max-waits-per-user-but-a-good-"
                         "deal-longer-than-eighty-bytes-of-key-as-a-typo-could-be\": 2\n}\n");
        ck_assert_int_eq(check_config(out, sizeof(out), conf), 1);
        ck_assert_msg(strstr(out, "bad.json:4: unknown key \"max-waits-per-user-but"), "%s", out);
        write_file(conf, "{\n \"max-ports\": 0\n}\n");
        ck_assert_int_eq(check_config(out, sizeof(out), conf), 1);
        ck_assert_msg(strstr(out, "bad.json:2: key \"max-ports\": an integer from 1"), "%s", out);
        /* Named and missing: an error, not the defaults. */
        snprintf(conf, sizeof(conf), "%s/missing.json", dir);
        ck_assert_int_eq(check_config(out, sizeof(out), conf), 1);
        ck_assert_msg(strstr(out, "missing.json: No such file or directory"), "%s", out);
        /* Neither a device nor a FIFO is read; the FIFO without waiting for a writer. */
        ck_assert_int_eq(check_config(out, sizeof(out), "/dev/zero"), 1);
        ck_assert_msg(strstr(out, "/dev/zero: not a regular file"), "%s", out);
        snprintf(conf, sizeof(conf), "%s/fifo.json", dir);
        ck_assert_int_eq(mkfifo(conf, 0600), 0);
        t0 = now_ms();
        ck_assert_int_eq(check_config(out, sizeof(out), conf), 1);
        ck_assert_int_lt(now_ms() - t0, scaled(2000));
        ck_assert_msg(strstr(out, "fifo.json: not a regular file"), "%s", out);
        /* Over 1 MiB: refused. */
        snprintf(big, sizeof(big), "%s/big.json", dir);
        f = fopen(big, "w");
        ck_assert_ptr_nonnull(f);
        fputs("{ \"max-ports\": 3 }", f);
        for (int i = 0; i < (1 << 20); i++)
                fputc(' ', f);
        fclose(f);
        ck_assert_int_eq(check_config(out, sizeof(out), big), 1);
        ck_assert_msg(strstr(out, "big.json: larger than 1048576 bytes"), "%s", out);
        /* The default path (here $SOCKNOTIFY_CONFIG, as the user unit sets it) may be absent;
         * a bad file there is as bad. */
        {
                char cmd[512];

                snprintf(cmd, sizeof(cmd), "SOCKNOTIFY_CONFIG=%s/absent.json "
                         "%s/daemon/socknotifyd --check-config", dir, builddir());
                ck_assert_int_eq(run(out, sizeof(out), cmd), 0);
                ck_assert_msg(strstr(out, "absent.json: absent"), "%s", out);
                snprintf(cmd, sizeof(cmd), "SOCKNOTIFY_CONFIG=%s/bad.json "
                         "%s/daemon/socknotifyd --check-config", dir, builddir());
                ck_assert_int_eq(run(out, sizeof(out), cmd), 1);
                ck_assert_msg(strstr(out, "bad.json:2: key \"max-ports\""), "%s", out);
        }
        /* It starts nothing. */
        snprintf(conf, sizeof(conf), "%s/no.sock", dir);
        ck_assert_int_ne(access(conf, F_OK), 0);
}
END_TEST

/* /dev/zero as the configuration at reload: refused at once, the memory stays small. */
START_TEST(test_dev_zero_reload)
{
        struct test_daemon d;
        char conf[128], arg[160], tmp[160];
        const char *args[] = { arg, NULL };
        long long end;

        snprintf(conf, sizeof(conf), "%s/socknotifyd.json", dir);
        snprintf(arg, sizeof(arg), "--config=%s", conf);
        write_file(conf, "{ \"max-waits\": 7 }\n");
        start(&d, args, NULL, 0, NULL);
        snprintf(tmp, sizeof(tmp), "%s.new", conf);
        ck_assert_int_eq(symlink("/dev/zero", tmp), 0);
        ck_assert_int_eq(rename(tmp, conf), 0);
        ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
        /* Bounded either way: a daemon reading without end is stopped at 64 MiB. */
        end = now_ms() + scaled(3000);
        while (!strstr(daemon_log(), "/dev/zero") && !strstr(daemon_log(), "not a regular file")) {
                long kb = rss_kb(d.pid);

                ck_assert_msg(kb >= 0 && kb < 64 * 1024, "the daemon grew to %ld kB", kb);
                ck_assert_msg(now_ms() < end, "no reload outcome in the log: %s", daemon_log());
                usleep(2000);
        }
        ck_assert_msg(strstr(daemon_log(), "socknotifyd.json: not a regular file"), "%s",
                      daemon_log());
        ck_assert_int_lt(rss_kb(d.pid), 64 * 1024);
        /* The running settings stay. */
        ck_assert_uint_eq(limits_of(&d).max_waits, 7);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
}
END_TEST

/* A FIFO as the configuration at reload: the loop never blocks on it. */
START_TEST(test_fifo_reload)
{
        struct test_daemon d;
        char conf[128], arg[160], tmp[160];
        const char *args[] = { arg, NULL };

        snprintf(conf, sizeof(conf), "%s/socknotifyd.json", dir);
        snprintf(arg, sizeof(arg), "--config=%s", conf);
        write_file(conf, "{ \"max-waits\": 7 }\n");
        start(&d, args, NULL, 0, NULL);
        snprintf(tmp, sizeof(tmp), "%s.new", conf);
        ck_assert_int_eq(mkfifo(tmp, 0600), 0);
        ck_assert_int_eq(rename(tmp, conf), 0);
        ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
        ck_assert_msg(log_wait("socknotifyd.json: not a regular file", 2000),
                      "the reload did not return: %s", daemon_log());
        /* And the daemon answers right after. */
        ck_assert_uint_eq(limits_of(&d).max_waits, 7);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
}
END_TEST

/* ---- a bad file at start ------------------------------------------------------------------- */

/* Runs a fresh daemon (no previous state) on dir/fresh.sock with args, its stderr into out;
 * returns its exit status, or 124 when it was still running (serving) after a bound. */
static int fresh_start(char *out, size_t size, const char *args)
{
        char cmd[1024];

        snprintf(cmd, sizeof(cmd), "(timeout -s KILL %d %s/daemon/socknotifyd --socket "
                 "%s/fresh.sock %s 2>&1; st=$?; [ $st -eq 137 ] && st=124; exit $st)",
                 scaled(10000) / 1000, builddir(), dir, args);
        return run(out, size, cmd);
}

/* A fresh start (no session to keep) with a named file that is missing, has a syntax error (a
 * trailing comma) or a value out of its range: exit 1 with the error at err, nothing served;
 * the same value on the command line is refused with the same words (exit 2). */
START_TEST(test_fresh_start_refuses_bad_file)
{
        static const struct {
                const char *file, *text, *want;
        } cases[] = {
                { "missing.json", NULL, "missing.json: No such file or directory; not starting" },
                { "comma.json", "{\n  \"max-ports-per-user\": 8,\n}\n",
                  "comma.json:3: not valid JSON here (a missing comma, colon or quote, a "
                  "trailing comma, or a value JSON does not have) (column 1); not starting" },
                { "zero.json", "{\n  \"max-ports\": 0\n}\n",
                  "zero.json:2: key \"max-ports\": an integer from 1 to 1048576; not starting" },
        };
        char conf[128], args[256], out[8192], sock[128];
        struct stat sb;

        snprintf(sock, sizeof(sock), "%s/fresh.sock", dir);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                snprintf(conf, sizeof(conf), "%s/%s", dir, cases[i].file);
                if (cases[i].text)
                        write_file(conf, cases[i].text);
                snprintf(args, sizeof(args), "--config='%s'", conf);
                ck_assert_msg(fresh_start(out, sizeof(out), args) == 1,
                              "%s: the daemon did not exit 1: %s", cases[i].file, out);
                ck_assert_msg(strstr(out, "error: configuration: ") &&
                              strstr(out, cases[i].want), "%s: %s", cases[i].file, out);
                ck_assert_msg(stat(sock, &sb) < 0 && errno == ENOENT,
                              "%s: the socket was made", cases[i].file);
        }
        /* One check for both: the command line names the option where the file names its
         * line, and says the same of the value. */
        ck_assert_int_eq(fresh_start(out, sizeof(out), "--max-ports=0"), 2);
        ck_assert_msg(strstr(out, "--max-ports=0: key \"max-ports\": an integer from 1 to "
                                  "1048576"), "%s", out);
        /* A good file still starts. */
        snprintf(conf, sizeof(conf), "%s/good.json", dir);
        write_file(conf, "{ \"max-waits\": 7 }\n");
        snprintf(args, sizeof(args), "--config=%s", conf);
        {
                struct test_daemon d;
                const char *argv[] = { args, NULL };

                start(&d, argv, NULL, 0, NULL);
                ck_assert_uint_eq(limits_of(&d).max_waits, 7);
                ck_assert_int_eq(test_daemon_stop(&d), 0);
        }
}
END_TEST

/* ---- a bad file at reload -------------------------------------------------------------------- */

#define LONG_NAME "a-configuration-file-with-a-name-long-enough-to-show-any-cut.json"

/* socknotifyctl reload: exit 1 and the whole error; the running settings stay. */
START_TEST(test_ctl_reload_reports_failure)
{
        struct test_daemon d;
        char conf[160], arg[200], out[4096], want[256];
        const char *args[] = { arg, NULL };

        snprintf(conf, sizeof(conf), "%s/" LONG_NAME, dir);
        snprintf(arg, sizeof(arg), "--config=%s", conf);
        write_file(conf, "{ \"max-waits\": 7 }\n");
        start(&d, args, NULL, 0, NULL);
        write_file(conf, "{ \"max-waits\": 9,\n  \"max-portz\": 5 }\n");
        ck_assert_int_eq(ctl(out, sizeof(out), &d, "reload"), 1);
        snprintf(want, sizeof(want), "%s:2: unknown key \"max-portz\"", conf);
        ck_assert_msg(strstr(out, want), "not the whole error: %s", out);
        ck_assert_msg(strstr(out, "keeps its running settings"), "%s", out);
        ck_assert_uint_eq(limits_of(&d).max_waits, 7);
        ck_assert_int_eq(ctl(out, sizeof(out), &d, "--json status"), 0);
        ck_assert_msg(strstr(out, "\"max_waits\": 7") || strstr(out, "\"max_waits\":7"), "%s",
                      out);
        /* Fixed: the reload succeeds and applies. */
        write_file(conf, "{ \"max-waits\": 9 }\n");
        ck_assert_int_eq(ctl(out, sizeof(out), &d, "reload"), 0);
        ck_assert_uint_eq(limits_of(&d).max_waits, 9);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
}
END_TEST

/* A reload that changes max-fds: clients were told the running value in HELLO_REPLY and
 * split their calls by it, so it stays (said in the log) while the rest of the file applies;
 * the next start takes the file's value. */
START_TEST(test_reload_keeps_max_fds)
{
        struct test_daemon d;
        char conf[128], arg[160], out[4096];
        const char *args[] = { arg, NULL };

        snprintf(conf, sizeof(conf), "%s/fds.json", dir);
        snprintf(arg, sizeof(arg), "--config=%s", conf);
        write_file(conf, "{ \"max-fds\": 2, \"max-waits\": 7 }\n");
        start(&d, args, NULL, 0, NULL);
        ck_assert_uint_eq(limits_of(&d).max_fds, 2);
        write_file(conf, "{ \"max-fds\": 1, \"max-waits\": 9 }\n");
        ck_assert_int_eq(ctl(out, sizeof(out), &d, "reload"), 0);
        ck_assert_uint_eq(limits_of(&d).max_waits, 9);
        ck_assert_uint_eq(limits_of(&d).max_fds, 2);
        ck_assert_msg(log_wait("reload: max-fds applies to connections made after the next "
                               "start or re-exec", 5000),
                      "%s", daemon_log());
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        start(&d, args, NULL, 0, NULL);
        ck_assert_uint_eq(limits_of(&d).max_fds, 1);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
}
END_TEST

/* Receives notify datagrams until one holds want; the last such line goes to out. */
static bool notify_wait(int sock, const char *want, int ms, char *out, size_t outsz)
{
        long long end = now_ms() + scaled(ms);

        while (now_ms() < end) {
                struct pollfd p = { .fd = sock, .events = POLLIN };
                char buf[1024];
                ssize_t n;

                if (poll(&p, 1, (int)(end - now_ms())) <= 0)
                        break;
                n = recv(sock, buf, sizeof(buf) - 1, 0);
                if (n <= 0)
                        continue;
                buf[n] = 0;
                if (strstr(buf, want)) {
                        snprintf(out, outsz, "%s", buf);
                        return true;
                }
        }
        return false;
}

/* The STATUS= line after a failed reload: the outcome in full, or cut between words with an
 * ellipsis, never inside a word. */
START_TEST(test_status_never_cut_mid_word)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char notify[96], conf[200], arg[240], line[1024], full[512];
        const char *args[] = { arg, NULL };
        const char *names[] = { "bad.json", LONG_NAME, LONG_NAME "-" LONG_NAME };
        struct test_daemon d;
        int ns;

        snprintf(notify, sizeof(notify), "%s/notify", dir);
        ns = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", notify);
        ck_assert_int_eq(bind(ns, (struct sockaddr *)&sa, sizeof(sa)), 0);
        setenv("NOTIFY_SOCKET", notify, 1);
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                const char *note, *at;
                size_t len;

                snprintf(conf, sizeof(conf), "%s/%s", dir, names[i]);
                snprintf(arg, sizeof(arg), "--config=%s", conf);
                write_file(conf, "{ \"max-waits\": 7 }\n");
                start(&d, args, NULL, 0, NULL);
                ck_assert(notify_wait(ns, "READY=1", 10000, line, sizeof(line)));
                write_file(conf, "{ \"max-waits\": 9,\n  \"max-wiats\": 5 }\n");
                ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
                ck_assert_msg(notify_wait(ns, "reload failed", 3000, line, sizeof(line)),
                              "no failure on STATUS=");
                snprintf(full, sizeof(full), "%s:2: unknown key \"max-wiats\"", names[i]);
                note = strstr(line, "registration(s)") + strlen("registration(s)");
                at = strstr(note, full);
                len = strlen(note);
                if (!at) {
                        /* Cut: " …" after a whole word of the outcome. */
                        const char *ell = " \xe2\x80\xa6";
                        char whole[800];

                        ck_assert_msg(len > 4 && !strcmp(note + len - 4, ell),
                                      "cut without an ellipsis: %s", line);
                        snprintf(whole, sizeof(whole), "; reload failed, running settings kept: "
                                 "%s", full);
                        ck_assert_msg(!strncmp(whole, note, len - 4) &&
                                      whole[len - 4] == ' ' && note[len - 5] != ' ',
                                      "cut inside a word: '%s' of '%s'", note, whole);
                }
                ck_assert_int_eq(test_daemon_stop(&d), 0);
                while (notify_wait(ns, "\n", 50, line, sizeof(line)))
                        ;
        }
        unsetenv("NOTIFY_SOCKET");
        close(ns);
}
END_TEST

/* ---- the last good settings across a re-exec, a restart and a crash ----------------------- */

/* A client's session: a port with a posted packet still queued. */
struct session {
        sn_conn_t *c;
        sn_port_t *p;
};

static void session_open(struct session *s, const struct test_daemon *d, uint64_t key)
{
        ck_assert_int_eq(sn_conn_open(d->path, &s->c), 0);
        ck_assert_int_eq(sn_port_create(s->c, 0, &s->p), 0);
        ck_assert_int_eq(sn_port_post(s->p, key, 1, 2), 0);
}

/* The packet queued before is still there, and the port goes on working. */
static void session_check(struct session *s, uint64_t key)
{
        sn_entry_t e;

        ck_assert_int_eq(sn_port_dequeue(s->p, &e, 1, scaled(5000)), 1);
        ck_assert_uint_eq(e.key, key);
        ck_assert_int_eq(sn_port_post(s->p, key + 1, 1, 2), 0);
}

static void session_close(struct session *s)
{
        sn_port_close(s->p);
        sn_conn_close(s->c);
}

/* SIGUSR2, then waits until the daemon answers from its new image. */
static void reexec(sn_conn_t *c, pid_t pid)
{
        long long before = test_status_number(c, "reexecs"), end = now_ms() + scaled(5000);

        ck_assert_int_eq(kill(pid, SIGUSR2), 0);
        while (test_status_number(c, "reexecs") == before) {
                ck_assert_msg(now_ms() < end, "no re-exec within 5 s: %s", daemon_log());
                usleep(10000);
        }
}

START_TEST(test_reexec_keeps_last_good)
{
        struct test_daemon d;
        struct session s;
        char conf[128], arg[160], want[256];
        const char *args[] = { arg, "--max-ports=5", NULL };

        snprintf(conf, sizeof(conf), "%s/socknotifyd.json", dir);
        snprintf(arg, sizeof(arg), "--config=%s", conf);
        write_file(conf, "{ \"max-waits\": 7, \"max-posted\": 100 }\n");
        start(&d, args, NULL, 0, NULL);
        session_open(&s, &d, 41);
        write_file(conf, "{\n  \"max-waits\": 9,\n  \"max-wiats\": 5\n}\n");
        reexec(s.c, d.pid);
        snprintf(want, sizeof(want), "error: configuration: %s:3: unknown key \"max-wiats\"; "
                 "running on the last good settings", conf);
        ck_assert_msg(log_wait(want, 3000), "%s", daemon_log());
        session_check(&s, 41);
        ck_assert_uint_eq(limits_of(&d).max_waits, 7);
        ck_assert_uint_eq(limits_of(&d).max_posted, 100);
        ck_assert_uint_eq(limits_of(&d).max_ports, 5);
        /* Again: the new image carries them on in turn. */
        reexec(s.c, d.pid);
        session_check(&s, 42);
        ck_assert_uint_eq(limits_of(&d).max_waits, 7);
        /* A good file again: a reload applies it, and a re-exec keeps that. */
        write_file(conf, "{ \"max-waits\": 11 }\n");
        ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
        for (long long end = now_ms() + scaled(3000); limits_of(&d).max_waits != 11;)
                ck_assert_msg(now_ms() < end, "the reload did not apply");
        write_file(conf, "{ \"max-waits\": ");
        reexec(s.c, d.pid);
        ck_assert_uint_eq(limits_of(&d).max_waits, 11);
        ck_assert_uint_eq(limits_of(&d).max_posted, 65536);
        session_check(&s, 43);
        session_close(&s);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
}
END_TEST

/* Starts the next daemon with what the store holds (as systemd passes it at a restart). */
static void start_from_store(struct test_daemon *d, struct manager *m, const char *const *args)
{
        static char names[MAXSTORED * 16];

        pthread_mutex_lock(&m->lock);
        manager_names_locked(m, names, sizeof(names));
        start(d, args, m->fds, m->n, names);
        pthread_mutex_unlock(&m->lock);
}

/* A restart (SIGTERM: the handover), then a crash (SIGKILL: the live store), each time with a
 * bad file: every session kept, the last good settings in force, the error logged at err. */
START_TEST(test_restart_and_crash_keep_last_good)
{
        struct test_daemon d;
        struct manager m;
        struct session s;
        char mdir[] = "/tmp/sn-manager-XXXXXX", conf[128], arg[160], want[256];
        const char *args[] = { arg, NULL };
        int st;

        ck_assert_ptr_nonnull(mkdtemp(mdir));
        manager_start(&m, mdir, 64);
        snprintf(conf, sizeof(conf), "%s/socknotifyd.json", dir);
        snprintf(arg, sizeof(arg), "--config=%s", conf);
        write_file(conf, "{ \"max-waits\": 7 }\n");
        start(&d, args, NULL, 0, NULL);
        session_open(&s, &d, 51);
        write_file(conf, "{\n  \"max-waits\": 9,\n  \"max-wiats\": 5\n}\n");

        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(d.pid, &st, 0), d.pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        start_from_store(&d, &m, args);
        snprintf(want, sizeof(want), "error: configuration: %s:3: unknown key \"max-wiats\"; "
                 "running on the last good settings", conf);
        ck_assert_msg(log_wait(want, 3000), "%s", daemon_log());
        ck_assert_msg(log_wait("fd store, after an orderly stop: restored 1 connection(s)", 3000), "%s", daemon_log());
        session_check(&s, 51);
        ck_assert_uint_eq(limits_of(&d).max_waits, 7);

        /* kill -9: restored from the live store, still on the same settings. */
        ck_assert_int_eq(truncate(logpath, 0), 0);
        usleep(200 * 1000); /* the live store settles */
        ck_assert_int_eq(kill(d.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(d.pid, NULL, 0), d.pid);
        start_from_store(&d, &m, args);
        ck_assert_msg(log_wait(want, 3000), "%s", daemon_log());
        ck_assert_msg(log_wait("fd store, after a crash: restored 1 connection(s)", 3000), "%s",
                      daemon_log());
        session_check(&s, 52);
        ck_assert_uint_eq(limits_of(&d).max_waits, 7);
        pthread_mutex_lock(&m.lock);
        ck_assert_uint_eq(manager_count_locked(&m, "snlive.settings"), 1);
        pthread_mutex_unlock(&m.lock);

        session_close(&s);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        rmdir(mdir);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("config");
        TCase *tc = tcase_create("config");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_check_config);
        tcase_add_test(tc, test_dev_zero_reload);
        tcase_add_test(tc, test_fifo_reload);
        tcase_add_test(tc, test_fresh_start_refuses_bad_file);
        tcase_add_test(tc, test_ctl_reload_reports_failure);
        tcase_add_test(tc, test_reload_keeps_max_fds);
        tcase_add_test(tc, test_status_never_cut_mid_word);
        tcase_add_test(tc, test_reexec_keeps_last_good);
        tcase_add_test(tc, test_restart_and_crash_keep_last_good);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}
