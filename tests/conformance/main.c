/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * main.c - runner, fixture and helpers of the conformance suite.
 *
 * Every test runs in its own process (Check fork mode) with its own socknotifyd, WSAStartup done
 * and one port open; afterwards the daemon's descriptor count must be back to its baseline and
 * the daemon must stop cleanly.  The runner prints one line per test and ends with
 * "N passed, N failed"; the tests are shared among worker processes that run at once
 * (SN_TEST_JOBS, 4 by default, 1 under CK_FORK=no), their lines printed in the tests' order.
 * It also fails when docs/compatibility.md does not list exactly the
 * tests marked as divergences (its table rows "| row-", "| rule-", "| case-" and "| L").
 */
#include "tests/conformance/conformance.h"

struct test_daemon D;
HANDLE P;
static int baseline;

static void setup(void)
{
        WSADATA wsa;

        test_daemon_start(&D, (const char *const[]){ "--max-posted=64", NULL });
        baseline = test_daemon_fds(&D);
        setenv("SOCKNOTIFY_SOCKET", D.path, 1);
        ck_assert_int_eq(WSAStartup(WINSOCK_VERSION, &wsa), 0);
        P = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        ck_assert_ptr_nonnull(P);
}

static void teardown(void)
{
        if (P)
                CloseHandle(P);
        WSACleanup();
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 3000), baseline);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}

DWORD reg(HANDLE p, SOCKET s, uintptr_t key, UINT16 filter, UINT8 op, UINT8 trig)
{
        SOCK_NOTIFY_REGISTRATION r = { .socket = s, .completionKey = (PVOID)key,
                                       .eventFilter = filter, .operation = op,
                                       .triggerFlags = trig, .registrationResult = 0xdead };

        ck_assert_uint_eq(ProcessSocketNotifications(p, 1, &r, 0, 0, NULL, NULL), ERROR_SUCCESS);
        return r.registrationResult;
}

ULONG deq(HANDLE p, OVERLAPPED_ENTRY *e, ULONG n, DWORD ms)
{
        ULONG got = 99;

        if (!GetQueuedCompletionStatusEx(p, e, n, &got, ms, FALSE)) {
                ck_assert_uint_eq(GetLastError(), WAIT_TIMEOUT);
                ck_assert_uint_eq(got, 0);
                return 0;
        }
        ck_assert_uint_ge(got, 1);
        return got;
}

UINT32 one(HANDLE p, uintptr_t key)
{
        OVERLAPPED_ENTRY e[4];
        ULONG n = deq(p, e, 4, 1000);

        ck_assert_msg(n == 1, "expected one entry for key %lu, got %lu", (unsigned long)key, (unsigned long)n);
        ck_assert_uint_eq(e[0].lpCompletionKey, key);
        return SocketNotificationRetrieveEvents(&e[0]);
}

void none(HANDLE p, DWORD ms)
{
        OVERLAPPED_ENTRY e[4];
        ULONG n = deq(p, e, 4, ms);

        ck_assert_msg(n == 0, "expected nothing, got %lu entries (key %lu events %#x)", (unsigned long)n,
                      n ? (unsigned long)e[0].lpCompletionKey : 0UL,
                      n ? SocketNotificationRetrieveEvents(&e[0]) : 0);
}

UINT32 collect(HANDLE p, uintptr_t key, UINT32 want, int ms)
{
        long long end = now_ms() + test_timeout_ms(ms);
        UINT32 seen = 0;

        while ((seen & want) != want && now_ms() < end) {
                OVERLAPPED_ENTRY e[8];
                ULONG n = deq(p, e, 8, 50);

                for (ULONG i = 0; i < n; i++)
                        if (e[i].lpCompletionKey == key)
                                seen |= SocketNotificationRetrieveEvents(&e[i]);
        }
        return seen;
}

void remove_wait(HANDLE p, SOCKET s, uintptr_t key)
{
        ck_assert_uint_eq(reg(p, s, 0, 0, OP_REMOVE, 0), ERROR_SUCCESS);
        ck_assert_uint_eq(collect(p, key, E_REMOVE, 2000) & E_REMOVE, E_REMOVE);
}

long daemon_count(const char *field)
{
        sn_conn_t *c;
        char *s, *q, key[64];
        long n = -1;

        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_conn_status(c, &s), 0);
        snprintf(key, sizeof(key), "\"%s\":", field);
        q = strstr(s, key);
        if (q)
                n = strtol(q + strlen(key), NULL, 10);
        free(s);
        sn_conn_close(c);
        return n;
}

void wait_waiters(long n)
{
        long long end = now_ms() + test_timeout_ms(3000);

        while (daemon_count("waiters") != n)
                ck_assert_msg(now_ms() < end, "the daemon never had %ld waiters", n);
}

