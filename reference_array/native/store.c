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

/* The native chunk store: the engine's data path.
 *
 * It stages writes as whole chunks or patches (the write-back cache),
 * reads chunks through a cache of decompressed data, and stores staged
 * chunks: digests, compression, segment records and the rows of the
 * maps and chunks tables. Layers, snapshots, accounting and every
 * durable decision stay with the Python engine, which holds its lock
 * around every call: the store never runs two calls at once, and it
 * runs SQL on the engine's own connection, inside the engine's
 * transactions. Nothing here but storing a batch needs the GIL: reads
 * and staging run without it (a connection's data path, ``path.c``),
 * and storing releases it while chunks are compressed and digested.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "native.h"
#include "store.h"

/* The logged slots of the entry (?1, ?2), one bit each (NULL, read as 0,
 * when none is). Slots from 63 on also set the top bit: chunks that large
 * are not logged, but a row of theirs in a store from before must still
 * count (SQLite's 1 << 64 is 0). The primary key keeps the slots
 * distinct, so the sum never overflows. */
#define LOGGED_SLOTS "(SELECT SUM(1 << p.slot) | ((MAX(p.slot) > 62) << " \
    "63) FROM patches p WHERE p.layer = ?1 AND p.idx = ?2)"

static const char *SQL[N_STMTS] = {
    [S_MAP_READ] = "SELECT m.chunk, c.seg, c.off, c.size, " LOGGED_SLOTS
        " FROM maps m LEFT JOIN chunks c ON c.id = m.chunk WHERE m.layer = "
        "?1 AND m.idx = ?2",
    /* A read inside slot ?3: the entry and the slot's record if it is
     * logged, in one statement. */
    [S_MAP_SLOT] = "SELECT m.chunk, c.seg, c.off, c.size, p.chunk, r.seg, "
        "r.off, r.size FROM maps m LEFT JOIN chunks c ON c.id = m.chunk "
        "LEFT JOIN patches p ON p.layer = ?1 AND p.idx = ?2 AND p.slot = ?3 "
        "LEFT JOIN chunks r ON r.id = p.chunk WHERE m.layer = ?1 AND "
        "m.idx = ?2",
    [S_MAP] = "SELECT chunk, " LOGGED_SLOTS " FROM maps WHERE layer = ?1 AND "
        "idx = ?2",
    [S_WHERE] = "SELECT seg, off, size FROM chunks WHERE id = ?",
    [S_LEGACY] = "SELECT data FROM chunk_data WHERE id = ?",
    [S_DIGEST] = "SELECT id FROM chunks WHERE digest = ?",
    [S_INSERT_CHUNK] = "INSERT INTO chunks (id, digest, refs, raw, size, "
        "seg, off) VALUES (?, ?, ?, ?, ?, ?, ?)",
    [S_ADD_REFS] = "UPDATE chunks SET refs = refs + ? WHERE id = ?",
    [S_CHUNK_ROW] = "SELECT refs, raw, size, seg FROM chunks WHERE id = ?",
    [S_DELETE_CHUNK] = "DELETE FROM chunks WHERE id = ?",
    [S_DELETE_LEGACY] = "DELETE FROM chunk_data WHERE id = ?",
    [S_DELETE_MAP] = "DELETE FROM maps WHERE layer = ? AND idx = ?",
    [S_PUT_MAP] = "INSERT OR REPLACE INTO maps VALUES (?, ?, ?)",
    [S_WRITTEN] = "UPDATE layers SET written = written + ? WHERE id = ?",
    [S_TOTAL] = "UPDATE totals SET value = value + ? WHERE name = ?",
    [S_COUNT_RUN] = "SELECT COUNT(*) FROM maps WHERE layer = ? AND idx >= ? "
        "AND idx < ? AND chunk != 0",
    [S_RUN_ROWS] = "SELECT idx, chunk FROM maps WHERE layer = ? AND idx >= ? "
        "AND idx < ?",
    [S_NEXT_DATA] = "SELECT idx FROM maps WHERE layer = ? AND idx >= ? AND "
        "idx < ? AND chunk != 0 ORDER BY idx LIMIT 1",
    [S_PATCHES] = "SELECT p.slot, p.chunk, c.seg, c.off, c.size FROM "
        "patches p JOIN chunks c ON c.id = p.chunk WHERE p.layer = ? AND "
        "p.idx = ?",
    [S_PATCH_SLOT] = "SELECT chunk FROM patches WHERE layer = ? AND idx = ? "
        "AND slot = ?",
    [S_PUT_PATCH] = "INSERT OR REPLACE INTO patches VALUES (?, ?, ?, ?)",
    [S_DROP_PATCHES] = "DELETE FROM patches WHERE layer = ? AND idx = ? "
        "RETURNING chunk",
};

