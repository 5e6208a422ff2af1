/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * pch.h for the reference's sample code (SN_REFERENCE_SAMPLE in tests/check-headers.sh): the Windows-only thread, lock and print calls
 * the reference's sample uses, over pthreads and stdio.  Nothing socket- or port-related may be
 * defined here: those names must come from <socknotify/winsock.h> unchanged.
 */
#pragma once

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <wchar.h>

#include <socknotify/winsock.h>

/* Locks. */
typedef pthread_mutex_t SRWLOCK;
#define SRWLOCK_INIT PTHREAD_MUTEX_INITIALIZER
static inline void AcquireSRWLockExclusive(SRWLOCK *l)
{
        pthread_mutex_lock(l);
}
static inline void ReleaseSRWLockExclusive(SRWLOCK *l)
{
        pthread_mutex_unlock(l);
}

/* Threads. */
typedef DWORD(WINAPI *LPTHREAD_START_ROUTINE)(PVOID);
struct sample_thread {
        LPTHREAD_START_ROUTINE fn;
        PVOID arg;
};
static inline void *sample_thread_main(void *p)
{
        struct sample_thread t = *(struct sample_thread *)p;

        free(p);
        t.fn(t.arg);
        return NULL;
}
static inline HANDLE CreateThread(void *, SIZE_T, LPTHREAD_START_ROUTINE fn, PVOID arg, DWORD,
                                  LPDWORD)
{
        struct sample_thread *t = (struct sample_thread *)malloc(sizeof(*t));
        pthread_t id;

        if (!t)
                return NULL;
        t->fn = fn;
        t->arg = arg;
        if (pthread_create(&id, NULL, sample_thread_main, t) != 0) {
                free(t);
                return NULL;
        }
        return (HANDLE)id;
}
static inline DWORD WaitForMultipleObjects(DWORD n, const HANDLE *threads, BOOL, DWORD)
{
        for (DWORD i = 0; i < n; i++)
                pthread_join((pthread_t)threads[i], NULL);
        return WAIT_OBJECT_0;
}
static inline DWORD GetCurrentThreadId(void)
{
        return (DWORD)gettid();
}
static inline void RaiseFailFastException(void *, void *, DWORD)
{
        abort();
}
#define _ASSERT(e) assert(e)

/* Printing. */
#define wprintf_s wprintf
#define FORMAT_MESSAGE_FROM_SYSTEM 0x00001000
static inline DWORD FormatMessageW(DWORD, LPCVOID, DWORD, DWORD, WCHAR *, DWORD, void *)
{
        return 0;
}
