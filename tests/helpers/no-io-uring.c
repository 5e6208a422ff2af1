/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * no-io-uring.c - runs a command in which io_uring_setup(2) fails with EPERM, as it does under
 * a seccomp profile that does not allow it (a systemd unit's SystemCallFilter= with
 * SystemCallErrorNumber=EPERM).  The filter is the kernel's own, inherited by the command and
 * everything it executes (a daemon's re-exec too); nothing else is refused.
 *
 *   no-io-uring COMMAND [ARG]...
 *
 * Exits 126 when the filter cannot be installed, 127 when COMMAND cannot be executed.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#if defined(__x86_64__)
#define SN_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SN_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__i386__)
#define SN_AUDIT_ARCH AUDIT_ARCH_I386
#else
#error "no-io-uring: add this architecture's AUDIT_ARCH_*"
#endif

int main(int argc, char **argv)
{
        struct sock_filter insns[] = {
                /* Another architecture's calls (x86's 32-bit ones) pass unfiltered: the daemon
                 * under test is built for this one. */
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SN_AUDIT_ARCH, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = sizeof(insns) / sizeof(insns[0]), .filter = insns };

        if (argc < 2) {
                fprintf(stderr, "usage: no-io-uring COMMAND [ARG]...\n");
                return 2;
        }
        /* Without privileges a filter needs no_new_privs, which the command keeps. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
                fprintf(stderr, "no-io-uring: seccomp filter: %s\n", strerror(errno));
                return 126;
        }
        execvp(argv[1], argv + 1);
        fprintf(stderr, "no-io-uring: %s: %s\n", argv[1], strerror(errno));
        return 127;
}
