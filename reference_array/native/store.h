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

/* The native chunk store (store.c, settle.c, runs.c) and its Python type
 * (store_type.c, store_methods.c). */
#ifndef REFERENCE_ARRAY_NATIVE_STORE_H
#define REFERENCE_ARRAY_NATIVE_STORE_H

#include <sqlite3.h>
#include <zstd.h>

#include "native.h"
#include "tables.h"

/* Every zstd frame begins with these bytes. A record that does not is
 * the chunk stored as it is (see chunk_store.py's pack and unpack). */
static inline int store_is_frame(const uint8_t *p, size_t n)
{
    return n >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f &&
        p[3] == 0xfd;
}

/* The sqlite3 handle of a Python sqlite3.Connection: its first field
 * (CPython's Modules/_sqlite/connection.h). */
typedef struct {
    PyObject_HEAD
    sqlite3 *db;
} PyConnection;

/* Segment files kept open for reading (least recently used closed). */
#define OPEN_SEGMENTS 64

/* A segment record's header: the chunk id, 8 bytes, and the packed
 * length, 4, little-endian. Exported as RECORD_HEADER; segments.py's
 * HEADER is checked against it when the module loads. */
#define RECORD_HEADER 12

enum {
    S_MAP_READ, S_MAP, S_WHERE, S_LEGACY, S_DIGEST, S_INSERT_CHUNK,
    S_ADD_REFS, S_CHUNK_ROW, S_DELETE_CHUNK, S_DELETE_LEGACY, S_DELETE_MAP,
    S_PUT_MAP, S_WRITTEN, S_TOTAL, S_COUNT_RUN, S_RUN_ROWS, S_NEXT_DATA,
    S_PATCHES, S_PATCH_SLOT, S_MAP_SLOT, S_PUT_PATCH, S_DROP_PATCHES,
    N_STMTS
};

/* Work done, by kind: what the engine's shape tests count. */
enum {
    W_MAP_PROBES, W_FETCHED, W_DECOMPRESSED, W_PATCHES, W_LOGGED,
    W_LOG_READS, W_COMPRESS_CALLS, W_PREPARED, W_PREPARED_CALLS,
    W_PREPARED_USED, W_PREPARED_LOST, N_WORK
};

/* The patch log (store_patches.c): a write of whole 4 KiB slots into a
 * stored chunk of its own layer is kept as uncompressed slot records
 * (chunk rows without a digest, one ``patches`` row each) instead of the
 * whole chunk compressed again; a slot written again replaces its
 * record. A chunk is stored whole again (merged) when a write would
 * leave it more than PATCH_BOUND distinct slots, when a write is not of
 * whole slots, or when the engine merges in the background. A read
 * resolves PATCH_BOUND at most. The bound is a 16 KiB chunk's every
 * slot: with fewer, random 4 KiB writes merged a chunk every third write
 * to it, each merge a read, a decompression and a compression on the
 * write's batch (the benchmarks page, "Every slot of a chunk logged").
 * Slots are bits of a 64-bit mask (SQLite's integers): a chunk of 64
 * slots or more is not logged. */
#define PATCH_SLOT 4096
#define PATCH_BOUND 4
#define PATCH_MASK_SLOTS 64
extern const char *WORK_NAMES[N_WORK];

/* Operations, bytes and nanoseconds of one direction. */
typedef struct {
    int64_t ops, bytes, ns;
} IOCount;

typedef struct {
    PyObject_HEAD
    PyObject *conn;             /* the engine's sqlite3.Connection */
    sqlite3 *db;
    sqlite3_stmt *stmts[N_STMTS];
    ZSTD_CCtx *cctx;
    ZSTD_DCtx *dctx;
    size_t chunk;
    int level;
    char *segdir;
    struct {
        int64_t seg;
        int fd;
        uint64_t used;
    } fds[OPEN_SEGMENTS];
    uint64_t tick;
    StagedTable staged;
    ChunkCache cache;
    int64_t last_chunk;
    uint64_t gen;               /* the last staged entry's ``gen`` */
    /* Bytes a connection's data path may still stage: the engine grants
     * them out of the room it saw above its reserve; at 0 a write goes to
     * the engine, which looks at the filesystem (and refuses a write
     * that finds no room with a SCSI error). */
    int64_t room;
    long long work[N_WORK];
    uint8_t *zero;
    uint8_t *patched;           /* a chunk with its patches applied */
    uint8_t *pack;              /* a batch's new records (settle.c) */
    size_t pack_cap;
    int busy;                   /* a call is running (checks the lock) */
    int error_kind;
    char error[256];
    /* Bumped before any transaction but the store's own: what a
     * connection's data path resolved (LUNs, layers) may have changed. */
    int64_t epoch;
    IOCount io[2];              /* read, write; I/O the data path did */
    struct {
        int64_t id;
        IOCount io[2];
    } *volumes;
    size_t volumes_count, volumes_cap;
} Store;

