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

/* Storing staged chunks: digests, compression, segment records, rows.
 *
 * One call stores a batch inside the engine's open transaction: it
 * resolves patches against what is stored, then for each layer of the
 * batch digests its chunks (dedup layers), compresses the new ones,
 * has the engine append them to a segment (the data is written before
 * the rows that point at it), and writes the rows: new chunks with
 * their references, references added to known chunks, map entries, the
 * old entries' references dropped, the layer's written bytes and the
 * totals. Entries stay staged: the engine drops them once its
 * transaction holds them (``drop_staged``).
 */

#include <stdlib.h>
#include <string.h>

#include "store.h"

typedef struct {
    int64_t layer;
    int64_t *chain;
    int n;
    int dedup;
} LayerInfo;

typedef struct {
    LayerInfo *items;
    size_t count;
} Layers;

static void layers_free(Layers *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i].chain);
    free(l->items);
}

/* The chain and dedup flag of a layer, asked of the engine once. */
static LayerInfo *layer_info(Layers *l, int64_t layer, PyObject *info)
{
    for (size_t i = 0; i < l->count; i++)
        if (l->items[i].layer == layer)
            return &l->items[i];
    PyObject *res = PyObject_CallFunction(info, "L", (long long)layer);
    if (!res)
        return NULL;
    PyObject *chain;
    int dedup;
    if (!PyArg_ParseTuple(res, "Op", &chain, &dedup) ||
            !PyTuple_Check(chain) || !PyTuple_GET_SIZE(chain)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "layer info: (chain, dedup)");
        Py_DECREF(res);
        return NULL;
    }
    LayerInfo *items = realloc(l->items, (l->count + 1) * sizeof(*items));
    if (!items) {
        Py_DECREF(res);
        PyErr_NoMemory();
        return NULL;
    }
    l->items = items;
    LayerInfo *it = &items[l->count];
    it->layer = layer;
    it->n = (int)PyTuple_GET_SIZE(chain);
    it->dedup = dedup;
    it->chain = malloc(it->n * sizeof(int64_t));
    if (!it->chain) {
        Py_DECREF(res);
        PyErr_NoMemory();
        return NULL;
    }
    for (int k = 0; k < it->n; k++)
        it->chain[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(chain, k));
    Py_DECREF(res);
    if (PyErr_Occurred()) {
        free(it->chain);
        return NULL;
    }
    l->count++;
    return it;
}

/* The earlier content of a patched chunk, as the Python engine found it:
 * the first layer of the chain that has the chunk (staged below: the
 * general read path), its logged slots applied. The entry of the
 * chunk's own layer is kept for storing it (one probe, not two); a
 * patch over that entry that fits the patch log is marked ``logged``
 * and needs no base. */
static int patch_base(Store *s, LayerInfo *li, Staged *e,
                      const uint8_t **base)
{
    *base = NULL;
    for (int k = 0; k < li->n; k++) {
        if (k && staged_get(&s->staged, li->chain[k], e->idx))
            return store_read_chunk(s, li->chain + k, li->n - k, e->idx,
                                    base);
        int64_t w[5];
        int found = store_map_read(s, li->chain[k], e->idx, w, 0);
        if (found < 0)
            return -1;
        if (!k) {
            e->old_known = found ? 1 : -1;
            e->old = found ? w[0] : 0;
            e->patches = found ? w[4] : 0;
            if (found && w[0] && store_loggable(s, e, w[4])) {
                e->logged = 1;
                return 0;
            }
        }
        if (found) {
            if (w[0] && !(*base = store_entry_data(s, li->chain[k], e->idx,
                                                   w)))
                return -1;
            return 0;
        }
    }
    return 0;
}

