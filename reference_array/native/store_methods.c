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

/* The Store's methods: each checks its arguments, marks the store busy
 * (a call while another runs means the engine's lock was not held) and
 * calls the chunk store (store.c, settle.c, runs.c); reads and allocation
 * runs release the GIL while they work. */

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define ENTER(s) do { \
        if ((s)->busy) { \
            PyErr_SetString(PyExc_RuntimeError, \
                            "the store is in use: hold the engine lock"); \
            return NULL; \
        } \
        if (!(s)->db) { \
            PyErr_SetString(PyExc_ValueError, "the store is closed"); \
            return NULL; \
        } \
        (s)->busy = 1; \
    } while (0)
#define LEAVE(s) ((s)->busy = 0)

static int chain_of(PyObject *obj, int64_t **chain, int *n)
{
    if (!PyTuple_Check(obj) || !PyTuple_GET_SIZE(obj)) {
        PyErr_SetString(PyExc_TypeError, "chain: a tuple of layers");
        return -1;
    }
    *n = (int)PyTuple_GET_SIZE(obj);
    *chain = malloc(*n * sizeof(int64_t));
    if (!*chain) {
        PyErr_NoMemory();
        return -1;
    }
    for (int k = 0; k < *n; k++)
        (*chain)[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(obj, k));
    if (PyErr_Occurred()) {
        free(*chain);
        return -1;
    }
    return 0;
}

static PyObject *Store_write(Store *s, PyObject *args)
{
    long long layer, offset;
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "LLy*", &layer, &offset, &buf))
        return NULL;
    if (offset < 0) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "negative offset");
        return NULL;
    }
    ENTER(s);
    int rc = store_stage(s, layer, offset, buf.buf, (size_t)buf.len);
    LEAVE(s);
    PyBuffer_Release(&buf);
    if (rc < 0) {
        store_raise(s);
        return NULL;
    }
    return PyLong_FromSize_t(s->staged.count);
}

static PyObject *Store_read(Store *s, PyObject *args)
{
    PyObject *chain_obj;
    long long offset, length;
    int64_t *chain;
    int n;
    if (!PyArg_ParseTuple(args, "OLL", &chain_obj, &offset, &length))
        return NULL;
    if (offset < 0 || length < 0) {
        PyErr_SetString(PyExc_ValueError, "negative offset or length");
        return NULL;
    }
    if (chain_of(chain_obj, &chain, &n) < 0)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, length);
    if (!out) {
        free(chain);
        return NULL;
    }
    uint8_t *dst = (uint8_t *)PyBytes_AS_STRING(out);
    int failed = 0;
    ENTER(s);
    Py_BEGIN_ALLOW_THREADS
    int64_t pos = offset, end = offset + length;
    while (pos < end) {
        int64_t idx = pos / (int64_t)s->chunk;
        int64_t inner = pos % (int64_t)s->chunk;
        int64_t take = (int64_t)s->chunk - inner;
        if (take > end - pos)
            take = end - pos;
        const uint8_t *data;
        if (store_read_part(s, chain, n, idx, inner, take, &data) < 0) {
            failed = 1;
            break;
        }
        if (data)
            memcpy(dst + (pos - offset), data, take);
        else
            memset(dst + (pos - offset), 0, take);
        pos += take;
    }
    Py_END_ALLOW_THREADS
    LEAVE(s);
    free(chain);
    if (failed) {
        Py_CLEAR(out);
        store_raise(s);
    }
    return out;
}