const char *WORK_NAMES[N_WORK] = {
    "map_probes", "chunks_fetched", "bytes_decompressed",
    "patches_resolved", "patches_logged", "patch_log_reads",
    "compress_calls", "chunks_prepared", "compress_calls_unlocked",
    "prepared_stored", "prepared_lost",
};

static void whole_or_zero(Store *s, Staged *e);

/* -- SQL -------------------------------------------------------------------- */
sqlite3_stmt *store_stmt(Store *s, int which)
{
    sqlite3_stmt *st = s->stmts[which];
    if (!st) {
        if (sqlite3_prepare_v3(s->db, SQL[which], -1,
                               SQLITE_PREPARE_PERSISTENT, &st, NULL)) {
            store_db_error(s);
            return NULL;
        }
        s->stmts[which] = st;
    }
    return st;
}

/* Errors are kept in the store and raised where the GIL is held
 * (``store_raise``): the data path of a connection runs without it. */
int store_fail(Store *s, int kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->error, sizeof(s->error), fmt, ap);
    va_end(ap);
    s->error_kind = kind;
    return -1;
}

void store_db_error(Store *s)
{
    store_fail(s, ERR_DB, "%s", sqlite3_errmsg(s->db));
}

void store_raise(Store *s)
{
    if (PyErr_Occurred())
        return;
    switch (s->error_kind) {
    case ERR_NOMEM:
        store_fail(s, ERR_NOMEM, "out of memory");
        break;
    case ERR_DB:
        PyErr_SetString(native_db_error, s->error);
        break;
    case ERR_OS:
        PyErr_SetString(PyExc_OSError, s->error);
        break;
    default:
        PyErr_SetString(PyExc_RuntimeError, s->error);
    }
}

/* Run a statement that returns no rows, with up to three integers. */
int store_exec(Store *s, int which, int n, int64_t a, int64_t b, int64_t c)
{
    sqlite3_stmt *st = store_stmt(s, which);
    if (!st)
        return -1;
    int64_t args[3] = {a, b, c};
    for (int i = 0; i < n; i++)
        sqlite3_bind_int64(st, i + 1, args[i]);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        store_db_error(s);
        return -1;
    }
    return 0;
}

int store_add_total(Store *s, const char *name, int64_t delta)
{
    if (!delta)
        return 0;
    sqlite3_stmt *st = store_stmt(s, S_TOTAL);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, delta);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        store_db_error(s);
        return -1;
    }
    return 0;
}

/* The chunk id of a map entry (*patches: its logged slots, a bit each):
 * 1 found, 0 none, -1 error. */
int store_map_entry(Store *s, int64_t layer, int64_t idx, int64_t *chunk,
                    int64_t *patches, int count)
{
    sqlite3_stmt *st = store_stmt(s, S_MAP);
    if (!st)
        return -1;
    s->work[W_MAP_PROBES] += count;
    sqlite3_bind_int64(st, 1, layer);
    sqlite3_bind_int64(st, 2, idx);
    int rc = sqlite3_step(st), found = 0;
    if (rc == SQLITE_ROW) {
        *chunk = sqlite3_column_int64(st, 0);
        if (patches)
            *patches = sqlite3_column_int64(st, 1);
        found = 1;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        store_db_error(s);
        return -1;
    }
    return found;
}

/* A map entry and where its chunk's data is, in one query: w[0] the
 * chunk id (0: zeros), w[1..3] its segment (-1: the chunk_data table),
 * offset and size, w[4] its logged slots (bit j: slot j). 1 found, 0
 * none, -1 error. */
int store_map_read(Store *s, int64_t layer, int64_t idx, int64_t w[5],
                   int count)
{
    return store_map_slot(s, layer, idx, -1, w, count);
}