static int by_place(const void *a, const void *b)
{
    const Staged *x = *(Staged *const *)a, *y = *(Staged *const *)b;
    if (x->layer != y->layer)
        return x->layer < y->layer ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int by_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Chunks found or created in one layer's part of a batch, by digest. */
typedef struct {
    uint8_t (*digest)[32];
    int64_t *chunk;
    size_t mask;
} Known;

/* Bytes of a chunk compressed first, at its start and at its middle: if
 * neither shrinks, the chunk is stored as it is (chunk_store.py's pack:
 * compressing data that does not shrink costs a write the most CPU). */
#define PACK_SAMPLE 512

static size_t compress(const Packer *k, uint8_t *dst, size_t bound,
                       const uint8_t *src, size_t n)
{
    (*k->calls)++;
    return ZSTD_compressCCtx(k->cctx, dst, bound, src, n, k->level);
}

/* The record of a whole chunk into ``dst`` (``bound`` bytes): its
 * length, or a zstd error code. ``*shrank``: whether the previous chunk
 * of the batch shrank, and on return whether this one did. After one
 * that did, the samples are skipped: they cost a whole compression's
 * set-up again (zstd sizes its context for 512 bytes, then for the
 * chunk), and a chunk that does not shrink is stored as it is anyway,
 * so what is stored is the same either way. */
size_t store_pack_chunk(const Packer *k, uint8_t *dst, size_t bound,
                        const uint8_t *src, int *shrank)
{
    size_t n = k->chunk, got;
    if (store_is_frame(src, n))
        return compress(k, dst, bound, src, n);
    if (n >= 2 * PACK_SAMPLE && !*shrank) {
        size_t at[2] = {0, n / 2};
        int shrinks = 0;
        for (int j = 0; j < 2 && !shrinks; j++) {
            got = compress(k, dst, bound, src + at[j], PACK_SAMPLE);
            shrinks = ZSTD_isError(got) || got < PACK_SAMPLE;
        }
        if (!shrinks) {
            memcpy(dst, src, n);
            return n;
        }
    }
    got = compress(k, dst, bound, src, n);
    *shrank = ZSTD_isError(got) || got < n;
    if (!*shrank) {
        memcpy(dst, src, n);
        return n;
    }
    return got;
}

static int64_t *known_slot(Known *k, const uint8_t *digest)
{
    uint64_t h;
    memcpy(&h, digest, 8);
    for (size_t i = h & k->mask;; i = (i + 1) & k->mask) {
        if (!k->chunk[i] || !memcmp(k->digest[i], digest, 32)) {
            memcpy(k->digest[i], digest, 32);
            return &k->chunk[i];
        }
    }
}

/* Drop one reference per listed chunk id; free unreferenced ones. The
 * list is sorted in place. Returns [(seg, size)] of the freed records,
 * and the (uncompressed) bytes the references held in *logical. */
PyObject *store_unref(Store *s, int64_t *chunks, size_t n, int64_t *logical)
{
    int64_t physical = 0, stored = 0;
    PyObject *freed = PyList_New(0);
    if (!freed)
        return NULL;
    *logical = 0;
    qsort(chunks, n, sizeof(*chunks), by_id);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && chunks[j] == chunks[i])
            j++;
        int64_t chunk = chunks[i], count = (int64_t)(j - i);
        i = j;
        if (chunk <= 0)
            continue;
        /* The row first: a chunk whose last references go is deleted,
         * never updated before. */
        sqlite3_stmt *st = store_stmt(s, S_CHUNK_ROW);
        if (!st)
            goto fail;
        sqlite3_bind_int64(st, 1, chunk);
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
            sqlite3_reset(st);
            if (rc == SQLITE_DONE)
                continue;
            store_db_error(s);
            goto fail;
        }
        int64_t refs = sqlite3_column_int64(st, 0);
        int64_t raw = sqlite3_column_int64(st, 1);
        int64_t size = sqlite3_column_int64(st, 2);
        int legacy = sqlite3_column_type(st, 3) == SQLITE_NULL;
        int64_t seg = legacy ? -1 : sqlite3_column_int64(st, 3);
        sqlite3_reset(st);
        *logical += raw * count;
        if (refs > count) {
            if (store_exec(s, S_ADD_REFS, 2, -count, chunk, 0) < 0)
                goto fail;
            continue;
        }
        physical += size;
        stored += raw;
        cache_forget(&s->cache, chunk);
        if (store_exec(s, S_DELETE_CHUNK, 1, chunk, 0, 0) < 0)
            goto fail;
        if (legacy) {
            if (store_exec(s, S_DELETE_LEGACY, 1, chunk, 0, 0) < 0)
                goto fail;
            continue;
        }
        PyObject *item = Py_BuildValue("(LL)", (long long)seg,
                                       (long long)size);
        if (!item || PyList_Append(freed, item) < 0) {
            Py_XDECREF(item);
            goto fail;
        }
        Py_DECREF(item);
    }
    if (store_add_total(s, "logical", -*logical) < 0 ||
            store_add_total(s, "physical", -physical) < 0 ||
            store_add_total(s, "stored_raw", -stored) < 0)
        goto fail;
    return freed;
