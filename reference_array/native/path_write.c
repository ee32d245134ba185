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

/* WRITE (10/16) on a connection's data path.
 *
 * A write whose data did not all come with its command has the rest
 * solicited with R2Ts. Up to SOLICITED_MAX such writes are solicited at
 * once, each with its own buffer, so that the initiator sends one's data
 * while another's R2T is on its way: waiting for each write's bursts in
 * turn costs a round trip per burst, for every write, with the link
 * idle. Their data is staged in command order once it is all here; any
 * other PDU that comes meanwhile (a read, a write whose data all came,
 * a ping) is held back until then, so it runs after the writes before
 * it as it would have. A write that finds no buffer (SOLICITED_BYTES is
 * shared by all connections) or asks for an ordered task has its data
 * collected alone, the loop waiting. A write that cannot be staged here
 * goes back to the session with its data (COLLECTED). */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "path.h"

/* Bytes of solicited writes' buffers on all connections. */
static size_t solicited_bytes;

static int protocol_error(DataPath *p, const char *what)
{
    snprintf(p->error, sizeof(p->error), "%s", what);
    return FAILED;
}

static void send_status(DataPath *p, const uint8_t *cmd)
{
    uint8_t h[BHS];
    target_header(p, h, OP_SCSI_RESPONSE, F_FINAL, 0, 0, NULL,
                  get32(cmd + 16), 0, 1, 0, 0, 0);
    bytes_append(&p->out, h, BHS);
}

/* Hold back a PDU that came while write data was solicited. */
static int hold(DataPath *p, size_t len)
{
    if (++p->pending_count > MAX_PENDING ||
            p->pending.end + len > MAX_PENDING_BYTES)
        return protocol_error(p, "PDUs sent while write data was "
                              "solicited beyond the window");
    if (bytes_append(&p->pending, p->in.buf + p->in.start, len) < 0) {
        errno = ENOMEM;
        return FAILED;
    }
    p->in.start += len;
    return HANDLED;
}

/* The length of the PDU at the start of the input, whole in the buffer
 * (0 on failure). */
static size_t whole_pdu(DataPath *p, size_t *dlen)
{
    if (path_fill(p, BHS) < 0)
        return 0;
    const uint8_t *d = p->in.buf + p->in.start;
    *dlen = (size_t)d[5] << 16 | (size_t)d[6] << 8 | d[7];
    if (*dlen > MAX_SEGMENT) {
        protocol_error(p, "data segment too long");
        return 0;
    }
    size_t len = pdu_length(d);
    return path_fill(p, len) < 0 ? 0 : len;
}

int path_hold(DataPath *p)
{
    size_t dlen, len = whole_pdu(p, &dlen);
    return len ? hold(p, len) : FAILED;
}

/* PDUs held back go before what is still unread. */
static int release_pending(DataPath *p)
{
    Bytes *in = &p->in, *pend = &p->pending;
    size_t unread = in->end - in->start, held = pend->end - pend->start;
    if (!held)
        return 0;
    if (bytes_reserve(pend, unread) < 0)
        return -1;
    memcpy(pend->buf + pend->end, in->buf + in->start, unread);
    pend->end += unread;
    Bytes swap = *in;
    *in = *pend;
    *pend = swap;
    pend->start = pend->end = 0;
    p->pending_count = 0;
    return 0;
}

/* Ask for the next burst of ``t``. */
static int send_r2t(DataPath *p, Solicited *t)
{
    uint32_t left = t->bytes - t->got;
    uint32_t want = left < p->max_burst ? left : p->max_burst;
    uint8_t h[BHS];
    /* The R2TSN serves as the transfer tag. */
    target_header(p, h, OP_R2T, F_FINAL, 0, 0, t->cmd + 8,
                  get32(t->cmd + 16), t->r2t_sn, 0, t->r2t_sn, t->got,
                  want);
    t->end = t->got + want;
    t->data_sn = 0;
    if (bytes_append(&p->out, h, BHS) < 0) {
        errno = ENOMEM;
        return FAILED;
    }
    return HANDLED;
}

/* The Data-Out at the start of the input (``len`` bytes, ``dlen`` of
 * data) into ``t``, which solicited it; the next burst asked for when
 * this one is complete. */
static int accept_data(DataPath *p, Solicited *t, size_t len, size_t dlen)
{
    const uint8_t *d = p->in.buf + p->in.start;
    if (d[4])
        return protocol_error(p, "Data-Out with an AHS");
    if (get32(d + 40) != t->got || get32(d + 36) != t->data_sn)
        return protocol_error(p, "Data-Out out of order");
    if (dlen > t->end - t->got)
        return protocol_error(p, "Data-Out beyond what was solicited");
    memcpy(t->data + t->got, d + BHS, dlen);
    p->in.start += len;
    t->got += (uint32_t)dlen;
    t->data_sn++;
    if (t->got == t->end && t->got < t->bytes) {
        t->r2t_sn++;
        return send_r2t(p, t);
    }
    return HANDLED;
}

