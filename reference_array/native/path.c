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

/* A connection's native data path: READ, WRITE and GET LBA STATUS of
 * the LUNs a session sees, without the GIL.
 *
 * The Python session logs in, negotiates and handles everything else;
 * once in full feature phase it hands the connection here (``serve``)
 * with its sequence numbers and what it had buffered. The loop handles
 * every PDU it can as the session would, and stops, consuming nothing
 * of it, at the first one it does not: another opcode, a command out of
 * order or out of range, a LUN it does not know, a transfer larger than
 * MAX_TRANSFER, FUA, residuals, or when the engine's epoch says that
 * what the session resolved (LUNs, layers) may have changed. The
 * session then handles that PDU itself and calls ``serve`` again. A
 * write whose data was solicited here but that cannot run here (the
 * epoch moved meanwhile) goes back to the session with its data.
 *
 * Memory per connection is bounded: one command buffer of MAX_TRANSFER,
 * the input (a PDU at most MAX_SEGMENT of data), the replies waiting
 * (SEND_BATCH and one command's Data-In), the buffers of the writes whose
 * data is solicited (SOLICITED_MAX, and SOLICITED_BYTES on all
 * connections) and the PDUs held back meanwhile (MAX_PENDING,
 * MAX_PENDING_BYTES).
 *
 * This file is the loop (``serve``) and the DataPath type; the commands
 * themselves are in path_read.c (READ, GET LBA STATUS) and path_write.c
 * (WRITE), the wire in pdu.c.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "path.h"

PathLun *path_find_lun(DataPath *p, const uint8_t *raw)
{
    int64_t number = (raw[0] & 0xc0) == 0x40 ?
        ((int64_t)(raw[0] & 0x3f) << 8 | raw[1]) : raw[1];
    for (size_t i = 0; i < p->nluns; i++)
        if (p->luns[i].number == number)
            return &p->luns[i];
    return NULL;
}

int path_rw_range(const uint8_t *cdb, uint64_t *lba, uint32_t *blocks)
{
    switch (cdb[0]) {
    case 0x28:
    case 0x2a:
        *lba = get32(cdb + 2);
        *blocks = (uint32_t)cdb[7] << 8 | cdb[8];
        return 1;
    case 0x88:
    case 0x8a:
        *lba = (uint64_t)get32(cdb + 2) << 32 | get32(cdb + 6);
        *blocks = get32(cdb + 10);
        return 1;
    }
    return 0;
}

/* A PDU the loop does not take: the session's; or, while writes' data
 * is solicited (then only a WRITE gets here), held back. */
static int not_ours(DataPath *p)
{
    return p->nsolicited ? path_hold(p) : STOP;
}

/* Handle the PDU at the start of the input if it is ours. */
static int serve_one(DataPath *p, PyThreadState **ts)
{
    if (path_fill(p, BHS) < 0)
        return FAILED;
    const uint8_t *h = p->in.buf + p->in.start;
    size_t dlen = (size_t)h[5] << 16 | (size_t)h[6] << 8 | h[7];
    if (p->nsolicited && (h[0] & 0x3f) == OP_DATA_OUT)
        return solicited_data(p, ts);
    /* While writes' data is solicited, only their Data-Out and further
     * WRITEs are taken; anything else, and everything after it, waits
     * until they are staged. */
    if (p->pending.end > p->pending.start || p->handback ||
            (p->nsolicited && ((h[0] & 0x7f) != OP_SCSI_COMMAND ||
                               (h[32] != 0x2a && h[32] != 0x8a))))
        return path_hold(p);
    if ((h[0] & 0x7f) != OP_SCSI_COMMAND || h[4] || dlen > MAX_SEGMENT ||
            get32(h + 24) != p->exp_cmd_sn)
        return not_ours(p);
    size_t len = pdu_length(h);
    if (path_fill(p, len) < 0)
        return FAILED;
    h = p->in.buf + p->in.start;
    PathLun *lun = path_find_lun(p, h + 8);
    if (!lun)
        return not_ours(p);
    const uint8_t *cdb = h + 32;
    uint32_t edtl = get32(h + 20), blocks;
    uint64_t lba;
    if (cdb[0] == 0x9e && (cdb[1] & 0x1f) == 0x12 && !dlen &&
            (h[1] & F_READ))
        return do_lba_status(p, h, lun);
    /* No protection information, FUA (writes) or residuals here. */
    if (!path_rw_range(cdb, &lba, &blocks) || !blocks || (cdb[1] & 0xe0) ||
            blocks > MAX_TRANSFER / SECTOR || edtl != blocks * SECTOR ||
            lba > (uint64_t)lun->blocks ||
            blocks > (uint64_t)lun->blocks - lba)   /* no wrap-around */
        return not_ours(p);
    if (cdb[0] == 0x28 || cdb[0] == 0x88)
        return (h[1] & F_READ) && !dlen ? do_read(p, h, lun, lba, blocks)
            : not_ours(p);
    if (!(h[1] & F_WRITE) || (cdb[1] & 0x08) || lun->read_only ||
            (dlen && !p->immediate_data) ||
            dlen > (p->first_burst < edtl ? p->first_burst : edtl))
        return not_ours(p);
    return do_write(p, ts, h, blocks, len, dlen);
}