enum { ERR_RUNTIME, ERR_NOMEM, ERR_DB, ERR_OS };

sqlite3_stmt *store_stmt(Store *s, int which);
int store_fail(Store *s, int kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void store_db_error(Store *s);
/* Raise the store's last error (GIL held). */
void store_raise(Store *s);
int store_exec(Store *s, int which, int n, int64_t a, int64_t b, int64_t c);
int store_add_total(Store *s, const char *name, int64_t delta);
/* Map lookups; *patches (w[4]): the entry's logged slots, a bit each. */
int store_map_entry(Store *s, int64_t layer, int64_t idx, int64_t *chunk,
                    int64_t *patches, int count);
int store_map_read(Store *s, int64_t layer, int64_t idx, int64_t w[5],
                   int count);
int store_map_slot(Store *s, int64_t layer, int64_t idx, int64_t slot,
                   int64_t *w, int count);
/* A chunk's place from columns ``col`` to ``col + 3`` of ``st``: its id,
 * segment (-1: the chunk_data table), offset and size. */
void store_place_at(sqlite3_stmt *st, int col, int64_t w[4]);
void store_forget_segment(Store *s, int64_t seg);
const uint8_t *store_chunk_data(Store *s, int64_t chunk, int have_where,
                                int64_t seg, int64_t off, int64_t size);
int store_resolve(Store *s, Staged *e, const uint8_t *base);
int store_chunk_layer(Store *s, const int64_t *chain, int n, int64_t idx,
                      int64_t slot, int64_t *w, int *staged);
int store_read_chunk(Store *s, const int64_t *chain, int n, int64_t idx,
                     const uint8_t **out);
int store_stage(Store *s, int64_t layer, int64_t offset, const uint8_t *buf,
                size_t len);

/* store_patches.c */
const uint8_t *store_entry_data(Store *s, int64_t layer, int64_t idx,
                                const int64_t w[5]);
int store_read_part(Store *s, const int64_t *chain, int n, int64_t idx,
                    int64_t inner, int64_t len, const uint8_t **out);
int store_drop_patches(Store *s, int64_t layer, int64_t idx,
                       PyObject *freed);
int store_loggable(Store *s, const Staged *e, int64_t existing);
int store_log_patches(Store *s, Staged **batch, size_t n,
                      PyObject *append_packed, PyObject *freed);

/* runs.c */
int store_allocated_run(Store *s, const int64_t *chain, int n,
                        int64_t offset, int64_t limit, int *kind,
                        int64_t *length);
void store_count(Store *s, int write, int64_t volume, int64_t bytes,
                 int64_t ns);

/* settle.c */
/* What compresses a chunk: a zstd context, its level, the chunk size
 * and where its calls are counted. */
typedef struct {
    ZSTD_CCtx *cctx;
    int level;
    size_t chunk;
    long long *calls;
} Packer;
/* The record of a whole chunk into ``dst`` (``bound`` bytes): its
 * length, or a zstd error code (``*shrank``: see settle.c). */
size_t store_pack_chunk(const Packer *k, uint8_t *dst, size_t bound,
                        const uint8_t *src, int *shrank);
/* Records go to a segment laid out as it holds them, in the store's
 * pack buffer: room for ``n`` of ``bound`` bytes each, a record's header
 * (RECORD_HEADER), and ``s->pack[0..used)`` written with one call of
 * the segments' ``append_packed(blob)`` (the segment and offset of its
 * first byte). */
int store_pack_room(Store *s, size_t n, size_t bound);
void store_put_header(uint8_t *p, int64_t chunk, size_t len);
int store_append_records(Store *s, PyObject *append_packed, size_t used,
                         long long *seg, long long *start);
PyObject *store_settle(Store *s, Staged **batch, size_t n, PyObject *info,
                       PyObject *append_packed);
PyObject *store_unref(Store *s, int64_t *chunks, size_t n,
                      int64_t *logical);

/* prepare.c: digest and compress the whole chunks among the oldest
 * ``limit`` staged (``most`` of them at most, 0: all), if ``least`` or
 * more are staged, without the engine's lock (neither it nor the GIL held
 * by the caller); chunks handed over, or -1 out of memory. ``staged``
 * (if not NULL): how many were staged, read under the lock. */
long store_prepare(Store *s, NativeLock *lock, ZSTD_CCtx *cctx,
                   size_t limit, size_t most, size_t least, size_t *staged);

/* store_type.c, store_methods.c: the Python Store type */
/* Close the store's statements and files and free what it holds. */
void store_release(Store *s);
extern PyMethodDef NativeStoreMethods[];
/* sqlite3.Connection (set at import, module.c): a Store runs on the
 * engine's own connection. */
extern PyObject *native_connection_type;

#endif
