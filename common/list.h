/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * list.h - intrusive circular doubly-linked list.
 *
 * A node that is not on a list points to itself, so sn_list_del() is idempotent and
 * sn_list_linked() is reliable; objects embed their nodes and are never allocated by the list.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct sn_list {
        struct sn_list *next, *prev;
};

#define SN_LIST_INIT(name) { &(name), &(name) }

static inline void sn_list_init(struct sn_list *l)
{
        l->next = l->prev = l;
}

static inline bool sn_list_empty(const struct sn_list *l)
{
        return l->next == l;
}

static inline bool sn_list_linked(const struct sn_list *n)
{
        return n->next != n;
}

static inline void sn__list_insert(struct sn_list *n, struct sn_list *prev, struct sn_list *next)
{
        n->prev = prev;
        n->next = next;
        prev->next = n;
        next->prev = n;
}

/* Appends n at the tail of head. */
static inline void sn_list_add_tail(struct sn_list *head, struct sn_list *n)
{
        sn__list_insert(n, head->prev, head);
}

/* Inserts n at the front of head. */
static inline void sn_list_add_head(struct sn_list *head, struct sn_list *n)
{
        sn__list_insert(n, head, head->next);
}

static inline void sn_list_del(struct sn_list *n)
{
        n->prev->next = n->next;
        n->next->prev = n->prev;
        n->next = n->prev = n;
}

#define sn_list_entry(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#define sn_list_first(head, type, member)                                                          \
        (sn_list_empty(head) ? NULL : sn_list_entry((head)->next, type, member))
#define sn_list_foreach_safe(pos, tmp, head)                                                       \
        for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head);                          \
             (pos) = (tmp), (tmp) = (pos)->next)