static PyObject *DataPath_serve(DataPath *p, PyObject *args)
{
    unsigned int stat_sn, exp_cmd_sn;
    Py_buffer buffered;
    if (!PyArg_ParseTuple(args, "IIy*", &stat_sn, &exp_cmd_sn, &buffered))
        return NULL;
    p->in.start = p->in.end = 0;
    p->pending.start = p->pending.end = 0;
    p->pending_count = 0;
    p->error[0] = 0;
    int rc = bytes_append(&p->in, buffered.buf, buffered.len);
    PyBuffer_Release(&buffered);
    if (rc < 0)
        return PyErr_NoMemory();
    p->stat_sn = stat_sn;
    /* Writes left after one went back to the session come after it. */
    p->exp_cmd_sn = exp_cmd_sn + (uint32_t)p->nsolicited;
    int saved = 0;
    PyThreadState *ts = PyEval_SaveThread();
    rc = p->nsolicited ? solicited_finish(p, &ts) : HANDLED;
    while (rc == HANDLED) {
        rc = serve_one(p, &ts);
        if (rc == HANDLED)
            p->stats[PS_COMMANDS]++;
        else if (rc == STOP)
            p->stats[PS_STOPS]++;
        if (p->out.end > SEND_BATCH && rc != FAILED && path_flush(p) < 0)
            rc = FAILED;
    }
    if (rc != FAILED && path_flush(p) < 0)
        rc = FAILED;
    saved = errno;
    PyEval_RestoreThread(ts);
    if (rc == FAILED && !p->error[0]) {
        if (PyErr_Occurred())
            return NULL;
        if (saved == ETIMEDOUT)
            PyErr_SetString(PyExc_TimeoutError, "idle connection");
        else if (saved == ECONNRESET)
            PyErr_SetString(PyExc_ConnectionError,
                            "peer closed the connection");
        else if (saved == ENOMEM)
            PyErr_NoMemory();
        else {
            errno = saved;
            PyErr_SetFromErrno(PyExc_OSError);
        }
        return NULL;
    }
    PyObject *collected = Py_None;
    Py_INCREF(collected);
    if (rc == COLLECTED) {
        Py_DECREF(collected);
        uint32_t bytes = 0, blocks = 0;
        uint64_t lba;
        path_rw_range(p->data + MAX_TRANSFER + 32, &lba, &blocks);
        bytes = blocks * SECTOR;
        collected = Py_BuildValue("(y#y#)", p->data + MAX_TRANSFER,
                                  (Py_ssize_t)BHS, p->data,
                                  (Py_ssize_t)bytes);
        if (!collected)
            return NULL;
    }
    return Py_BuildValue(
        "(IIy#Ns)", p->stat_sn, p->exp_cmd_sn, p->in.buf + p->in.start,
        (Py_ssize_t)(p->in.end - p->in.start), collected,
        p->error[0] ? p->error : NULL);
}

static const char *const stat_names[PS_COUNT] = {
    "commands", "writes", "collected", "collected_epoch", "collected_room",
    "collected_stage", "stops", "locks", "lock_waits", "lock_wait_ns",
    "input_waits", "input_wait_ns", "sends", "replies", "replies_held",
    "settles", "settle_ns", "solicited", "solicited_peak",
    "room_refills",
};

