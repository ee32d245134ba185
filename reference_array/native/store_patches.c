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

/* The patch log: whole 4 KiB slots written into a stored chunk, kept
 * uncompressed beside it (see store.h) so that a small write does not
 * read, patch and compress the whole chunk again.
 *
 * A slot record is a chunk row without a digest (one reference, raw and
 * stored size PATCH_SLOT) whose data is a segment record like any
 * other, so segments, compaction and recovery count it as they count
 * chunks; a ``patches`` row names it for (layer, idx, slot). The rows
 * and the record are written in the batch's transaction: a crash keeps
 * the chunk as it was or with its patches, never half of them. Patch
 * records hold no logical bytes: the map entry under them does.
 */

#include <stdlib.h>
#include <string.h>

#include "store.h"

/* The data of the slot record a row of ``st`` names from column ``col``:
 * its chunk id, segment, offset and size. */
static const uint8_t *record_at(Store *s, sqlite3_stmt *st, int col)
{
    int64_t w[4];
    store_place_at(st, col, w);
    return store_chunk_data(s, w[0], 1, w[1], w[2], w[3]);
}

/* Whether the slots of ``mask`` are all of a chunk's. */
static int every_slot(const Store *s, int64_t mask)
{
    size_t slots = s->chunk / PATCH_SLOT;
    return slots < PATCH_MASK_SLOTS &&
        (uint64_t)mask == ((uint64_t)1 << slots) - 1;
}

/* The data of a map entry ``w`` (see store_map_read) of (layer, idx),
 * its logged slots applied. Valid until the next read. A chunk whose
 * every slot is logged is not read (nor decompressed) under them. */
const uint8_t *store_entry_data(Store *s, int64_t layer, int64_t idx,
                                const int64_t w[5])
{
    int whole = w[4] && every_slot(s, w[4]);
    uint64_t applied = 0;
    if (!whole) {
        const uint8_t *base = store_chunk_data(s, w[0], 1, w[1], w[2],
                                               w[3]);
        if (!base || !w[4])
            return base;
        memcpy(s->patched, base, s->chunk);
    }
    sqlite3_stmt *st = store_stmt(s, S_PATCHES);
    if (!st)
        return NULL;
    sqlite3_bind_int64(st, 1, layer);
    sqlite3_bind_int64(st, 2, idx);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t slot = sqlite3_column_int64(st, 0);
        const uint8_t *p = record_at(s, st, 1);
        if (!p) {
            sqlite3_reset(st);
            return NULL;
        }
        if (slot >= 0 && (size_t)(slot + 1) * PATCH_SLOT <= s->chunk) {
            memcpy(s->patched + slot * PATCH_SLOT, p, PATCH_SLOT);
            if (slot < PATCH_MASK_SLOTS)
                applied |= (uint64_t)1 << slot;
        }
        s->work[W_LOG_READS]++;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        store_db_error(s);
        return NULL;
    }
    /* Nothing under the slots was read: each must have been applied. */
    if (whole && applied != (uint64_t)w[4]) {
        store_fail(s, ERR_DB, "chunk %lld of layer %lld: a logged slot has "
                   "no record", (long long)idx, (long long)layer);
        return NULL;
    }
    return s->patched;
}

/* ``len`` bytes at ``inner`` of chunk ``idx`` of the image ``chain``:
 * *out points at them, or is NULL for zeros. What a read asks of one
 * chunk. A part inside one slot of a stored chunk with logged slots
 * needs that slot alone: the slot's record if it is logged, else the
 * chunk under it; the other slots' records are not read, and a logged
 * slot's chunk is not decompressed. So a volume's random reads after
 * overwrites cost about what a fresh volume's do (the entry and the
 * slot's record found by one statement) before the background merge has
 * stored its chunks whole again. */
int store_read_part(Store *s, const int64_t *chain, int n, int64_t idx,
                    int64_t inner, int64_t len, const uint8_t **out)
{
    const uint8_t *data;
    int64_t w[9], slot = inner / PATCH_SLOT;
    int staged, one = (inner + len - 1) / PATCH_SLOT == slot;
    int k = store_chunk_layer(s, chain, n, idx, one ? slot : -1, w,
                              &staged);
    if (k < 0)
        return -1;
    *out = NULL;
    if (k == n || (!staged && !w[0]))
        return 0;
    if (staged) {
        if (store_read_chunk(s, chain + k, n - k, idx, &data) < 0)
            return -1;
        if (!data)
            return 0;
    } else if (one && w[5]) {
        const uint8_t *record = store_chunk_data(s, w[5], 1, w[6], w[7],
                                                 w[8]);
        if (!record)
            return -1;
        s->work[W_LOG_READS]++;
        *out = record + inner % PATCH_SLOT;
        return 0;
    } else if (one) {
        data = store_chunk_data(s, w[0], 1, w[1], w[2], w[3]);
    } else {
        data = store_entry_data(s, chain[k], idx, w);
    }
    if (!data)
        return -1;
    *out = data + inner;
    return 0;
}

/* Drop one reference per listed slot record; their bytes were never
 * counted as logical (store_unref takes them off: they go back). */
static int unref_records(Store *s, int64_t *ids, size_t n, PyObject *freed)
{
    int64_t logical;
    if (!n)
        return 0;
    PyObject *dropped = store_unref(s, ids, n, &logical);
    if (!dropped)
        return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(dropped); i++)
        if (PyList_Append(freed, PyList_GET_ITEM(dropped, i)) < 0) {
            Py_DECREF(dropped);
            return -1;
        }
    Py_DECREF(dropped);
    return store_add_total(s, "logical", logical);
}

