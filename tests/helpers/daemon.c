/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * daemon.c - test helpers (see daemon.h).  Real processes, real sockets; nothing is mocked.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "proto/codec.h"
#include "tests/helpers/daemon.h"

int test_run_suite(Suite *s)
{
        SRunner *sr = srunner_create(s);
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}

long long now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int test_timeout_ms(int ms)
{
        const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
        double f = m ? strtod(m, NULL) : 1;

        if (!(f > 0))
                f = 1;
        return f * ms > 1e9 ? 1000000000 : (int)(f * ms);
}

static bool can_connect(const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        bool ok;

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
        if (fd >= 0)
                close(fd);
        return ok;
}

/*
 * The daemon's loop runs: a connection is accepted and its HELLO answered (or refused: any
 * reply or end will do), then closed, and its descriptor is gone from the daemon before this
 * returns.  A bare connect() is not enough on a busy machine: it succeeds as soon as the socket
 * listens, and the daemon may still be starting when the test counts its descriptors, then
 * accept the probe and count it in the test's baseline.
 */
static void probe_served(struct test_daemon *d)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct snw_hello hello = { .magic = SN_PROTO_MAGIC, .version_min = 1, .version_max = 1 };
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        struct pollfd p = { .fd = fd, .events = POLLIN };
        long long deadline = now_ms() + test_timeout_ms(10000);
        uint8_t buf[256];
        bool refused;
        int open_fds;

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->path);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        snw_hello_encode(sn_msg_begin(buf, SN_MSG_HELLO, 1, 0, 0, 0, 0), &hello);
        ck_assert_int_eq(send(fd, buf, sn_msg_size(SN_MSG_HELLO, 0, 0), MSG_NOSIGNAL),
                         (ssize_t)sn_msg_size(SN_MSG_HELLO, 0, 0));
        ck_assert_msg(poll(&p, 1, test_timeout_ms(10000)) == 1, "socknotifyd does not answer");
        open_fds = test_daemon_fds(d);
        /* Refused connections are closed by the daemon after the reply: read to the end. */
        refused = recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0 ||
                  (poll(&p, 1, 0) == 1 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) == 0);
        close(fd);
        while (!refused && test_daemon_fds(d) >= open_fds && now_ms() < deadline)
                usleep(2000);
}

/*
 * The daemon's environment: the test's, without LISTEN_*, and with them when fds are passed.
 * Built before fork(): the child of a process with threads (a store's, a client's) must not
 * allocate, since another thread may have held the allocator's lock at the fork (the
 * sanitizers' allocator has no fork handler), so the child only makes system calls.
 * LISTEN_PID is the one slot the child fills, in place, with its own pid.
 */
extern char **environ;

struct child_env {
        char **envp;
        char listen_fds[32];
        char listen_pid[32];
        char *listen_names;
};

static void child_env_make(struct child_env *ce, unsigned nfds, const char *names)
{
        size_t n = 0, k = 0;

        memset(ce, 0, sizeof(*ce));
        while (environ[n])
                n++;
        ce->envp = calloc(n + 4, sizeof(char *));
        ck_assert_ptr_nonnull(ce->envp);
        for (size_t i = 0; i < n; i++)
                if (strncmp(environ[i], "LISTEN_", 7))
                        ce->envp[k++] = environ[i];
        if (nfds) {
                snprintf(ce->listen_fds, sizeof(ce->listen_fds), "LISTEN_FDS=%u", nfds);
                ck_assert_int_ge(asprintf(&ce->listen_names, "LISTEN_FDNAMES=%s",
                                          names ? names : ""), 0);
                snprintf(ce->listen_pid, sizeof(ce->listen_pid), "LISTEN_PID=");
                ce->envp[k++] = ce->listen_fds;
                ce->envp[k++] = ce->listen_names;
                ce->envp[k++] = ce->listen_pid;
        }
        ce->envp[k] = NULL;
}

static void child_env_free(struct child_env *ce)
{
        free(ce->envp);
        free(ce->listen_names);
}

/* In the child: writes the decimal v after the text already in buf (no allocation). */
static void put_decimal(char *buf, size_t size, long v)
{
        char digits[24];
        size_t len = strlen(buf), n = 0;

        do
                digits[n++] = (char)('0' + v % 10);
        while ((v /= 10) && n < sizeof(digits));
        while (n && len + 1 < size)
                buf[len++] = digits[--n];
        buf[len] = 0;
}