static PyObject *Store_read_chunks(Store *s, PyObject *args)
{
    PyObject *chain_obj, *idxs;
    int64_t *chain;
    int n;
    if (!PyArg_ParseTuple(args, "OO", &chain_obj, &idxs))
        return NULL;
    PyObject *seq = PySequence_Fast(idxs, "idxs: a sequence");
    if (!seq)
        return NULL;
    if (chain_of(chain_obj, &chain, &n) < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    PyObject *out = PyList_New(0);
    ENTER(s);
    for (Py_ssize_t i = 0; out && i < PySequence_Fast_GET_SIZE(seq); i++) {
        long long idx = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        const uint8_t *data;
        PyObject *item = NULL;
        if (!PyErr_Occurred()) {
            if (store_read_chunk(s, chain, n, idx, &data) < 0)
                store_raise(s);
            else
                item = data ? PyBytes_FromStringAndSize((const char *)data,
                                                        s->chunk)
                    : Py_NewRef(Py_None);
        }
        if (!item || PyList_Append(out, item) < 0)
            Py_CLEAR(out);
        Py_XDECREF(item);
    }
    LEAVE(s);
    free(chain);
    Py_DECREF(seq);
    return out;
}

/* The oldest staged keys, ``limit`` at most; with ``ready``, those a
 * thread is digesting and compressing right now are passed over (their
 * records come, and the next batch stores them as made). */
static PyObject *Store_staged_keys(Store *s, PyObject *args)
{
    Py_ssize_t limit = -1, patched = -1;
    int ready = 0;
    if (!PyArg_ParseTuple(args, "|npn", &limit, &ready, &patched))
        return NULL;
    PyObject *out = PyList_New(0);
    for (Staged *e = s->staged.head; out && e && limit; e = e->next) {
        /* A partly written chunk is read and patched under the lock: at
         * most ``patched`` of them. */
        if (e->kind == STAGED_PATCH && patched >= 0 && !patched--)
            break;
        /* A held one counts toward ``limit``: the batch is the oldest
         * ``limit`` but those, as its preparation saw them. */
        if (ready && e->taken) {
            limit--;
            continue;
        }
        PyObject *key = Py_BuildValue("(LL)", (long long)e->layer,
                                      (long long)e->idx);
        if (!key || PyList_Append(out, key) < 0)
            Py_CLEAR(out);
        Py_XDECREF(key);
        limit--;
    }
    return out;
}

static PyObject *Store_settle(Store *s, PyObject *args)
{
    PyObject *keys, *info, *segments;
    if (!PyArg_ParseTuple(args, "OOO", &keys, &info, &segments))
        return NULL;
    size_t cap = s->staged.count, n = 0;
    Staged **batch = malloc((cap ? cap : 1) * sizeof(*batch));
    if (!batch)
        return PyErr_NoMemory();
    if (keys == Py_None) {
        for (Staged *e = s->staged.head; e; e = e->next)
            batch[n++] = e;
    } else {
        PyObject *seq = PySequence_Fast(keys, "keys: (layer, idx) pairs");
        if (!seq) {
            free(batch);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            long long layer, idx;
            if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "LL",
                                  &layer, &idx)) {
                Py_DECREF(seq);
                free(batch);
                return NULL;
            }
            Staged *e = staged_get(&s->staged, layer, idx);
            /* Each staged chunk once, however often it is named. */
            int seen = 0;
            for (size_t k = 0; e && k < n && !seen; k++)
                seen = batch[k] == e;
            if (e && !seen && n < cap)
                batch[n++] = e;
        }
        Py_DECREF(seq);
    }
    PyObject *freed = NULL;
    PyObject *packed = PyObject_GetAttrString(segments, "append_packed");
    if (!packed) {
        free(batch);
        return NULL;
    }
    ENTER(s);
    freed = store_settle(s, batch, n, info, packed);
    LEAVE(s);
    Py_DECREF(packed);
    free(batch);
    if (!freed)
        store_raise(s);
    return freed;
}

static PyObject *Store_prepare(Store *s, PyObject *args)
{
    PyObject *lock;
    Py_ssize_t limit, most = 0;
    long n;
    if (!PyArg_ParseTuple(args, "O!n|n", &NativeLockType, &lock, &limit,
                          &most))
        return NULL;
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    if (!cctx)
        return PyErr_NoMemory();
    Py_BEGIN_ALLOW_THREADS
    n = store_prepare(s, (NativeLock *)lock, cctx,
                      limit > 0 ? (size_t)limit : 0,
                      most > 0 ? (size_t)most : 0, 0, NULL);
    Py_END_ALLOW_THREADS
    ZSTD_freeCCtx(cctx);
    if (n < 0)
        return PyErr_NoMemory();
    return PyLong_FromLong(n);
}

/* Until ``fd`` is readable: once ``least`` chunks or more are staged (a
 * batch is near), the whole chunks among the oldest ``limit`` are
 * prepared ``most`` at a time; after a look that handed nothing over it
 * waits ``look`` ms (``idle`` ms while nothing is staged). Below
 * ``least`` nothing is made: a chunk written again and again while
 * staged would be compressed each time, long before its batch. The GIL
 * is let go throughout, so that the batches of the connections (which
 * hold it) do not hold this up. */
