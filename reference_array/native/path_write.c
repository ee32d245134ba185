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

/* WRITE (10/16) on a connection's data path: the immediate data, then
 * what is missing solicited with R2Ts (PDUs of other tasks that arrive
 * meanwhile are held back), then staged under the engine's lock within
 * the room it granted. A write that cannot be staged here goes back to
 * the session with its data (COLLECTED). */

#include <errno.h>
#include <string.h>

#include "path.h"

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

/* Hold back a PDU that came while a write's data was solicited. */
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

/* Solicit (R2T) and receive what is missing of ``total`` bytes. */
static int collect(DataPath *p, const uint8_t *cmd, uint32_t got,
                   uint32_t total)
{
    uint32_t itt = get32(cmd + 16), r2t_sn = 0;
    while (got < total) {
        uint32_t want = total - got < p->max_burst ? total - got
            : p->max_burst;
        uint8_t h[BHS];
        /* The R2TSN serves as the transfer tag. */
        target_header(p, h, OP_R2T, F_FINAL, 0, 0, cmd + 8, itt, r2t_sn, 0,
                      r2t_sn, got, want);
        if (bytes_append(&p->out, h, BHS) < 0) {
            errno = ENOMEM;
            return FAILED;
        }
        uint32_t end = got + want, data_sn = 0;
        while (got < end) {
            if (path_fill(p, BHS) < 0)
                return FAILED;
            const uint8_t *d = p->in.buf + p->in.start;
            size_t dlen = (size_t)d[5] << 16 | (size_t)d[6] << 8 | d[7];
            if (dlen > MAX_SEGMENT)
                return protocol_error(p, "data segment too long");
            size_t len = pdu_length(d);
            if (path_fill(p, len) < 0)
                return FAILED;
            d = p->in.buf + p->in.start;
            if ((d[0] & 0x3f) != OP_DATA_OUT) {
                if (hold(p, len) == FAILED)
                    return FAILED;
                continue;
            }
            if (get32(d + 16) != itt)
                return protocol_error(p, "Data-Out for another task while "
                                      "one is solicited");
            if (d[4])
                return protocol_error(p, "Data-Out with an AHS");
            if (get32(d + 40) != got || get32(d + 36) != data_sn)
                return protocol_error(p, "Data-Out out of order");
            if (dlen > end - got)
                return protocol_error(p, "Data-Out beyond what was "
                                      "solicited");
            memcpy(p->data + got, d + BHS, dlen);
            p->in.start += len;
            got += (uint32_t)dlen;
            data_sn++;
        }
        r2t_sn++;
    }
    return HANDLED;
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

/* The write goes back to the session with its data, for ``why``. */
static int collected(DataPath *p, const uint8_t *cmd, int why)
{
    p->exp_cmd_sn--;
    memcpy(p->data + MAX_TRANSFER, cmd, BHS);
    p->stats[PS_COLLECTED]++;
    p->stats[why]++;
    return COLLECTED;
}

int do_write(DataPath *p, PyThreadState **ts, const uint8_t *bhs,
                    PathLun *lun, uint64_t lba, uint32_t blocks,
                    size_t len, size_t dlen)
{
    uint8_t cmd[BHS];
    uint32_t bytes = blocks * SECTOR;
    memcpy(cmd, bhs, BHS);
    memcpy(p->data, bhs + BHS, dlen);
    p->in.start += len;
    p->exp_cmd_sn++;
    int rc = collect(p, cmd, (uint32_t)dlen, bytes);
    if (rc == FAILED || release_pending(p) < 0)
        return FAILED;
    if (enter(p) < 0)
        /* The session runs it (and counts its CmdSN again). */
        return collected(p, cmd, PS_COLLECTED_EPOCH);
    if (p->store->room < (int64_t)bytes) {
        /* No room granted: the engine decides (and may refuse). */
        native_lock_release(p->lock);
        return collected(p, cmd, PS_COLLECTED_ROOM);
    }
    p->store->room -= bytes;
    int64_t started = now_ns();
    if (store_stage(p->store, lun->chain[0], (int64_t)lba * SECTOR, p->data,
                    bytes) < 0) {
        native_lock_release(p->lock);
        return collected(p, cmd, PS_COLLECTED_STAGE);
    }
    store_count(p->store, 1, lun->volume, bytes, now_ns() - started);
    int full = p->store->staged.count >= p->dirty_chunks;
    native_lock_release(p->lock);
    p->stats[PS_WRITES]++;
    if (full) {
        /* The oldest few are stored (by the engine: its transaction);
         * answers waiting go out first. */
        send_status(p, cmd);
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
    send_status(p, cmd);
    return HANDLED;
}
