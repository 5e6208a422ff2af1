/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * driver.c - regression driver for the fuzz targets, used when they are built without
 * libFuzzer.
 *
 * Runs every file named on the command line (directories: every regular file inside, sorted)
 * through LLVMFuzzerTestOneInput(), once each, in this process, printing one line per file.
 * A defect the input reproduces shows up as it does under libFuzzer: an abort() from the
 * target's invariant checks, or a sanitizer report when built with --enable-sanitizers.
 * Exit status 0 when every input ran to its end.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path)
{
        FILE *f = fopen(path, "rb");
        uint8_t *data = NULL;
        size_t size = 0, cap = 0, n;

        if (!f) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -1;
        }
        do {
                if (size == cap) {
                        uint8_t *nd = realloc(data, cap ? cap * 2 : 4096);

                        if (!nd) {
                                fclose(f);
                                free(data);
                                return -1;
                        }
                        data = nd;
                        cap = cap ? cap * 2 : 4096;
                }
                n = fread(data + size, 1, cap - size, f);
                size += n;
        } while (n > 0);
        fclose(f);
        /* An exact-size copy, as libFuzzer gives, so that overreads are caught. */
        {
                uint8_t *exact = malloc(size ? size : 1);

                if (!exact) {
                        free(data);
                        return -1;
                }
                memcpy(exact, data, size);
                free(data);
                printf("running %s (%zu bytes)\n", path, size);
                fflush(stdout);
                LLVMFuzzerTestOneInput(exact, size);
                free(exact);
        }
        printf("ok %s\n", path);
        fflush(stdout);
        return 0;
}

static int by_name(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_path(const char *path)
{
        struct stat st;
        struct dirent *de;
        char **names = NULL;
        size_t n = 0;
        int r = 0;
        DIR *dir;

        if (stat(path, &st) < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -1;
        }
        if (!S_ISDIR(st.st_mode))
                return run_file(path);
        dir = opendir(path);
        if (!dir)
                return -1;
        while ((de = readdir(dir))) {
                char **nn;

                if (de->d_name[0] == '.')
                        continue;
                nn = realloc(names, (n + 1) * sizeof(*names));
                if (!nn)
                        break;
                names = nn;
                if (asprintf(&names[n], "%s/%s", path, de->d_name) < 0)
                        break;
                n++;
        }
        closedir(dir);
        qsort(names, n, sizeof(*names), by_name);
        for (size_t i = 0; i < n; i++) {
                if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode) && run_file(names[i]) < 0)
                        r = -1;
                free(names[i]);
        }
        free(names);
        return r;
}

int main(int argc, char **argv)
{
        int r = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: %s FILE|DIR...\n"
                                "Runs each input once through the fuzz target.\n", argv[0]);
                return 2;
        }
        if (LLVMFuzzerInitialize)
                LLVMFuzzerInitialize(&argc, &argv);
        for (int i = 1; i < argc; i++)
                if (run_path(argv[i]) < 0)
                        r = 1;
        return r;
}
