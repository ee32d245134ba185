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

/* Digest and compression of staged chunks without the engine's lock.
 *
 * Storing a batch is serial under the engine's one lock, and most of its
 * CPU is a chunk's BLAKE3 digest and zstd compression, which need no
 * row and no map. So a connection that finds the write-back cache full
 * first takes, under the lock, copies of the oldest whole staged chunks
 * (each marked ``taken``, so another connection takes others), lets the
 * lock go while it digests and compresses the copies, then, under the
 * lock again, hands each result to its staged entry if that still holds
 * the content it was made from (``gen``). The batch stored next uses a
 * prepared entry's digest and record instead of making them; the dedup
 * lookup, the rows, the maps and the segment append stay under the lock
 * in the batch's transaction, so a chunk two connections prepare at
 * once is stored once, and a crash loses nothing a batch had not
 * stored before either. */

#include <stdlib.h>
#include <string.h>

#include "store.h"

void prepared_free(Prepared *p)
{
    if (!p)
        return;
    free(p->data);
    free(p->rec);
    free(p);
}

/* Under the lock: copies of the whole chunks among the oldest ``limit``
 * staged that nobody prepares or has prepared, ``most`` at most. */
static size_t take(Store *s, Prepared **out, size_t limit, size_t most)
{
    size_t n = 0, seen = 0;
    for (Staged *e = s->staged.head; e && seen < limit && n < most;
            e = e->next) {
        seen++;
        if (e->kind != STAGED_WHOLE || e->taken || e->prep)
            continue;
        Prepared *p = calloc(1, sizeof(*p));
        if (!p || !(p->data = malloc(s->chunk))) {
            free(p);
            break;
        }
        memcpy(p->data, e->data, s->chunk);
        p->layer = e->layer;
        p->idx = e->idx;
        p->gen = e->gen;
        e->taken = 1;
        out[n++] = p;
    }
    return n;
}

/* Without the lock: each copy's digest and record (``rec`` stays NULL
 * when that fails: the batch then does it itself). A copy whose digest
 * an earlier one has is not compressed: the batch finds it by digest
 * (in a deduplicating layer; elsewhere it compresses it itself). */
static void make(Prepared **p, size_t n, ZSTD_CCtx *cctx, int level,
                 size_t chunk)
{
    size_t bound = ZSTD_compressBound(chunk);
    int shrank = 0;
    for (size_t i = 0; i < n; i++) {
        Packer k = {cctx, level, chunk, &p[i]->calls};
        native_blake3(p[i]->data, chunk, p[i]->digest);
        for (size_t j = 0; j < i && !p[i]->twin; j++)
            p[i]->twin = !memcmp(p[j]->digest, p[i]->digest, 32);
        if (p[i]->twin) {
            free(p[i]->data);
            p[i]->data = NULL;
            continue;
        }
        if (!(p[i]->rec = malloc(bound)))
            continue;
        size_t got = store_pack_chunk(&k, p[i]->rec, bound, p[i]->data,
                                      &shrank);
        if (ZSTD_isError(got)) {
            free(p[i]->rec);
            p[i]->rec = NULL;
            continue;
        }
        p[i]->len = got;
        free(p[i]->data);
        p[i]->data = NULL;
    }
}

/* Under the lock: each result to its entry, if it still holds what the
 * result was made from; how many were handed over. */
static size_t attach(Store *s, Prepared **p, size_t n)
{
    size_t given = 0;
    for (size_t i = 0; i < n; i++) {
        Staged *e = staged_get(&s->staged, p[i]->layer, p[i]->idx);
        int same = e && e->gen == p[i]->gen;
        if (same)
            e->taken = 0;
        if (same && (p[i]->rec || p[i]->twin) && !e->prep) {
            e->prep = p[i];
            s->work[W_PREPARED]++;
            s->work[W_PREPARED_CALLS] += p[i]->calls;
            given++;
            continue;
        }
        s->work[W_PREPARED_LOST]++;
        prepared_free(p[i]);
    }
    return given;
}

long store_prepare(Store *s, NativeLock *lock, ZSTD_CCtx *cctx,
                   size_t limit, size_t most, size_t least, size_t *staged)
{
    if (!most || most > limit)
        most = limit;
    Prepared **p = malloc((most ? most : 1) * sizeof(*p));
    if (!p)
        return -1;
    native_lock_acquire(lock);
    size_t count = s->staged.count;
    size_t n = s->db && count >= least ? take(s, p, limit, most) : 0;
    int level = s->level;
    size_t chunk = s->chunk;
    native_lock_release(lock);
    if (staged)
        *staged = count;
    size_t given = 0;
    if (n) {
        make(p, n, cctx, level, chunk);
        native_lock_acquire(lock);
        if (s->db) {
            given = attach(s, p, n);
        } else {
            for (size_t i = 0; i < n; i++)
                prepared_free(p[i]);
        }
        native_lock_release(lock);
    }
    free(p);
    return (long)given;
}
