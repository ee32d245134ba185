/*
 * Copyright 2026 The cinder-flash Authors
 *
 *    Licensed under the Apache License, Version 2.0 (the "License"); you may
 *    not use this file except in compliance with the License. You may obtain
 *    a copy of the License at
 *
 *         http://www.apache.org/licenses/LICENSE-2.0
 *
 *    Unless required by applicable law or agreed to in writing, software
 *    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
 *    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
 *    License for the specific language governing permissions and limitations
 *    under the License.
 */

/* In-memory tables of the native store: staged chunks (the write-back
 * cache) and decompressed chunks (the read cache). Both are chained
 * hash tables with a list in insertion (or use) order.
 */
#ifndef REFERENCE_ARRAY_NATIVE_TABLES_H
#define REFERENCE_ARRAY_NATIVE_TABLES_H

#include <stddef.h>
#include <stdint.h>

enum { STAGED_WHOLE, STAGED_ZERO, STAGED_PATCH };

/* A whole staged chunk digested and compressed without the engine's
 * lock (prepare.c): its BLAKE3 digest and its record as a segment holds
 * it after the header (``len`` bytes of ``rec``). */
typedef struct Prepared {
    int64_t layer, idx;
    uint64_t gen;
    uint8_t digest[32];
    uint8_t *data;              /* the copy it is made from */
    uint8_t *rec;
    size_t len;
    long long calls;            /* zstd calls it took */
    int twin;                   /* an earlier one has its digest */
} Prepared;

void prepared_free(Prepared *p);

/* One staged chunk: whole data, zeros, or bytes written into part of a
 * chunk whose earlier content has not been looked up yet (a patch: the
 * bytes and a bit per byte written). */
typedef struct Staged {
    int64_t layer, idx;
    int kind;
    uint8_t *data;
    uint8_t *mask;
    /* While a batch is stored: its own layer's map entry, looked up once
     * (old_known: 1 entry ``old``, -1 no entry, 0 not looked up). */
    int old_known;
    int64_t old;
    int64_t patches;            /* ``old``'s logged slots, a bit each */
    int logged;                 /* stored in the patch log this batch */
    /* Bumped whenever the entry's content changes: a chunk prepared
     * from an earlier content is not used (prepare.c). */
    uint64_t gen;
    int taken;                  /* a connection is preparing it */
    struct Prepared *prep;      /* its digest and record, made unlocked */
    struct Staged *hnext;
    struct Staged *prev, *next;
} Staged;

typedef struct {
    Staged **buckets;
    size_t nbuckets, count;
    Staged *head, *tail;        /* oldest first */
} StagedTable;

Staged *staged_get(StagedTable *t, int64_t layer, int64_t idx);
/* A new entry at the end of the order (NULL when out of memory). */
Staged *staged_add(StagedTable *t, int64_t layer, int64_t idx);
void staged_remove(StagedTable *t, Staged *e);
void staged_clear(StagedTable *t);

typedef struct Cached {
    int64_t id;
    uint8_t *data;
    size_t len;
    struct Cached *hnext, *prev, *next;
} Cached;

typedef struct {
    Cached **buckets;
    size_t nbuckets, count, bytes, limit;
    Cached *head, *tail;        /* least recently used first */
} ChunkCache;

/* The cached data of a chunk, now the most recently used; or NULL. */
Cached *cache_get(ChunkCache *c, int64_t id);
/* Keep ``data`` (taken over) for a chunk; older entries go beyond the
 * limit, never the new one. NULL when out of memory (data is freed). */
Cached *cache_put(ChunkCache *c, int64_t id, uint8_t *data, size_t len);
void cache_forget(ChunkCache *c, int64_t id);
void cache_clear(ChunkCache *c);

#endif