fail:
    Py_DECREF(freed);
    return NULL;
}

void store_put_header(uint8_t *p, int64_t chunk, size_t len)
{
    for (int k = 0; k < 8; k++)
        p[k] = (uint8_t)((uint64_t)chunk >> (8 * k));
    for (int k = 0; k < 4; k++)
        p[8 + k] = (uint8_t)((uint64_t)len >> (8 * k));
}

int store_pack_room(Store *s, size_t n, size_t bound)
{
    size_t want = n * (RECORD_HEADER + bound);
    if (want <= s->pack_cap)
        return 0;
    uint8_t *p = realloc(s->pack, want);
    if (!p)
        return store_fail(s, ERR_NOMEM, "out of memory");
    s->pack = p;
    s->pack_cap = want;
    return 0;
}

int store_append_records(Store *s, PyObject *append_packed, size_t used,
                         long long *seg, long long *start)
{
    PyObject *view = PyMemoryView_FromMemory((char *)s->pack,
                                             (Py_ssize_t)used, PyBUF_READ);
    if (!view)
        return -1;
    PyObject *place = PyObject_CallOneArg(append_packed, view);
    /* The buffer is the store's: nothing may read it after this call
     * (the call's own error, if any, is the one raised). */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *released = PyObject_CallMethod(view, "release", NULL);
    Py_DECREF(view);
    if (type) {
        Py_XDECREF(released);
        Py_XDECREF(place);
        PyErr_Restore(type, value, tb);
        return -1;
    }
    int ok = place && released &&
        PyArg_ParseTuple(place, "LL", seg, start);
    Py_XDECREF(place);
    Py_XDECREF(released);
    return ok ? 0 : -1;
}

/* Store whole and zero chunks ``e[0..m)`` of one layer, ascending idx:
 * the new chunks compressed into one buffer laid out as the segment
 * holds them, appended with one write, then the rows. */