/* In the child: moves fds (n) to 3, 4, ... as socket activation passes them. */
static void pass_fds(const int *fds, unsigned n)
{
        int moved[256];

        for (unsigned i = 0; i < n && i < 256; i++)
                moved[i] = fcntl(fds[i], F_DUPFD, 512);
        for (unsigned i = 0; i < n && i < 256; i++)
                if (moved[i] < 0 || dup2(moved[i], 3 + (int)i) < 0)
                        _exit(126);
}

/* Why a started daemon is not listening yet: its state from /proc, for the failure message. */
static void describe_process(pid_t pid, char *out, size_t outsz)
{
        char path[64], exe[256] = "?", wchan[64] = "?", stat[256] = "?", sc[128] = "?";
        ssize_t n;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
        n = readlink(path, exe, sizeof(exe) - 1);
        exe[n > 0 ? n : 1] = 0;
        snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
        if ((f = fopen(path, "re"))) {
                if (!fgets(wchan, sizeof(wchan), f))
                        snprintf(wchan, sizeof(wchan), "?");
                fclose(f);
        }
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        if ((f = fopen(path, "re"))) {
                if (!fgets(stat, sizeof(stat), f))
                        snprintf(stat, sizeof(stat), "?");
                fclose(f);
        }
        snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
        if ((f = fopen(path, "re"))) {
                if (!fgets(sc, sizeof(sc), f))
                        snprintf(sc, sizeof(sc), "?");
                fclose(f);
        }
        stat[strcspn(stat, "\n")] = 0;
        sc[strcspn(sc, "\n")] = 0;
        snprintf(out, outsz, "exe %s, wchan %s, syscall %s, stat %.120s", exe, wchan, sc, stat);
}

/* nofile: the daemon's RLIMIT_NOFILE, or 0 to inherit the test's; uid: the user it runs as, or
 * (uid_t)-1 for the test's. */
static void spawn(struct test_daemon *d, const char *const *args, const int *fds, unsigned nfds,
                  const char *names, unsigned nofile, uid_t uid)
{
        const char *builddir = getenv("SN_BUILDDIR");
        const char *wrapper = getenv("SN_TEST_DAEMON_WRAPPER");
        const char *extra = getenv("SN_TEST_DAEMON_ARGS");
        char bin[512], *w = wrapper ? strdup(wrapper) : NULL, *save = NULL;
        char *x = extra ? strdup(extra) : NULL;
        const char *argv[64];
        struct child_env ce;
        pid_t parent = getpid();
        long long deadline;
        int n = 0;

        snprintf(bin, sizeof(bin), "%s/daemon/socknotifyd", builddir ? builddir : SN_BUILDDIR);
        for (char *t = w ? strtok_r(w, " ", &save) : NULL; t && n < 32;
             t = strtok_r(NULL, " ", &save))
                argv[n++] = t;
        argv[n++] = bin;
        argv[n++] = "--socket";
        argv[n++] = d->path;
        for (int i = 0; args && args[i] && n < 62; i++)
                argv[n++] = args[i];
        for (char *t = x ? strtok_r(x, " ", &save) : NULL; t && n < 63;
             t = strtok_r(NULL, " ", &save))
                argv[n++] = t;
        argv[n] = NULL;
        child_env_make(&ce, nfds, names);
        d->pid = fork();
        /* The child asserts nothing: Check's assertions take a lock, which another thread of
         * the test may have held at the fork. */
        if (d->pid == 0) {
                if (uid != (uid_t)-1 &&
                    (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
                     setresuid(uid, uid, uid) < 0))
                        _exit(126);
                /* After the switch, which clears it. */
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != parent)
                        _exit(127);
                if (nofile) {
                        struct rlimit rl = { nofile, nofile };

                        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                                _exit(126);
                }
                if (nfds) {
                        pass_fds(fds, nfds);
                        put_decimal(ce.listen_pid, sizeof(ce.listen_pid), (long)getpid());
                }
                /* Nothing else of the test's goes along (the daemon's descriptors are counted). */
                close_range(3 + nfds, ~0u, 0);
                execvpe(argv[0], (char *const *)argv, ce.envp);
                _exit(127);
        }
        ck_assert_int_ge(d->pid, 0);
        child_env_free(&ce);
        free(w);
        free(x);
        deadline = now_ms() + test_timeout_ms(20000);
        while (!can_connect(d->path)) {
                char why[512];
                int st;

                if (waitpid(d->pid, &st, WNOHANG) == d->pid)
                        ck_abort_msg("socknotifyd exited during start-up (status %d)", st);
                if (now_ms() >= deadline) {
                        describe_process(d->pid, why, sizeof(why));
                        ck_abort_msg("socknotifyd did not start in %d ms: %s",
                                     test_timeout_ms(20000), why);
                }
                usleep(5000);
        }
        /* The probe connection above must be gone before descriptors are counted. */
        if (!d->no_probe)
                probe_served(d);
        test_daemon_wait_fds(d, -1, 0);
}

