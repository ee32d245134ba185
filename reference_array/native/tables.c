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

/* The staged-chunk and chunk-cache tables (see tables.h). */

#include <stdlib.h>

#include "tables.h"

static size_t slot(int64_t a, int64_t b, size_t n)
{
    uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ULL ^
        ((uint64_t)b + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
    return (size_t)((h ^ (h >> 29)) & (n - 1));
}

/* -- staged chunks ------------------------------------------------------ */
static int staged_grow(StagedTable *t)
{
    size_t n = t->nbuckets ? t->nbuckets * 2 : 1024;
    Staged **b = calloc(n, sizeof(*b));
    if (!b)
        return -1;
    for (Staged *e = t->head; e; e = e->next) {
        size_t i = slot(e->layer, e->idx, n);
        e->hnext = b[i];
        b[i] = e;
    }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
    return 0;
}

Staged *staged_get(StagedTable *t, int64_t layer, int64_t idx)
{
    if (!t->count)
        return NULL;
    for (Staged *e = t->buckets[slot(layer, idx, t->nbuckets)]; e;
         e = e->hnext)
        if (e->layer == layer && e->idx == idx)
            return e;
    return NULL;
}

Staged *staged_add(StagedTable *t, int64_t layer, int64_t idx)
{
    if (t->count + 1 > t->nbuckets && staged_grow(t) < 0)
        return NULL;
    Staged *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->layer = layer;
    e->idx = idx;
    size_t i = slot(layer, idx, t->nbuckets);
    e->hnext = t->buckets[i];
    t->buckets[i] = e;
    e->prev = t->tail;
    if (t->tail)
        t->tail->next = e;
    else
        t->head = e;
    t->tail = e;
    t->count++;
    return e;
}

void staged_remove(StagedTable *t, Staged *e)
{
    Staged **p = &t->buckets[slot(e->layer, e->idx, t->nbuckets)];
    while (*p != e)
        p = &(*p)->hnext;
    *p = e->hnext;
    if (e->prev)
        e->prev->next = e->next;
    else
        t->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        t->tail = e->prev;
    t->count--;
    free(e->data);
    free(e->mask);
    prepared_free(e->prep);
    free(e);
}

void staged_clear(StagedTable *t)
{
    while (t->head)
        staged_remove(t, t->head);
    free(t->buckets);
    t->buckets = NULL;
    t->nbuckets = 0;
}

/* -- decompressed chunks -------------------------------------------------- */
static void cache_unlink(ChunkCache *c, Cached *e)
{
    Cached **p = &c->buckets[slot(e->id, 0, c->nbuckets)];
    while (*p != e)
        p = &(*p)->hnext;
    *p = e->hnext;
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    c->count--;
    c->bytes -= e->len;
    free(e->data);
    free(e);
}

static void cache_append(ChunkCache *c, Cached *e)
{
    e->next = NULL;
    e->prev = c->tail;
    if (c->tail)
        c->tail->next = e;
    else
        c->head = e;
    c->tail = e;
}

Cached *cache_get(ChunkCache *c, int64_t id)
{
    if (!c->count)
        return NULL;
    for (Cached *e = c->buckets[slot(id, 0, c->nbuckets)]; e; e = e->hnext) {
        if (e->id != id)
            continue;
        if (e != c->tail) {
            if (e->prev)
                e->prev->next = e->next;
            else
                c->head = e->next;
            e->next->prev = e->prev;
            cache_append(c, e);
        }
        return e;
    }
    return NULL;
}

Cached *cache_put(ChunkCache *c, int64_t id, uint8_t *data, size_t len)
{
    if (c->count + 1 > c->nbuckets) {
        size_t n = c->nbuckets ? c->nbuckets * 2 : 1024;
        Cached **b = calloc(n, sizeof(*b));
        if (!b) {
            free(data);
            return NULL;
        }
        for (Cached *e = c->head; e; e = e->next) {
            size_t i = slot(e->id, 0, n);
            e->hnext = b[i];
            b[i] = e;
        }
        free(c->buckets);
        c->buckets = b;
        c->nbuckets = n;
    }
    Cached *e = calloc(1, sizeof(*e));
    if (!e) {
        free(data);
        return NULL;
    }
    e->id = id;
    e->data = data;
    e->len = len;
    size_t i = slot(id, 0, c->nbuckets);
    e->hnext = c->buckets[i];
    c->buckets[i] = e;
    cache_append(c, e);
    c->count++;
    c->bytes += len;
    while (c->bytes > c->limit && c->head != e)
        cache_unlink(c, c->head);
    return e;
}

void cache_forget(ChunkCache *c, int64_t id)
{
    if (!c->count)
        return;
    for (Cached *e = c->buckets[slot(id, 0, c->nbuckets)]; e; e = e->hnext)
        if (e->id == id) {
            cache_unlink(c, e);
            return;
        }
}

void cache_clear(ChunkCache *c)
{
    while (c->head)
        cache_unlink(c, c->head);
    free(c->buckets);
    c->buckets = NULL;
    c->nbuckets = 0;
}