static int put_blocks(Store *s, LayerInfo *li, Staged **e, size_t m,
                      PyObject *append_packed, PyObject *freed)
{
    int ok = -1;
    size_t slots = 16;
    while (slots < 2 * m)
        slots *= 2;
    int64_t *old = malloc(m * sizeof(int64_t));
    int64_t *chunk = calloc(m, sizeof(int64_t));
    uint8_t (*digest)[32] = malloc(m * 32);
    /* A new chunk's record: its offset in s->pack; -1: not new. */
    int64_t *rec = malloc(m * sizeof(int64_t));
    size_t *packed_len = calloc(m, sizeof(size_t)), fresh = 0, used = 0;
    Known known = {calloc(slots, 32), calloc(slots, sizeof(int64_t)),
                   slots - 1};
    PyObject *dropped = NULL;
    int64_t logical = 0, physical = 0, stored = 0, unheld = 0;
    size_t bound = ZSTD_compressBound(s->chunk);
    if (!old || !chunk || !digest || !rec || !packed_len ||
            !known.digest || !known.chunk) {
        store_fail(s, ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < m; i++) {
        int64_t c;
        int found = e[i]->old_known;
        rec[i] = -1;
        if (found)
            c = e[i]->old;
        else if ((found = store_map_entry(s, li->layer, e[i]->idx, &c,
                                          &e[i]->patches, 0)) < 0)
            goto out;
        old[i] = found > 0 ? c : 0;
    }
    if (li->dedup) {
        Py_BEGIN_ALLOW_THREADS
        for (size_t i = 0; i < m; i++) {
            if (e[i]->kind != STAGED_WHOLE)
                continue;
            if (e[i]->prep)
                memcpy(digest[i], e[i]->prep->digest, 32);
            else
                native_blake3(e[i]->data, s->chunk, digest[i]);
        }
        Py_END_ALLOW_THREADS
    }
    /* Which chunk each entry points at: a known one or a new one. */
    for (size_t i = 0; i < m; i++) {
        if (e[i]->kind != STAGED_WHOLE)
            continue;
        logical += s->chunk;
        int64_t *slot = NULL;
        if (li->dedup) {
            slot = known_slot(&known, digest[i]);
            if (!*slot) {
                sqlite3_stmt *st = store_stmt(s, S_DIGEST);
                if (!st)
                    goto out;
                sqlite3_bind_blob(st, 1, digest[i], 32, SQLITE_STATIC);
                int rc = sqlite3_step(st);
                if (rc == SQLITE_ROW)
                    *slot = sqlite3_column_int64(st, 0);
                sqlite3_reset(st);
                if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
                    store_db_error(s);
                    goto out;
                }
            }
            if (*slot) {
                chunk[i] = *slot;
                continue;
            }
        }
        chunk[i] = ++s->last_chunk;
        if (slot)
            *slot = chunk[i];
        rec[i] = 0;
        fresh++;
    }
    if (store_pack_room(s, fresh, bound) < 0)
        goto out;
    int failed = 0, shrank = 0;
    Packer packer = {s->cctx, s->level, s->chunk,
                     &s->work[W_COMPRESS_CALLS]};
    Py_BEGIN_ALLOW_THREADS
    for (size_t i = 0; i < m && !failed; i++) {
        if (rec[i] < 0)
            continue;
        rec[i] = (int64_t)used;
        Prepared *prep = e[i]->prep;
        if (prep && prep->rec) {
            /* Compressed without the lock (prepare.c), the same bytes. */
            memcpy(s->pack + used + RECORD_HEADER, prep->rec, prep->len);
            packed_len[i] = prep->len;
            shrank = prep->len < s->chunk;
            s->work[W_PREPARED_USED]++;
        } else {
            packed_len[i] = store_pack_chunk(
                &packer, s->pack + used + RECORD_HEADER, bound,
                e[i]->data, &shrank);
        }
        failed = ZSTD_isError(packed_len[i]);
        if (!failed) {
            store_put_header(s->pack + used, chunk[i], packed_len[i]);
            used += RECORD_HEADER + packed_len[i];
        }
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        store_fail(s, ERR_RUNTIME, "compression failed");
        goto out;
    }
    /* The data goes to its segment before any row points at it. */
    long long seg = 0, start = 0;
    if (used &&
            store_append_records(s, append_packed, used, &seg, &start) < 0)
        goto out;
    for (size_t i = 0; i < m; i++) {
        if (e[i]->kind != STAGED_WHOLE)
            continue;
        if (rec[i] < 0) {
            /* Negative: a chunk new in this batch, counted when made. */
            if (chunk[i] > 0 &&
                    store_exec(s, S_ADD_REFS, 2, 1, chunk[i], 0) < 0)
                goto out;
            continue;
        }
        long long off = start + rec[i] + RECORD_HEADER;
        /* Its references: this entry and the later ones of the batch
         * that found it by digest. */
        int64_t refs = 1;
        for (size_t j = i + 1; j < m; j++)
            refs += chunk[j] == chunk[i] && rec[j] < 0;
        sqlite3_stmt *st = store_stmt(s, S_INSERT_CHUNK);
        if (!st)
            goto out;
        sqlite3_bind_int64(st, 1, chunk[i]);
        if (li->dedup)
            sqlite3_bind_blob(st, 2, digest[i], 32, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 2);
        sqlite3_bind_int64(st, 3, refs);
        sqlite3_bind_int64(st, 4, (int64_t)s->chunk);
        sqlite3_bind_int64(st, 5, (int64_t)packed_len[i]);
        sqlite3_bind_int64(st, 6, seg);
        sqlite3_bind_int64(st, 7, off);
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
            store_db_error(s);
            goto out;
        }
        physical += packed_len[i];
        stored += s->chunk;
        /* Later entries of the same chunk hold references already. */
        for (size_t j = i + 1; j < m; j++)
            if (chunk[j] == chunk[i] && rec[j] < 0)
                chunk[j] = -chunk[j];
    }
    for (size_t i = 0; i < m; i++) {
        int64_t c = chunk[i] < 0 ? -chunk[i] : chunk[i];
        if (e[i]->kind == STAGED_WHOLE) {
            if (store_exec(s, S_PUT_MAP, 3, li->layer, e[i]->idx, c) < 0)
                goto out;
            continue;
        }
        /* Zeros over nothing cost nothing: no entry at all; over data
         * below, a zero entry masks it. */
        int masked = 0;
        for (int k = 1; k < li->n && !masked; k++) {
            int64_t below;
            masked = store_map_entry(s, li->chain[k], e[i]->idx, &below,
                                     NULL, 0);
            if (masked < 0)
                goto out;
        }
        if (store_exec(s, masked ? S_PUT_MAP : S_DELETE_MAP, masked ? 3 : 2,
                       li->layer, e[i]->idx, 0) < 0)
            goto out;
    }
    /* The entry's logged slots go with it (the new data holds them). */
    for (size_t i = 0; i < m; i++)
        if (e[i]->patches &&
                store_drop_patches(s, li->layer, e[i]->idx, freed) < 0)
            goto out;
    dropped = store_unref(s, old, m, &unheld);
    if (!dropped)
        goto out;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(dropped); i++)
        if (PyList_Append(freed, PyList_GET_ITEM(dropped, i)) < 0)
            goto out;
    /* What the layer holds itself, kept so that reading it is one row. */
    if ((logical != unheld &&
         store_exec(s, S_WRITTEN, 2, logical - unheld, li->layer, 0) < 0) ||
            store_add_total(s, "logical", logical) < 0 ||
            store_add_total(s, "physical", physical) < 0 ||
            store_add_total(s, "stored_raw", stored) < 0)
        goto out;
    ok = 0;