void store_place_at(sqlite3_stmt *st, int col, int64_t w[4])
{
    w[0] = sqlite3_column_int64(st, col);
    w[1] = sqlite3_column_type(st, col + 1) == SQLITE_NULL ? -1 :
        sqlite3_column_int64(st, col + 1);
    w[2] = sqlite3_column_int64(st, col + 2);
    w[3] = sqlite3_column_int64(st, col + 3);
}

/* store_map_read, or with ``slot`` >= 0 the entry of a read inside that
 * slot: w[0..3] as there, w[4] 0, and w[5..8] the place of the slot's
 * record (w[5] 0: not logged). */
int store_map_slot(Store *s, int64_t layer, int64_t idx, int64_t slot,
                   int64_t *w, int count)
{
    sqlite3_stmt *st = store_stmt(s, slot < 0 ? S_MAP_READ : S_MAP_SLOT);
    if (!st)
        return -1;
    s->work[W_MAP_PROBES] += count;
    sqlite3_bind_int64(st, 1, layer);
    sqlite3_bind_int64(st, 2, idx);
    if (slot >= 0)
        sqlite3_bind_int64(st, 3, slot);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        store_place_at(st, 0, w);
        if (slot < 0) {
            w[4] = sqlite3_column_int64(st, 4);
        } else {
            w[4] = 0;
            store_place_at(st, 4, w + 5);
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        store_db_error(s);
        return -1;
    }
    return rc == SQLITE_ROW;
}

/* -- segment files ---------------------------------------------------------- */
static int segment_fd(Store *s, int64_t seg)
{
    int victim = 0;
    for (int i = 0; i < OPEN_SEGMENTS; i++) {
        if (s->fds[i].fd >= 0 && s->fds[i].seg == seg) {
            s->fds[i].used = ++s->tick;
            return s->fds[i].fd;
        }
        if (s->fds[i].fd < 0 || s->fds[i].used < s->fds[victim].used)
            victim = i;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/seg-%08lld", s->segdir, (long long)seg);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (s->fds[victim].fd >= 0)
        close(s->fds[victim].fd);
    s->fds[victim].fd = fd;
    s->fds[victim].seg = seg;
    s->fds[victim].used = ++s->tick;
    return fd;
}

void store_forget_segment(Store *s, int64_t seg)
{
    for (int i = 0; i < OPEN_SEGMENTS; i++)
        if (s->fds[i].fd >= 0 && s->fds[i].seg == seg) {
            close(s->fds[i].fd);
            s->fds[i].fd = -1;
        }
}

/* -- reading ---------------------------------------------------------------- */
/* The decompressed data of a stored chunk; ``where``: its row (seg, off,
 * size), seg < 0 for a chunk kept in chunk_data. NULL with an exception
 * set on failure. The data stays valid until the cache changes. */
const uint8_t *store_chunk_data(Store *s, int64_t chunk, int have_where,
                                int64_t seg, int64_t off, int64_t size)
{
    Cached *hit = cache_get(&s->cache, chunk);
    if (hit)
        return hit->data;
    if (!have_where) {
        sqlite3_stmt *st = store_stmt(s, S_WHERE);
        if (!st)
            return NULL;
        sqlite3_bind_int64(st, 1, chunk);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            seg = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 :
                sqlite3_column_int64(st, 0);
            off = sqlite3_column_int64(st, 1);
            size = sqlite3_column_int64(st, 2);
        }
        sqlite3_reset(st);
        if (rc != SQLITE_ROW) {
            if (rc == SQLITE_DONE)
                store_fail(s, ERR_RUNTIME, "chunk %lld has no row",
                           (long long)chunk);
            else
                store_db_error(s);
            return NULL;
        }
    }
    uint8_t *packed = NULL;
    sqlite3_stmt *legacy = NULL;
    const void *src;
    if (seg < 0) {
        legacy = store_stmt(s, S_LEGACY);
        if (!legacy)
            return NULL;
        sqlite3_bind_int64(legacy, 1, chunk);
        if (sqlite3_step(legacy) != SQLITE_ROW) {
            sqlite3_reset(legacy);
            store_fail(s, ERR_RUNTIME, "chunk %lld has no data",
                       (long long)chunk);
            return NULL;
        }
        src = sqlite3_column_blob(legacy, 0);
        size = sqlite3_column_bytes(legacy, 0);
    } else {
        int fd = segment_fd(s, seg);
        if (fd < 0) {
            store_fail(s, ERR_OS, "segment %lld: %s", (long long)seg,
                       strerror(errno));
            return NULL;
        }
        packed = malloc(size ? size : 1);
        if (!packed) {
            store_fail(s, ERR_NOMEM, "out of memory");
            return NULL;
        }
        ssize_t got;
        got = pread(fd, packed, size, off);
        if (got != size) {
            free(packed);
            store_fail(s, ERR_OS, "segment %lld holds %zd bytes at %lld, "
                       "not %lld", (long long)seg, got, (long long)off,
                       (long long)size);
            return NULL;
        }
        src = packed;
    }
    unsigned long long raw;
    uint8_t *data = NULL;
    size_t out = 0;
    if (!store_is_frame(src, size)) {
        /* Stored as it is. */
        raw = size;
        if (raw <= (1 << 24) && (data = malloc(raw ? raw : 1))) {
            memcpy(data, src, raw);
            out = raw;
        }
    } else {
        raw = ZSTD_getFrameContentSize(src, size);
        if (raw != ZSTD_CONTENTSIZE_UNKNOWN &&
                raw != ZSTD_CONTENTSIZE_ERROR && raw <= (1 << 24) &&
                (data = malloc(raw ? raw : 1)))
            out = ZSTD_decompressDCtx(s->dctx, data, raw, src, size);
    }
    free(packed);
    if (legacy)
        sqlite3_reset(legacy);
    if (!data || ZSTD_isError(out) || out != raw) {
        free(data);
        store_fail(s, ERR_RUNTIME, "chunk %lld does not decompress",
                   (long long)chunk);
        return NULL;
    }
    s->work[W_FETCHED]++;
    s->work[W_DECOMPRESSED] += out;
    Cached *e = cache_put(&s->cache, chunk, data, out);
    if (!e) {
        store_fail(s, ERR_NOMEM, "out of memory");
        return NULL;
    }
    return e->data;
}