static PyObject *Store_prepare_ahead(Store *s, PyObject *args)
{
    PyObject *lock;
    Py_ssize_t limit, most, least;
    int fd, look, idle;
    long made = 0;
    if (!PyArg_ParseTuple(args, "O!nnniii", &NativeLockType, &lock, &limit,
                          &most, &least, &fd, &look, &idle))
        return NULL;
    if (limit <= 0 || most <= 0 || least < 0 || fd < 0 || look < 0 ||
            idle < 0) {
        PyErr_SetString(PyExc_ValueError, "prepare_ahead: limit and most "
                        "> 0; least, fd and the waits >= 0");
        return NULL;
    }
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    if (!cctx)
        return PyErr_NoMemory();
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        size_t staged = 0;
        long n = store_prepare(s, (NativeLock *)lock, cctx, (size_t)limit,
                               (size_t)most, (size_t)least, &staged);
        /* Out of memory: looked at again later, as when nothing was made. */
        if (n > 0)
            made += n;
        struct pollfd p = {fd, POLLIN, 0};
        int rc = poll(&p, 1, n > 0 ? 0 : staged ? look : idle);
        if (rc > 0 || (rc < 0 && errno != EINTR))
            break;
    }
    Py_END_ALLOW_THREADS
    ZSTD_freeCCtx(cctx);
    return PyLong_FromLong(made);
}

static PyObject *Store_drop_staged(Store *s, PyObject *keys)
{
    ENTER(s);
    if (keys == Py_None) {
        while (s->staged.head)
            staged_remove(&s->staged, s->staged.head);
        LEAVE(s);
        Py_RETURN_NONE;
    }
    PyObject *seq = PySequence_Fast(keys, "keys: (layer, idx) pairs");
    for (Py_ssize_t i = 0; seq && i < PySequence_Fast_GET_SIZE(seq); i++) {
        long long layer, idx;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "LL", &layer,
                              &idx)) {
            Py_CLEAR(seq);
            break;
        }
        Staged *e = staged_get(&s->staged, layer, idx);
        if (e)
            staged_remove(&s->staged, e);
    }
    LEAVE(s);
    if (!seq)
        return NULL;
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

static PyObject *Store_unref(Store *s, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "chunks: a sequence of ids");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int64_t *ids = malloc((n ? n : 1) * sizeof(int64_t));
    if (!ids) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++)
        ids[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
    Py_DECREF(seq);
    if (PyErr_Occurred()) {
        free(ids);
        return NULL;
    }
    int64_t logical = 0;
    ENTER(s);
    PyObject *freed = store_unref(s, ids, (size_t)n, &logical);
    LEAVE(s);
    free(ids);
    if (!freed) {
        store_raise(s);
        return NULL;
    }
    PyObject *out = Py_BuildValue("(LN)", (long long)logical, freed);
    return out;
}

static PyObject *Store_allocated_run(Store *s, PyObject *args)
{
    PyObject *chain_obj;
    long long offset, limit;
    int64_t *chain, length = 0;
    int n, kind = 0, rc;
    if (!PyArg_ParseTuple(args, "OLL", &chain_obj, &offset, &limit))
        return NULL;
    if (offset < 0 || limit <= 0) {
        PyErr_SetString(PyExc_ValueError, "negative offset or empty range");
        return NULL;
    }
    if (chain_of(chain_obj, &chain, &n) < 0)
        return NULL;
    ENTER(s);
    Py_BEGIN_ALLOW_THREADS
    rc = store_allocated_run(s, chain, n, offset, limit, &kind, &length);
    Py_END_ALLOW_THREADS
    LEAVE(s);
    free(chain);
    if (rc < 0) {
        store_raise(s);
        return NULL;
    }
    return Py_BuildValue("(NL)", PyBool_FromLong(kind), (long long)length);
}

static PyObject *io_dict(IOCount io[2])
{
    return Py_BuildValue(
        "{sLsLsdsLsLsd}", "read_ops", (long long)io[0].ops, "read_bytes",
        (long long)io[0].bytes, "read_seconds", io[0].ns / 1e9, "write_ops",
        (long long)io[1].ops, "write_bytes", (long long)io[1].bytes,
        "write_seconds", io[1].ns / 1e9);
}

static PyObject *Store_counters(Store *s, PyObject *unused)
{
    PyObject *volumes = PyDict_New();
    for (size_t i = 0; volumes && i < s->volumes_count; i++) {
        PyObject *key = PyLong_FromLongLong(s->volumes[i].id);
        PyObject *value = io_dict(s->volumes[i].io);
        if (!key || !value || PyDict_SetItem(volumes, key, value) < 0)
            Py_CLEAR(volumes);
        Py_XDECREF(key);
        Py_XDECREF(value);
    }
    if (!volumes)
        return NULL;
    return Py_BuildValue("(NN)", io_dict(s->io), volumes);
}

