/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * registry.h - kernel socket identity (device, inode) -> registration (registry.c).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct reg;

struct registry {
        struct reg **buckets;
        size_t nbuckets; /* power of two */
        size_t count;
};

int registry_init(struct registry *r);
void registry_deinit(struct registry *r);
struct reg *registry_find(const struct registry *r, uint64_t dev, uint64_t ino);
/* Inserts reg (not yet present).  Returns 0 or -ENOMEM (then reg is not inserted). */
int registry_insert(struct registry *r, struct reg *reg);
void registry_remove(struct registry *r, struct reg *reg);