/* A patch over ``base`` (NULL: zeros) becomes the whole chunk it makes. */
int store_resolve(Store *s, Staged *e, const uint8_t *base)
{
    uint8_t *whole = malloc(s->chunk);
    if (!whole) {
        store_fail(s, ERR_NOMEM, "out of memory");
        return -1;
    }
    if (base)
        memcpy(whole, base, s->chunk);
    else
        memset(whole, 0, s->chunk);
    /* Eight bytes per mask byte: runs of 0xff and 0 are the rule. */
    for (size_t m = 0; e->mask && m < s->chunk / 8; m++) {
        uint8_t bits = e->mask[m];
        if (bits == 0xff) {
            memcpy(whole + 8 * m, e->data + 8 * m, 8);
        } else if (bits) {
            for (int b = 0; b < 8; b++)
                if (bits & (1 << b))
                    whole[8 * m + b] = e->data[8 * m + b];
        }
    }
    free(e->data);
    free(e->mask);
    e->mask = NULL;
    s->work[W_PATCHES]++;
    e->data = whole;
    whole_or_zero(s, e);
    return 0;
}

/* The layer of the image ``chain[0..n)`` that holds chunk ``idx``: the
 * first that stages it (*staged set) or maps it (*staged clear, w its
 * map row, of store_map_slot with ``slot``); n when none does (zeros).
 * -1 with an exception set. */
int store_chunk_layer(Store *s, const int64_t *chain, int n, int64_t idx,
                      int64_t slot, int64_t *w, int *staged)
{
    for (int k = 0; k < n; k++) {
        if (s->staged.count && staged_get(&s->staged, chain[k], idx)) {
            *staged = 1;
            return k;
        }
        int found = store_map_slot(s, chain[k], idx, slot, w, 1);
        if (found < 0)
            return -1;
        if (found) {
            *staged = 0;
            return k;
        }
    }
    return n;
}

/* A chunk of the image ``chain[0..n)``, staged or stored: *out is the
 * data, or NULL for zeros. -1 with an exception set on failure. */