void test_daemon_start_nofile(struct test_daemon *d, const char *const *args, unsigned nofile)
{
        d->no_probe = false; /* a new daemon: its caller may set it for the next starts */
        snprintf(d->dir, sizeof(d->dir), "/tmp/sn-test-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(d->dir));
        snprintf(d->path, sizeof(d->path), "%s/socknotify.sock", d->dir);
        spawn(d, args, NULL, 0, NULL, nofile, (uid_t)-1);
}

void test_daemon_start(struct test_daemon *d, const char *const *args)
{
        test_daemon_start_nofile(d, args, 0);
}

void test_daemon_start_resumable(struct test_daemon *d)
{
        test_daemon_start(d, NULL);
        setenv("SOCKNOTIFY_SOCKET", d->path, 1);
        setenv("SOCKNOTIFY_RECONNECT_MS", "60000", 1);
}

void test_daemon_stop_if_running(struct test_daemon *d)
{
        if (d->pid > 0)
                test_daemon_stop(d);
}

/* Whether some process runs as uid (any of its real, effective, saved or filesystem uids). */
static bool uid_in_use(uid_t uid)
{
        DIR *proc = opendir("/proc");
        struct dirent *e;
        bool used = false;

        ck_assert_ptr_nonnull(proc);
        while (!used && (e = readdir(proc))) {
                char p[300], line[256];
                unsigned long u[4];
                FILE *f;

                if (e->d_name[0] < '1' || e->d_name[0] > '9')
                        continue;
                snprintf(p, sizeof(p), "/proc/%s/status", e->d_name);
                f = fopen(p, "re");
                if (!f)
                        continue; /* gone meanwhile */
                while (fgets(line, sizeof(line), f))
                        if (sscanf(line, "Uid: %lu %lu %lu %lu", &u[0], &u[1], &u[2], &u[3]) ==
                            4) {
                                for (int i = 0; i < 4; i++)
                                        used = used || u[i] == (unsigned long)uid;
                                break;
                        }
                fclose(f);
        }
        closedir(proc);
        return used;
}

/* Whether uid may execute the daemon of the build tree (every parent directory searchable). */
static bool runs_daemon_as(uid_t uid)
{
        const char *builddir = getenv("SN_BUILDDIR");
        char bin[512];
        pid_t pid;
        int st;

        snprintf(bin, sizeof(bin), "%s/daemon/socknotifyd", builddir ? builddir : SN_BUILDDIR);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                _exit(setgroups(0, NULL) == 0 && setresgid(uid, uid, uid) == 0 &&
                      setresuid(uid, uid, uid) == 0 && access(bin, X_OK) == 0 ? 0 : 1);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

bool test_private_uid(uid_t *ret_uid, char *why, size_t whysz)
{
        if (geteuid() != 0) {
                snprintf(why, whysz, "needs root to run the daemon as a uid of its own (the "
                                     "kernel's budget of descriptors in flight is per user)");
                return false;
        }
        /* Far above any account, below 2^31; the pid keeps concurrent tests apart. */
        for (unsigned i = 0; i < 16; i++) {
                uid_t uid = (uid_t)(1900000000u + (unsigned)getpid() % 4194304u + i * 4194304u);

                if (!getpwuid(uid) && !uid_in_use(uid)) {
                        if (!runs_daemon_as(uid)) {
                                snprintf(why, whysz, "another uid cannot run the daemon from "
                                                     "this build tree (a parent directory is "
                                                     "private)");
                                return false;
                        }
                        *ret_uid = uid;
                        return true;
                }
        }
        snprintf(why, whysz, "found no uid that nothing runs as");
        return false;
}

void test_daemon_start_as(struct test_daemon *d, const char *const *args, uid_t uid)
{
        d->no_probe = false; /* a new daemon: its caller may set it for the next starts */
        snprintf(d->dir, sizeof(d->dir), "/tmp/sn-test-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(d->dir));
        ck_assert_int_eq(chown(d->dir, uid, uid), 0);
        snprintf(d->path, sizeof(d->path), "%s/socknotify.sock", d->dir);
        spawn(d, args, NULL, 0, NULL, 0, uid);
}

void test_daemon_start_with_fds(struct test_daemon *d, const char *const *args, const int *fds,
                                unsigned nfds, const char *names)
{
        ck_assert_uint_le(nfds, 256);
        spawn(d, args, fds, nfds, names, 0, (uid_t)-1);
}

int test_daemon_stop(struct test_daemon *d)
{
        if (d->pid <= 0)
                return -1;
        kill(d->pid, SIGTERM);
        return test_daemon_reap(d);
}

int test_daemon_reap(struct test_daemon *d)
{
        int st = 0;

        if (d->pid <= 0)
                return -1;
        while (waitpid(d->pid, &st, 0) < 0 && errno == EINTR)
                ;
        d->pid = 0;
        unlink(d->path);
        rmdir(d->dir);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int test_conn_fds(void)
{
        const char *v = getenv("SOCKNOTIFY_NO_SHM");

        return v && *v && strcmp(v, "0") != 0 ? 1 : 4;
}

long test_daemon_cpu_ticks(const struct test_daemon *d)
{
        char path[64], buf[1024], *p;
        long utime = 0, stime = 0;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)d->pid);
        f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
        fclose(f);
        p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
        ck_assert_ptr_nonnull(p);
        /* Fields after the command: state is 3rd; utime and stime are 14th and 15th. */
        ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld",
                                &utime, &stime), 2);
        return utime + stime;
}