void drain(int fd)
{
        char buf[65536];

        while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
                ;
}

void reset_peer(int fd)
{
        struct linger lg = { .l_onoff = 1, .l_linger = 0 };

        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        close(fd);
}

void *gq_thread(void *arg)
{
        struct gq *g = arg;

        g->ov = (LPOVERLAPPED)1;
        g->ok = GetQueuedCompletionStatus(g->port, &g->bytes, &g->key, &g->ov, g->ms);
        g->error = GetLastError();
        g->returned = now_ms();
        return NULL;
}

void on_signal(int sig)
{
        (void)sig;
}

void *kick(void *arg)
{
        usleep(50000);
        pthread_kill(*(pthread_t *)arg, SIGUSR1);
        return NULL;
}

/* ---- runner --------------------------------------------------------------------------------- */

struct entry {
        const char *id;
        void (*fn)(int);
        int diverges;
        const char *text;
};

static const struct entry entries[] = {
#define CONF_ENTRY(id, div, text) { #id, conf_##id, div, text },
        CONFORMANCE_TESTS(CONF_ENTRY)
#undef CONF_ENTRY
};

/* "row_01" -> "row-01", "case_two_fds" -> "case-two-fds". */
static void display(const char *id, char *out, size_t n)
{
        snprintf(out, n, "%s", id);
        for (char *c = out; *c; c++)
                if (*c == '_')
                        *c = '-';
}

/* Every marked divergence, and only those, is a row of docs/compatibility.md's table. */
static int check_compatibility_doc(void)
{
        char path[512], line[1024], name[64];
        int listed[SN_ARRAY_SIZE(entries)] = { 0 }, bad = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/docs/compatibility.md", getenv("SN_SRCDIR"));
        f = fopen(path, "r");
        if (!f) {
                printf("compatibility.md FAIL cannot open %s\n", path);
                return 1;
        }
        while (fgets(line, sizeof(line), f)) {
                bool known = false;

                if (strncmp(line, "| row-", 6) && strncmp(line, "| rule-", 7) &&
                    strncmp(line, "| case-", 7) && strncmp(line, "| L", 3))
                        continue;
                for (size_t i = 0; i < SN_ARRAY_SIZE(entries); i++) {
                        display(entries[i].id, name, sizeof(name));
                        size_t k = strlen(name);
                        if (!strncmp(line + 2, name, k) && line[2 + k] == ' ') {
                                listed[i] = 1;
                                known = true;
                        }
                }
                if (!known) {
                        printf("compatibility.md FAIL lists an unknown test: %.40s\n", line);
                        bad = 1;
                }
        }
        fclose(f);
        for (size_t i = 0; i < SN_ARRAY_SIZE(entries); i++) {
                if (listed[i] != entries[i].diverges) {
                        display(entries[i].id, name, sizeof(name));
                        printf("compatibility.md FAIL %s is %s\n", name,
                               entries[i].diverges ? "a marked divergence but not listed"
                                                   : "listed but not marked as a divergence");
                        bad = 1;
                }
        }
        return bad;
}

/* How many worker processes share the tests: SN_TEST_JOBS (1 to 16), else 4; 1 under
 * CK_FORK=no, where a debugger wants one process.  Each test waits on its own daemon, mostly
 * asleep (about 0.2 s each, a tenth of it on the CPU), so four at a time take a quarter of the
 * time on two CPUs. */
static size_t worker_count(void)
{
        const char *j = getenv("SN_TEST_JOBS"), *f = getenv("CK_FORK");
        long n = j && *j ? strtol(j, NULL, 10) : 4;

        if (f && !strcmp(f, "no"))
                return 1;
        return n < 1 ? 1 : n > 16 ? 16 : (size_t)n;
}

/* The index of the entry whose test case is named tc, or -1. */
static long entry_index(const char *tc)
{
        char name[64];

        for (size_t k = 0; k < SN_ARRAY_SIZE(entries); k++) {
                display(entries[k].id, name, sizeof(name));
                if (!strcmp(name, tc))
                        return (long)k;
        }
        return -1;
}

/* A worker: runs every jobs-th entry from first, each in its own process with its own daemon
 * (Check fork mode), and writes one line per test run to fd, which it consumes: "INDEX 1" for
 * a pass, "INDEX 0 FILE:LINE: MESSAGE" for a failure.  Returns 0, or 1 when fd fails. */
