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

/* The commands a connection's data path answers with Data-In: READ
 * (10/16) and GET LBA STATUS, read under the engine's lock. */

#include <errno.h>
#include <string.h>

#include "path.h"

/* Data-In PDUs of a command's answer (``total`` bytes, ``edtl`` asked),
 * the last one carrying the status, as the session sends them. */
static int send_data_in(DataPath *p, const uint8_t *cmd, const uint8_t *data,
                        uint32_t total, uint32_t edtl)
{
    uint32_t len = total < edtl ? total : edtl, offset = 0, data_sn = 0;
    uint32_t segment = p->max_send_segment, burst = p->max_burst;
    if (bytes_reserve(&p->out, len + (len / segment + 1) * (BHS + 4)) < 0)
        return -1;
    for (;;) {
        uint32_t piece = len - offset < segment ? len - offset : segment;
        uint32_t end = offset + piece;
        int last = end >= len;
        int flags = last ? F_FINAL | F_STATUS :
            (end % burst == 0 ? F_FINAL : 0);
        uint32_t residual = 0;
        if (last && total > edtl) {
            flags |= F_OVERFLOW;
            residual = total - edtl;
        } else if (last && total < edtl) {
            flags |= F_UNDERFLOW;
            residual = edtl - total;
        }
        uint8_t *h = p->out.buf + p->out.end;
        target_header(p, h, OP_DATA_IN, flags, 0, piece, cmd + 8,
                      get32(cmd + 16), NO_TAG, last, data_sn, offset,
                      residual);
        memcpy(h + BHS, data + offset, piece);
        memset(h + BHS + piece, 0, -piece & 3);
        p->out.end += BHS + piece + (-piece & 3);
        offset = end;
        data_sn++;
        if (last)
            return 0;
    }
}

int do_read(DataPath *p, const uint8_t *cmd, PathLun *lun,
                   uint64_t lba, uint32_t blocks)
{
    uint32_t bytes = blocks * SECTOR;
    if (enter(p) < 0)
        return STOP;
    int64_t started = now_ns(), pos = (int64_t)lba * SECTOR;
    int64_t end = pos + bytes, chunk = (int64_t)p->store->chunk;
    while (pos < end) {
        int64_t idx = pos / chunk, inner = pos % chunk;
        int64_t take = chunk - inner < end - pos ? chunk - inner : end - pos;
        const uint8_t *data;
        if (store_read_part(p->store, lun->chain, lun->n, idx, inner, take,
                            &data) < 0) {
            /* The session meets the same error its own way. */
            native_lock_release(p->lock);
            return STOP;
        }
        uint8_t *dst = p->data + (pos - (int64_t)lba * SECTOR);
        if (data)
            memcpy(dst, data, take);
        else
            memset(dst, 0, take);
        pos += take;
    }
    store_count(p->store, 0, lun->volume, bytes, now_ns() - started);
    native_lock_release(p->lock);
    p->in.start += BHS;
    p->exp_cmd_sn++;
    if (send_data_in(p, cmd, p->data, bytes, bytes) < 0) {
        errno = ENOMEM;
        return FAILED;
    }
    return HANDLED;
}

int do_lba_status(DataPath *p, const uint8_t *cmd, PathLun *lun)
{
    const uint8_t *cdb = cmd + 32;
    uint64_t lba = (uint64_t)get32(cdb + 2) << 32 | get32(cdb + 6);
    uint32_t alloc = get32(cdb + 10), edtl = get32(cmd + 20);
    if (lba >= (uint64_t)lun->blocks || !edtl)
        return STOP;
    if (enter(p) < 0)
        return STOP;
    if (p->store->staged.count) {
        /* The engine stores staged chunks before it answers. */
        native_lock_release(p->lock);
        return STOP;
    }
    uint64_t blocks = (uint64_t)lun->blocks - lba;
    if (blocks > (1 << 20))
        blocks = 1 << 20;
    int kind;
    int64_t run;
    int rc = store_allocated_run(p->store, lun->chain, lun->n,
                                 (int64_t)lba * SECTOR,
                                 (int64_t)blocks * SECTOR, &kind, &run);
    native_lock_release(p->lock);
    if (rc < 0)
        return STOP;
    uint8_t answer[24] = {0};
    put32(answer, 20);
    put32(answer + 8, (uint32_t)(lba >> 32));
    put32(answer + 12, (uint32_t)lba);
    put32(answer + 16, run / SECTOR > 1 ? (uint32_t)(run / SECTOR) : 1);
    answer[20] = kind ? 0 : 1;
    p->in.start += BHS;
    p->exp_cmd_sn++;
    if (send_data_in(p, cmd, answer, alloc < 24 ? alloc : 24, edtl) < 0) {
        errno = ENOMEM;
        return FAILED;
    }
    return HANDLED;
}