/* The patches of (layer, idx) go (its map entry is replaced or merged);
 * [(seg, size)] of the records freed are added to ``freed``. */
int store_drop_patches(Store *s, int64_t layer, int64_t idx, PyObject *freed)
{
    int64_t ids[64];
    size_t n = 0;
    sqlite3_stmt *st = store_stmt(s, S_DROP_PATCHES);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, layer);
    sqlite3_bind_int64(st, 2, idx);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (n < sizeof(ids) / sizeof(ids[0]))
            ids[n++] = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        store_db_error(s);
        return -1;
    }
    return unref_records(s, ids, n, freed);
}

/* Whether a staged patch over its layer's own chunk (whose logged slots
 * are the bits of ``existing``) goes to the log: it covers whole slots
 * only, and leaves no more than PATCH_BOUND distinct slots logged (a
 * slot logged already is replaced). A slot that begins as a zstd frame
 * does not (its record would read as one). */
int store_loggable(Store *s, const Staged *e, int64_t existing)
{
    size_t per = PATCH_SLOT / 8, slots = s->chunk / PATCH_SLOT;
    uint64_t mask = (uint64_t)existing;
    if (s->chunk % PATCH_SLOT || slots < 2 || slots >= PATCH_MASK_SLOTS ||
            !e->mask)
        return 0;
    int written = 0;
    for (size_t j = 0; j < slots; j++) {
        const uint8_t *m = e->mask + j * per;
        if (!memcmp(m, s->zero, per))
            continue;
        for (size_t b = 0; b < per; b++)
            if (m[b] != 0xff)
                return 0;
        if (store_is_frame(e->data + j * PATCH_SLOT, PATCH_SLOT))
            return 0;
        mask |= (uint64_t)1 << j;
        written = 1;
    }
    return written && __builtin_popcountll(mask) <= PATCH_BOUND;
}

static int slot_written(Store *s, const Staged *e, size_t j)
{
    return e->mask[j * PATCH_SLOT / 8] == 0xff;
}

/* Store the slots of the batch's logged patches (``logged`` set):
 * records laid out and appended first (one write, as for chunks), then
 * their chunk rows and patch rows; a slot written again frees its
 * earlier record. */
int store_log_patches(Store *s, Staged **batch, size_t n,
                      PyObject *append_packed, PyObject *freed)
{
    int ok = -1;
    size_t slots = s->chunk / PATCH_SLOT, count = 0, olds = 0, used = 0;
    const size_t step = RECORD_HEADER + PATCH_SLOT;
    int64_t first = s->last_chunk + 1, *old = NULL;
    long long seg, start;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; batch[i]->logged && j < slots; j++)
            count += slot_written(s, batch[i], j);
    if (!count)
        return 0;
    if (store_pack_room(s, count, PATCH_SLOT) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; batch[i]->logged && j < slots; j++) {
            if (!slot_written(s, batch[i], j))
                continue;
            store_put_header(s->pack + used, ++s->last_chunk, PATCH_SLOT);
            memcpy(s->pack + used + RECORD_HEADER,
                   batch[i]->data + j * PATCH_SLOT, PATCH_SLOT);
            used += step;
        }
    /* The data goes to its segment before any row points at it. */
    if (store_append_records(s, append_packed, used, &seg, &start) < 0)
        return -1;
    if (!(old = malloc(count * sizeof(int64_t))))
        return store_fail(s, ERR_NOMEM, "out of memory");
    int64_t id = first;
    for (size_t i = 0; i < n; i++) {
        Staged *e = batch[i];
        for (size_t j = 0; e->logged && j < slots; j++) {
            if (!slot_written(s, e, j))
                continue;
            long long off = start + (long long)((id - first) * step) +
                RECORD_HEADER;
            sqlite3_stmt *st;
            int rc;
            if ((uint64_t)e->patches >> j & 1) {
                if (!(st = store_stmt(s, S_PATCH_SLOT)))
                    goto out;
                sqlite3_bind_int64(st, 1, e->layer);
                sqlite3_bind_int64(st, 2, e->idx);
                sqlite3_bind_int64(st, 3, (int64_t)j);
                if ((rc = sqlite3_step(st)) == SQLITE_ROW)
                    old[olds++] = sqlite3_column_int64(st, 0);
                sqlite3_reset(st);
                if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                    goto db_error;
            }
            if (!(st = store_stmt(s, S_INSERT_CHUNK)))
                goto out;
            int64_t row[7] = {id, 0, 1, PATCH_SLOT, PATCH_SLOT, seg, off};
            for (int c = 0; c < 7; c++)
                if (c == 1)
                    sqlite3_bind_null(st, 2);
                else
                    sqlite3_bind_int64(st, c + 1, row[c]);
            rc = sqlite3_step(st);
            sqlite3_reset(st);
            if (rc != SQLITE_DONE || !(st = store_stmt(s, S_PUT_PATCH)))
                goto db_error;
            int64_t patch[4] = {e->layer, e->idx, (int64_t)j, id};
            for (int c = 0; c < 4; c++)
                sqlite3_bind_int64(st, c + 1, patch[c]);
            rc = sqlite3_step(st);
            sqlite3_reset(st);
            if (rc != SQLITE_DONE)
                goto db_error;
            id++;
            s->work[W_LOGGED]++;
        }
    }
    if (store_add_total(s, "physical", (int64_t)count * PATCH_SLOT) < 0 ||
            store_add_total(s, "stored_raw", (int64_t)count * PATCH_SLOT) < 0
            || unref_records(s, old, olds, freed) < 0)
        goto out;
    ok = 0;
    goto out;
db_error:
    store_db_error(s);
out:
    free(old);
    return ok;
}