static PyObject *Store_bump_epoch(Store *s, PyObject *unused)
{
    __atomic_add_fetch(&s->epoch, 1, __ATOMIC_SEQ_CST);
    Py_RETURN_NONE;
}

static PyObject *Store_forget_segment(Store *s, PyObject *arg)
{
    long long seg = PyLong_AsLongLong(arg);
    if (PyErr_Occurred())
        return NULL;
    store_forget_segment(s, seg);
    Py_RETURN_NONE;
}

static PyObject *Store_clear_cache(Store *s, PyObject *unused)
{
    ENTER(s);
    cache_clear(&s->cache);
    LEAVE(s);
    Py_RETURN_NONE;
}

static PyObject *Store_work(Store *s, PyObject *unused)
{
    PyObject *out = PyDict_New();
    for (int i = 0; out && i < N_WORK; i++) {
        PyObject *v = PyLong_FromLongLong(s->work[i]);
        if (!v || PyDict_SetItemString(out, WORK_NAMES[i], v) < 0)
            Py_CLEAR(out);
        Py_XDECREF(v);
    }
    return out;
}

static PyObject *Store_close(Store *s, PyObject *unused)
{
    if (s->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the store is in use");
        return NULL;
    }
    store_release(s);
    Py_RETURN_NONE;
}

PyMethodDef NativeStoreMethods[] = {
    {"write", (PyCFunction)Store_write, METH_VARARGS,
     "write(layer, offset, data) -> chunks staged: stage data."},
    {"read", (PyCFunction)Store_read, METH_VARARGS,
     "read(chain, offset, length) -> bytes of the image chain[0]."},
    {"read_chunks", (PyCFunction)Store_read_chunks, METH_VARARGS,
     "read_chunks(chain, idxs) -> [whole chunk or None for zeros]."},
    {"staged_keys", (PyCFunction)Store_staged_keys, METH_VARARGS,
     "staged_keys(limit=-1, ready=False, patched=-1) -> [(layer, idx)],\n"
     "oldest first; with ``ready``, none being prepared; up to the\n"
     "first partly written chunk past ``patched`` of them."},
    {"settle", (PyCFunction)Store_settle, METH_VARARGS,
     "settle(keys or None, info, segments) -> [(seg, size)] freed.\n\n"
     "Store staged chunks in the open transaction; info(layer) gives\n"
     "(chain, dedup); segments.append_packed(blob) the (seg, off) of\n"
     "the blob of the new records, laid out as the segment holds them."},
    {"prepare", (PyCFunction)Store_prepare, METH_VARARGS,
     "prepare(lock, limit, most=0) -> chunks prepared: digest and\n"
     "compress the whole chunks among the oldest ``limit`` staged (``most``\n"
     "of them at most, if given), taking ``lock``\n"
     "(not held by the caller) only to copy them and to hand the\n"
     "results over (the next batch stores them as they are)."},
    {"prepare_ahead", (PyCFunction)Store_prepare_ahead, METH_VARARGS,
     "prepare_ahead(lock, limit, most, least, fd, look_ms, idle_ms) ->\n"
     "chunks prepared: ``prepare`` in a loop, while ``least`` or more are\n"
     "staged, without the GIL, until ``fd`` is readable."},
    {"drop_staged", (PyCFunction)Store_drop_staged, METH_O,
     "drop_staged(keys or None): forget staged chunks (once stored)."},
    {"unref", (PyCFunction)Store_unref, METH_O,
     "unref(chunk ids) -> (logical bytes, [(seg, size)] freed)."},
    {"allocated_run", (PyCFunction)Store_allocated_run, METH_VARARGS,
     "allocated_run(chain, offset, limit) -> (allocated, length) of the\n"
     "run of chunks from offset (nothing may be staged)."},
    {"counters", (PyCFunction)Store_counters, METH_NOARGS,
     "(I/O of the data path, {volume id: its I/O})."},
    {"bump_epoch", (PyCFunction)Store_bump_epoch, METH_NOARGS,
     "What connections resolved may have changed: they look again."},
    {"forget_segment", (PyCFunction)Store_forget_segment, METH_O,
     "Close what is open of a removed segment."},
    {"clear_cache", (PyCFunction)Store_clear_cache, METH_NOARGS,
     "Drop every decompressed chunk."},
    {"work", (PyCFunction)Store_work, METH_NOARGS,
     "Work done so far, by kind."},
    {"close", (PyCFunction)Store_close, METH_NOARGS,
     "Release statements, files and memory (staged data is lost)."},
    {NULL},
};