int test_daemon_fds(const struct test_daemon *d)
{
        char p[64];
        DIR *dir;
        struct dirent *e;
        int n = 0;

        snprintf(p, sizeof(p), "/proc/%d/fd", (int)d->pid);
        dir = opendir(p);
        if (!dir)
                return -1;
        while ((e = readdir(dir)))
                if (e->d_name[0] != '.')
                        n++;
        closedir(dir);
        return n;
}

int test_daemon_wait_fds(const struct test_daemon *d, int want, int timeout_ms)
{
        long long deadline = now_ms() + test_timeout_ms(timeout_ms);
        int n = test_daemon_fds(d), last = -2, stable = 0;

        if (want < 0) {
                /* Wait until the count stops changing (used after start-up). */
                for (int i = 0; i < 200 && stable < 5; i++) {
                        usleep(2000);
                        n = test_daemon_fds(d);
                        stable = n == last ? stable + 1 : 0;
                        last = n;
                }
                return n;
        }
        while (n != want && now_ms() < deadline) {
                usleep(2000);
                n = test_daemon_fds(d);
        }
        return n;
}

int tcp_listener(unsigned short *port)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sa);
        int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ck_assert_int_ge(l, 0);
        ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(l, 128), 0);
        ck_assert_int_eq(getsockname(l, (struct sockaddr *)&sa, &len), 0);
        *port = sa.sin_port;
        return l;
}

void tcp_pair(int *client, int *server)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        unsigned short port;
        int l = tcp_listener(&port);

        sa.sin_port = port;
        *client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(*client, 0);
        ck_assert_int_eq(connect(*client, (struct sockaddr *)&sa, sizeof(sa)), 0);
        *server = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        ck_assert_int_ge(*server, 0);
        close(l);
}

void udp_pair(int *a, int *b)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        struct sockaddr_in sb = sa;
        socklen_t len = sizeof(sa);

        *a = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        *b = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        ck_assert_int_eq(bind(*a, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(bind(*b, (struct sockaddr *)&sb, sizeof(sb)), 0);
        ck_assert_int_eq(getsockname(*a, (struct sockaddr *)&sa, &len), 0);
        len = sizeof(sb);
        ck_assert_int_eq(getsockname(*b, (struct sockaddr *)&sb, &len), 0);
        ck_assert_int_eq(connect(*a, (struct sockaddr *)&sb, sizeof(sb)), 0);
        ck_assert_int_eq(connect(*b, (struct sockaddr *)&sa, sizeof(sa)), 0);
}

bool peer_closed(int fd, int timeout_ms)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };
        char c;

        if (poll(&p, 1, test_timeout_ms(timeout_ms)) <= 0)
                return false;
        return recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK) == 0;
}

long test_thread_syscall(pid_t tid)
{
        char path[64];
        long nr = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        if (fscanf(f, "%ld", &nr) != 1)
                nr = -1;
        fclose(f);
        return nr;
}