static int run_share(size_t first, size_t jobs, int fd)
{
        static TTest tests[SN_ARRAY_SIZE(entries)];
        static char names[SN_ARRAY_SIZE(entries)][64];
        Suite *s = suite_create("conformance");
        TestResult **results;
        FILE *out = fdopen(fd, "w");
        SRunner *sr;
        int n;

        if (!out)
                return 1;
        for (size_t i = first; i < SN_ARRAY_SIZE(entries); i += jobs) {
                TCase *tc;

                display(entries[i].id, names[i], sizeof(names[i]));
                tests[i] = (TTest){ entries[i].id, entries[i].fn, __FILE__, __LINE__ };
                tc = tcase_create(names[i]);
                tcase_add_checked_fixture(tc, setup, teardown);
                tcase_set_timeout(tc, 30);
                tcase_add_test(tc, &tests[i]);
                suite_add_tcase(s, tc);
        }
        sr = srunner_create(s);
        srunner_run_all(sr, CK_SILENT);
        n = srunner_ntests_run(sr);
        results = srunner_results(sr);
        for (int i = 0; i < n; i++) {
                long k = entry_index(tr_tcname(results[i]));

                if (k < 0)
                        continue;
                if (tr_rtype(results[i]) == CK_PASS) {
                        fprintf(out, "%ld 1\n", k);
                } else {
                        const char *m = tr_msg(results[i]);
                        char msg[512];

                        snprintf(msg, sizeof(msg), "%s", m ? m : "");
                        for (char *c = msg; *c; c++)
                                if (*c == '\n')
                                        *c = ' ';
                        fprintf(out, "%ld 0 %s:%d: %s\n", k, tr_lfile(results[i]),
                                tr_lno(results[i]), msg);
                }
        }
        free(results);
        srunner_free(sr);
        return fclose(out) == 0 ? 0 : 1;
}

int main(void)
{
        enum { UNRUN = -1 };
        static int status[SN_ARRAY_SIZE(entries)];
        static char why[SN_ARRAY_SIZE(entries)][600];
        size_t jobs = worker_count();
        FILE *share[16];
        pid_t pids[16];
        int passed = 0, failed = 0;
        char name[64], line[1024];

        for (size_t i = 0; i < SN_ARRAY_SIZE(entries); i++)
                status[i] = UNRUN;
        fflush(stdout);
        /* Each worker writes its lines into a file of its own, read once it has ended.  One
         * worker runs in this process (no fork: gdb follows it). */
        for (size_t j = 0; j < jobs; j++) {
                share[j] = tmpfile();
                if (!share[j]) {
                        perror("run-conformance: tmpfile");
                        return 1;
                }
                if (jobs == 1) {
                        pids[j] = 0;
                        if (run_share(0, 1, dup(fileno(share[j]))))
                                failed++;
                        continue;
                }
                pids[j] = fork();
                if (pids[j] < 0) {
                        perror("run-conformance: fork");
                        return 1;
                }
                if (pids[j] == 0)
                        _exit(run_share(j, jobs, dup(fileno(share[j]))));
        }
        for (size_t j = 0; j < jobs; j++) {
                int st = 0;

                while (pids[j] > 0 && waitpid(pids[j], &st, 0) < 0 && errno == EINTR)
                        ;
                if (pids[j] > 0 && (!WIFEXITED(st) || WEXITSTATUS(st))) {
                        printf("worker %zu FAIL  ended with status %#x\n", j, (unsigned)st);
                        failed++;
                }
                rewind(share[j]);
                while (fgets(line, sizeof(line), share[j])) {
                        long k;
                        int ok, used = 0;

                        line[strcspn(line, "\n")] = 0;
                        if (sscanf(line, "%ld %d %n", &k, &ok, &used) < 2 || k < 0 ||
                            (size_t)k >= SN_ARRAY_SIZE(entries))
                                continue;
                        status[k] = ok;
                        snprintf(why[k], sizeof(why[k]), "%s", used ? line + used : "");
                }
                fclose(share[j]);
        }
        /* In the entries' order, whichever worker ran them.  A test selected (all of them, or
         * the one CK_RUN_CASE names) that no worker reported fails. */
        for (size_t i = 0; i < SN_ARRAY_SIZE(entries); i++) {
                const struct entry *e = &entries[i];
                const char *only = getenv("CK_RUN_CASE");

                display(e->id, name, sizeof(name));
                if (status[i] == UNRUN) {
                        if (only && *only && strcmp(only, name))
                                continue;
                        status[i] = 0;
                        snprintf(why[i], sizeof(why[i]), "no result: its worker never reported it");
                }
                if (status[i]) {
                        passed++;
                        printf("%-28s ok    %s%s\n", name, e->text,
                               e->diverges ? "  [divergence, docs/compatibility.md]" : "");
                } else {
                        failed++;
                        printf("%-28s FAIL  %s\n%-28s       %s\n", name, e->text, "", why[i]);
                }
        }
        if (check_compatibility_doc())
                failed++;
        else
                passed++, printf("%-28s ok    lists exactly the marked divergences\n",
                                 "compatibility.md");
        printf("%d passed, %d failed\n", passed, failed);
        return failed ? 1 : 0;
}