int store_read_chunk(Store *s, const int64_t *chain, int n, int64_t idx,
                     const uint8_t **out)
{
    int64_t w[5];
    int staged;
    int k = store_chunk_layer(s, chain, n, idx, -1, w, &staged);
    if (k < 0)
        return -1;
    *out = NULL;
    if (k == n)
        return 0;
    if (!staged) {
        if (!w[0])
            return 0;
        *out = store_entry_data(s, chain[k], idx, w);
        return *out ? 0 : -1;
    }
    Staged *e = staged_get(&s->staged, chain[k], idx);
    if (e->kind == STAGED_PATCH) {
        /* The patch goes over what the layer stores, or else over
         * what the layers below hold. */
        const uint8_t *base = NULL;
        int found = store_map_read(s, chain[k], idx, w, 1);
        if (found < 0)
            return -1;
        if (found && w[0]) {
            base = store_entry_data(s, chain[k], idx, w);
            if (!base)
                return -1;
        } else if (!found &&
                   store_read_chunk(s, chain + k + 1, n - k - 1, idx,
                                    &base) < 0) {
            return -1;
        }
        if (store_resolve(s, e, base) < 0)
            return -1;
    }
    if (e->kind == STAGED_WHOLE)
        *out = e->data;
    return 0;
}

/* -- staging ---------------------------------------------------------------- */
static void whole_or_zero(Store *s, Staged *e)
{
    if (!memcmp(e->data, s->zero, s->chunk)) {
        free(e->data);
        e->data = NULL;
        e->kind = STAGED_ZERO;
    } else {
        e->kind = STAGED_WHOLE;
    }
}

/* Mark bytes [from, to) in a patch's mask: whole mask bytes at once (a
 * bit at a time cost a 4 KiB write more than staging it). */
static void mask_range(uint8_t *mask, size_t from, size_t to)
{
    for (; from < to && (from & 7); from++)
        mask[from >> 3] |= (uint8_t)(1 << (from & 7));
    size_t whole = (to - from) / 8;
    memset(mask + (from >> 3), 0xff, whole);
    for (from += 8 * whole; from < to; from++)
        mask[from >> 3] |= (uint8_t)(1 << (from & 7));
}

/* Stage ``len`` bytes at ``offset`` of a layer; all-zero chunks become
 * zeros (unmapped when stored). */
int store_stage(Store *s, int64_t layer, int64_t offset, const uint8_t *buf,
                size_t len)
{
    size_t done = 0, chunk = s->chunk;
    while (done < len) {
        int64_t pos = offset + (int64_t)done;
        int64_t idx = pos / (int64_t)chunk;
        size_t inner = (size_t)(pos % (int64_t)chunk);
        size_t take = chunk - inner < len - done ? chunk - inner : len - done;
        const uint8_t *piece = buf + done;
        done += take;
        Staged *e = staged_get(&s->staged, layer, idx);
        if (!e) {
            /* Nothing known of the chunk yet: an empty patch. */
            if (!(e = staged_add(&s->staged, layer, idx)))
                goto nomem;
            e->kind = STAGED_PATCH;
        }
        /* What was prepared from its earlier content is of no use. */
        e->gen = ++s->gen;
        e->taken = 0;
        if (e->prep)
            s->work[W_PREPARED_LOST]++;
        prepared_free(e->prep);
        e->prep = NULL;
        if (take == chunk) {
            free(e->mask);
            e->mask = NULL;
            if (!e->data && !(e->data = malloc(chunk)))
                goto nomem;
            memcpy(e->data, piece, chunk);
            whole_or_zero(s, e);
        } else if (e->kind == STAGED_PATCH) {
            if (!e->data && !(e->data = malloc(chunk)))
                goto nomem;
            if (!e->mask && !(e->mask = calloc(1, (chunk + 7) / 8)))
                goto nomem;
            memcpy(e->data + inner, piece, take);
            mask_range(e->mask, inner, inner + take);
        } else {
            /* Into a whole staged chunk (zeros: a new one of zeros). */
            if (!e->data && !(e->data = calloc(1, chunk)))
                goto nomem;
            memcpy(e->data + inner, piece, take);
            whole_or_zero(s, e);
        }
    }
    return 0;
nomem:
    store_fail(s, ERR_NOMEM, "out of memory");
    return -1;
}