/* Solicit and receive the rest of ``t`` alone: PDUs of other tasks that
 * arrive meanwhile are held back. */
static int collect(DataPath *p, Solicited *t)
{
    if (send_r2t(p, t) == FAILED)
        return FAILED;
    while (t->got < t->bytes) {
        size_t dlen, len = whole_pdu(p, &dlen);
        if (!len)
            return FAILED;
        const uint8_t *d = p->in.buf + p->in.start;
        if ((d[0] & 0x3f) != OP_DATA_OUT) {
            if (hold(p, len) == FAILED)
                return FAILED;
            continue;
        }
        if (get32(d + 16) != get32(t->cmd + 16))
            return protocol_error(p, "Data-Out for another task while "
                                  "one is solicited");
        if (accept_data(p, t, len, dlen) == FAILED)
            return FAILED;
    }
    return HANDLED;
}

/* The engine's ``_refill_room`` (with the GIL, the lock not held). */
static int refill_room(DataPath *p, PyThreadState **ts)
{
    PyEval_RestoreThread(*ts);
    PyObject *res = PyObject_CallMethod(p->engine, "_refill_room", NULL);
    *ts = PyEval_SaveThread();
    p->stats[PS_ROOM_REFILLS]++;
    if (!res)
        return -1;
    Py_DECREF(res);
    return 0;
}

/* Stage a write whose data is all here and answer it (HANDLED), or say
 * why it goes back to the session (``*why``, COLLECTED). */
static int stage(DataPath *p, PyThreadState **ts, const uint8_t *cmd,
                 const uint8_t *data, int *why)
{
    PathLun *lun = path_find_lun(p, cmd + 8);
    uint64_t lba = 0;
    uint32_t blocks = 0;
    path_rw_range(cmd + 32, &lba, &blocks);
    uint32_t bytes = blocks * SECTOR;
    /* The LUNs may have been given again since the command came. */
    if (!lun || lun->read_only || lba > (uint64_t)lun->blocks ||
            blocks > (uint64_t)lun->blocks - lba || enter(p) < 0) {
        *why = PS_COLLECTED_EPOCH;
        return COLLECTED;
    }
    if (p->store->room < (int64_t)bytes) {
        /* The room granted is used up: the engine looks at the space
         * again; if there is still too little, it decides (and may
         * refuse). */
        native_lock_release(p->lock);
        if (refill_room(p, ts) < 0)
            return FAILED;
        if (enter(p) < 0) {
            *why = PS_COLLECTED_EPOCH;
            return COLLECTED;
        }
        if (p->store->room < (int64_t)bytes) {
            native_lock_release(p->lock);
            *why = PS_COLLECTED_ROOM;
            return COLLECTED;
        }
    }
    p->store->room -= bytes;
    int64_t started = now_ns();
    if (store_stage(p->store, lun->chain[0], (int64_t)lba * SECTOR, data,
                    bytes) < 0) {
        native_lock_release(p->lock);
        *why = PS_COLLECTED_STAGE;
        return COLLECTED;
    }
    store_count(p->store, 1, lun->volume, bytes, now_ns() - started);
    int full = p->store->staged.count >= p->dirty_chunks;
    native_lock_release(p->lock);
    p->stats[PS_WRITES]++;
    send_status(p, cmd);
    if (!full)
        return HANDLED;
    /* The oldest few are stored (by the engine: its transaction);
     * answers waiting go out first. */
    if (path_flush(p) < 0)
        return FAILED;
    int64_t t = now_ns();
    /* Their digests and compression without the lock, so that other
     * connections stage and store meanwhile. */
    if (store_prepare(p->store, p->lock, p->cctx, p->batch_chunks,
                      0, 0, NULL) < 0) {
        errno = ENOMEM;
        return FAILED;
    }
    PyEval_RestoreThread(*ts);
    PyObject *res = PyObject_CallMethod(p->engine, "_settle_some", NULL);
    *ts = PyEval_SaveThread();
    p->stats[PS_SETTLES]++;
    p->stats[PS_SETTLE_NS] += now_ns() - t;
    if (!res)
        return FAILED;
    Py_DECREF(res);
    return HANDLED;
}

/* The write goes back to the session with its data (already in
 * ``p->data``), for ``why``; the session runs it and counts its CmdSN. */
static int collected(DataPath *p, const uint8_t *cmd, int why)
{
    p->exp_cmd_sn = get32(cmd + 24);
    memcpy(p->data + MAX_TRANSFER, cmd, BHS);
    p->stats[PS_COLLECTED]++;
    p->stats[why]++;
    return COLLECTED;
}

