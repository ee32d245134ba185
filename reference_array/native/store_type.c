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

/* The Python Store type: a chunk store over the engine's own SQLite
 * connection, its lifetime and its attributes. What the engine calls on
 * it is in store_methods.c. */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"

void store_release(Store *s)
{
    for (int i = 0; i < N_STMTS; i++) {
        sqlite3_finalize(s->stmts[i]);
        s->stmts[i] = NULL;
    }
    for (int i = 0; i < OPEN_SEGMENTS; i++) {
        if (s->fds[i].fd >= 0)
            close(s->fds[i].fd);
        s->fds[i].fd = -1;
    }
    staged_clear(&s->staged);
    cache_clear(&s->cache);
    free(s->volumes);
    s->volumes = NULL;
    s->volumes_count = s->volumes_cap = 0;
    s->db = NULL;
    Py_CLEAR(s->conn);
}

static int Store_init(Store *s, PyObject *args, PyObject *kw)
{
    static char *names[] = {"connection", "database", "segment_dir",
                            "chunk_size", "level", "cache_limit", NULL};
    PyObject *conn;
    const char *database, *segdir;
    Py_ssize_t chunk, cache_limit;
    int level;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Ossnin", names, &conn,
                                     &database, &segdir, &chunk, &level,
                                     &cache_limit))
        return -1;
    if (chunk < 512 || chunk > NATIVE_DIGEST_MAX_CHUNKS * 1024 ||
            chunk % 512) {
        PyErr_SetString(PyExc_ValueError, "chunk_size: a multiple of 512 "
                        "up to 64 KiB");
        return -1;
    }
    /* The handle of the engine's connection, so that the store's rows
     * go in the engine's transactions; it must name the same file. */
    int is_conn = PyObject_IsInstance(conn, native_connection_type);
    if (is_conn <= 0) {
        if (!is_conn)
            PyErr_SetString(PyExc_TypeError, "a sqlite3.Connection");
        return -1;
    }
    sqlite3 *db = ((PyConnection *)conn)->db;
    const char *name = db ? sqlite3_db_filename(db, "main") : NULL;
    if (!name || strcmp(name, database)) {
        PyErr_Format(PyExc_ValueError, "connection is not to %s", database);
        return -1;
    }
    store_release(s);
    free(s->segdir);
    free(s->zero);
    free(s->patched);
    free(s->pack);
    s->pack = NULL;
    s->pack_cap = 0;
    s->segdir = strdup(segdir);
    s->zero = calloc(1, chunk);
    s->patched = malloc(chunk);
    if (!s->cctx)
        s->cctx = ZSTD_createCCtx();
    if (!s->dctx)
        s->dctx = ZSTD_createDCtx();
    if (!s->segdir || !s->zero || !s->patched || !s->cctx || !s->dctx) {
        PyErr_NoMemory();
        return -1;
    }
    Py_INCREF(conn);
    s->conn = conn;
    s->db = db;
    s->chunk = (size_t)chunk;
    s->level = level;
    s->cache.limit = (size_t)cache_limit;
    return 0;
}

static PyObject *Store_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    Store *s = (Store *)type->tp_alloc(type, 0);
    if (s)
        for (int i = 0; i < OPEN_SEGMENTS; i++)
            s->fds[i].fd = -1;
    return (PyObject *)s;
}

static void Store_dealloc(Store *s)
{
    store_release(s);
    ZSTD_freeCCtx(s->cctx);
    ZSTD_freeDCtx(s->dctx);
    free(s->segdir);
    free(s->zero);
    free(s->patched);
    free(s->pack);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *Store_get_staged(Store *s, void *unused)
{
    return PyLong_FromSize_t(s->staged.count);
}

static PyObject *Store_get_last(Store *s, void *unused)
{
    return PyLong_FromLongLong(s->last_chunk);
}

static int Store_set_last(Store *s, PyObject *v, void *unused)
{
    long long last = v ? PyLong_AsLongLong(v) : -1;
    if (PyErr_Occurred())
        return -1;
    s->last_chunk = last;
    return 0;
}

static PyObject *Store_get_room(Store *s, void *unused)
{
    return PyLong_FromLongLong(s->room);
}

static int Store_set_room(Store *s, PyObject *v, void *unused)
{
    long long room = v ? PyLong_AsLongLong(v) : 0;
    if (PyErr_Occurred())
        return -1;
    s->room = room > 0 ? room : 0;
    return 0;
}

static PyObject *Store_get_epoch(Store *s, void *unused)
{
    return PyLong_FromLongLong(__atomic_load_n(&s->epoch, __ATOMIC_SEQ_CST));
}

static PyObject *Store_get_cached(Store *s, void *unused)
{
    return PyLong_FromSize_t(s->cache.bytes);
}

static PyGetSetDef Store_getset[] = {
    {"staged", (getter)Store_get_staged, NULL, "Chunks staged.", NULL},
    {"room", (getter)Store_get_room, (setter)Store_set_room,
     "Bytes the data paths may stage before the engine looks at the "
     "filesystem again.", NULL},
    {"last_chunk", (getter)Store_get_last, (setter)Store_set_last,
     "The last chunk id handed out.", NULL},
    {"epoch", (getter)Store_get_epoch, NULL,
     "Bumped whenever what connections resolved may change.", NULL},
    {"cached_bytes", (getter)Store_get_cached, NULL,
     "Bytes of decompressed chunks kept.", NULL},
    {NULL},
};

PyTypeObject NativeStoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "reference_array.native._native.Store",
    .tp_basicsize = sizeof(Store),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Store(connection, database, segment_dir, chunk_size, level, "
              "cache_limit): the engine's data path.",
    .tp_new = Store_new,
    .tp_init = (initproc)Store_init,
    .tp_dealloc = (destructor)Store_dealloc,
    .tp_methods = NativeStoreMethods,
    .tp_getset = Store_getset,
};