out:
    free(rec);
    free(packed_len);
    free(old);
    free(chunk);
    free(digest);
    free(known.digest);
    free(known.chunk);
    Py_XDECREF(dropped);
    return ok;
}

PyObject *store_settle(Store *s, Staged **batch, size_t n, PyObject *info,
                       PyObject *append_packed)
{
    Layers layers = {NULL, 0};
    PyObject *freed = PyList_New(0);
    if (!freed)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        batch[i]->old_known = 0;
        batch[i]->patches = 0;
        batch[i]->logged = 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (batch[i]->kind != STAGED_PATCH)
            continue;
        LayerInfo *li = layer_info(&layers, batch[i]->layer, info);
        const uint8_t *base;
        if (!li || patch_base(s, li, batch[i], &base) < 0 ||
                (!batch[i]->logged && store_resolve(s, batch[i], base) < 0))
            goto fail;
    }
    if (store_log_patches(s, batch, n, append_packed, freed) < 0)
        goto fail;
    /* What is left is stored whole. */
    size_t whole = 0;
    for (size_t i = 0; i < n; i++)
        if (!batch[i]->logged)
            batch[whole++] = batch[i];
    n = whole;
    qsort(batch, n, sizeof(*batch), by_place);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && batch[j]->layer == batch[i]->layer)
            j++;
        LayerInfo *li = layer_info(&layers, batch[i]->layer, info);
        if (!li ||
                put_blocks(s, li, batch + i, j - i, append_packed, freed) < 0)
            goto fail;
        i = j;
    }
    layers_free(&layers);
    return freed;
fail:
    layers_free(&layers);
    Py_DECREF(freed);
    return NULL;
}