static PyObject *DataPath_stats(DataPath *p, PyObject *unused)
{
    PyObject *out = PyDict_New();
    for (int i = 0; out && i < PS_COUNT; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(p->stats[i]);
        if (!v || PyDict_SetItemString(out, stat_names[i], v) < 0) {
            Py_XDECREF(v);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(v);
    }
    return out;
}

static void free_luns(DataPath *p)
{
    for (size_t i = 0; i < p->nluns; i++)
        free(p->luns[i].chain);
    free(p->luns);
    p->luns = NULL;
    p->nluns = 0;
}

static PyObject *DataPath_set_luns(DataPath *p, PyObject *args)
{
    long long epoch;
    PyObject *items;
    if (!PyArg_ParseTuple(args, "LO", &epoch, &items))
        return NULL;
    PyObject *seq = PySequence_Fast(items, "LUNs: a sequence");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PathLun *luns = calloc(n ? n : 1, sizeof(*luns));
    if (!luns) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    free_luns(p);
    p->luns = luns;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *chain;
        long long number, blocks, volume;
        int read_only;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "LOLpL",
                              &number, &chain, &blocks, &read_only,
                              &volume) || !PyTuple_Check(chain) ||
                !PyTuple_GET_SIZE(chain)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "LUN: (number, chain, "
                                "blocks, read_only, volume)");
            goto fail;
        }
        PathLun *l = &luns[i];
        p->nluns = i + 1;
        l->n = (int)PyTuple_GET_SIZE(chain);
        l->chain = malloc(l->n * sizeof(int64_t));
        if (!l->chain) {
            PyErr_NoMemory();
            goto fail;
        }
        for (int k = 0; k < l->n; k++)
            l->chain[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(chain, k));
        if (PyErr_Occurred())
            goto fail;
        l->number = number;
        l->blocks = blocks;
        l->read_only = read_only;
        l->volume = volume;
    }
    Py_DECREF(seq);
    p->epoch = epoch;
    Py_RETURN_NONE;
fail:
    Py_DECREF(seq);
    free_luns(p);
    /* Nothing known: every command goes to the session. */
    p->epoch = -1;
    return NULL;
}

static int DataPath_init(DataPath *p, PyObject *args, PyObject *kw)
{
    static char *names[] = {"fd", "store", "lock", "engine", "timeout",
                            "max_send_segment", "max_burst", "first_burst",
                            "immediate_data", "dirty_chunks", "batch_chunks",
                            NULL};
    int fd, immediate;
    double timeout;
    PyObject *store, *lock, *engine;
    unsigned int segment, burst, first;
    Py_ssize_t dirty, batch = 128;
    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "iO!O!OdIIIpn|n", names, &fd, &NativeStoreType, &store,
            &NativeLockType, &lock, &engine, &timeout, &segment, &burst,
            &first, &immediate, &dirty, &batch))
        return -1;
    if (!segment || !burst || segment > (1 << 24)) {
        PyErr_SetString(PyExc_ValueError, "segment and burst lengths");
        return -1;
    }
    if (!p->data && !(p->data = malloc(MAX_TRANSFER + BHS))) {
        PyErr_NoMemory();
        return -1;
    }
    if (!p->cctx && !(p->cctx = ZSTD_createCCtx())) {
        PyErr_NoMemory();
        return -1;
    }
    Py_INCREF(store);
    Py_INCREF(lock);
    Py_INCREF(engine);
    Py_XSETREF(p->store, (Store *)store);
    Py_XSETREF(p->lock, (NativeLock *)lock);
    Py_XSETREF(p->engine, engine);
    p->fd = fd;
    p->timeout_ms = timeout < 0 ? -1 : (int)(timeout * 1000);
    p->max_send_segment = segment;
    p->max_burst = burst;
    p->first_burst = first;
    p->immediate_data = immediate;
    p->dirty_chunks = dirty > 0 ? (size_t)dirty : 1;
    p->batch_chunks = batch > 0 ? (size_t)batch : 1;
    p->epoch = -1;
    return 0;
}

static void DataPath_dealloc(DataPath *p)
{
    free_luns(p);
    solicited_free_all(p);
    free(p->in.buf);
    free(p->out.buf);
    free(p->pending.buf);
    free(p->data);
    ZSTD_freeCCtx(p->cctx);
    Py_XDECREF(p->store);
    Py_XDECREF(p->lock);
    Py_XDECREF(p->engine);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyMethodDef DataPath_methods[] = {
    {"serve", (PyCFunction)DataPath_serve, METH_VARARGS,
     "serve(stat_sn, exp_cmd_sn, buffered) -> (stat_sn, exp_cmd_sn,\n"
     "unread bytes, (header, data) of a collected write or None,\n"
     "protocol error or None): handle PDUs until one is not ours."},
    {"stats", (PyCFunction)DataPath_stats, METH_NOARGS,
     "stats() -> {what: count}: commands, writes staged, writes handed\n"
     "to the session (and why), the lock taken (and found held), waits\n"
     "for input, send() calls, answers (and those held back for a later\n"
     "command), batches stored (times in *_ns)."},
    {"set_luns", (PyCFunction)DataPath_set_luns, METH_VARARGS,
     "set_luns(epoch, [(number, chain, blocks, read_only, volume)])."},
    {NULL},
};

PyTypeObject NativeDataPathType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "reference_array.native._native.DataPath",
    .tp_basicsize = sizeof(DataPath),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The native data path of one iSCSI connection.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)DataPath_init,
    .tp_dealloc = (destructor)DataPath_dealloc,
    .tp_methods = DataPath_methods,
};