static void drop_first(DataPath *p)
{
    Solicited *t = &p->solicited[0];
    free(t->data);
    __atomic_sub_fetch(&solicited_bytes, t->bytes, __ATOMIC_RELAXED);
    p->nsolicited--;
    memmove(t, t + 1, p->nsolicited * sizeof(*t));
}

void solicited_free_all(DataPath *p)
{
    while (p->nsolicited)
        drop_first(p);
    p->handback = 0;
}

int solicited_finish(DataPath *p, PyThreadState **ts)
{
    int why = 0;
    while (p->nsolicited && !p->handback) {
        Solicited *t = &p->solicited[0];
        if (t->got < t->bytes)
            return HANDLED;
        int rc = stage(p, ts, t->cmd, t->data, &why);
        if (rc == FAILED)
            return FAILED;
        if (rc == COLLECTED) {
            p->handback = why;
            break;
        }
        drop_first(p);
    }
    if (p->handback) {
        /* The session takes it once no write waits for data here: it
         * cannot receive theirs. */
        for (size_t i = 0; i < p->nsolicited; i++)
            if (p->solicited[i].got < p->solicited[i].bytes)
                return HANDLED;
        if (release_pending(p) < 0)
            return FAILED;
        Solicited *t = &p->solicited[0];
        memcpy(p->data, t->data, t->bytes);
        why = p->handback;
        p->handback = 0;
        int rc = collected(p, t->cmd, why);
        drop_first(p);
        return rc;
    }
    return release_pending(p) < 0 ? FAILED : HANDLED;
}

int solicited_data(DataPath *p, PyThreadState **ts)
{
    size_t dlen, len = whole_pdu(p, &dlen);
    if (!len)
        return FAILED;
    uint32_t itt = get32(p->in.buf + p->in.start + 16);
    for (size_t i = 0; i < p->nsolicited; i++) {
        Solicited *t = &p->solicited[i];
        if (get32(t->cmd + 16) != itt || t->got == t->bytes)
            continue;
        if (accept_data(p, t, len, dlen) == FAILED)
            return FAILED;
        return t->got == t->bytes ? solicited_finish(p, ts) : HANDLED;
    }
    return protocol_error(p, "Data-Out for a task not solicited");
}

/* Solicit the rest of a write while the loop goes on, if a buffer is
 * free: HANDLED, or STOP when it must be collected otherwise. */
static int solicit(DataPath *p, const uint8_t *bhs, uint32_t bytes,
                   size_t len, size_t dlen)
{
    /* Only simple (or untagged) tasks may overlap. */
    if (p->nsolicited >= SOLICITED_MAX || (bhs[1] & 0x07) > 1)
        return STOP;
    if (__atomic_add_fetch(&solicited_bytes, bytes, __ATOMIC_RELAXED) >
            SOLICITED_BYTES) {
        __atomic_sub_fetch(&solicited_bytes, bytes, __ATOMIC_RELAXED);
        return STOP;
    }
    Solicited *t = &p->solicited[p->nsolicited];
    memset(t, 0, sizeof(*t));
    if (!(t->data = malloc(bytes))) {
        __atomic_sub_fetch(&solicited_bytes, bytes, __ATOMIC_RELAXED);
        return STOP;
    }
    memcpy(t->cmd, bhs, BHS);
    memcpy(t->data, bhs + BHS, dlen);
    t->bytes = bytes;
    t->got = (uint32_t)dlen;
    p->nsolicited++;
    p->in.start += len;
    p->exp_cmd_sn++;
    p->stats[PS_SOLICITED]++;
    if (p->nsolicited > p->stats[PS_SOLICITED_PEAK])
        p->stats[PS_SOLICITED_PEAK] = p->nsolicited;
    return send_r2t(p, t);
}

int do_write(DataPath *p, PyThreadState **ts, const uint8_t *bhs,
             uint32_t blocks, size_t len, size_t dlen)
{
    uint32_t bytes = blocks * SECTOR;
    if (dlen < bytes && p->pending.end == p->pending.start) {
        int rc = solicit(p, bhs, bytes, len, dlen);
        if (rc != STOP)
            return rc;
    }
    if (p->nsolicited)
        return hold(p, len);
    /* Alone, into the connection's own buffer. */
    Solicited t = {.data = p->data, .bytes = bytes, .got = (uint32_t)dlen};
    memcpy(t.cmd, bhs, BHS);
    memcpy(p->data, bhs + BHS, dlen);
    p->in.start += len;
    p->exp_cmd_sn++;
    if (dlen < bytes && collect(p, &t) == FAILED)
        return FAILED;
    if (release_pending(p) < 0)
        return FAILED;
    int why = 0, rc = stage(p, ts, t.cmd, p->data, &why);
    return rc == COLLECTED ? collected(p, t.cmd, why) : rc;
}
