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

/* The wire side of a connection's native data path: buffered receive,
 * batched send, PDU framing and the header every target PDU shares. */

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "path.h"

int bytes_reserve(Bytes *b, size_t more)
{
    if (b->end + more <= b->cap)
        return 0;
    if (b->start) {
        memmove(b->buf, b->buf + b->start, b->end - b->start);
        b->end -= b->start;
        b->start = 0;
        if (b->end + more <= b->cap)
            return 0;
    }
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < b->end + more)
        cap *= 2;
    uint8_t *grown = realloc(b->buf, cap);
    if (!grown)
        return -1;
    b->buf = grown;
    b->cap = cap;
    return 0;
}

int bytes_append(Bytes *b, const void *data, size_t len)
{
    if (bytes_reserve(b, len) < 0)
        return -1;
    memcpy(b->buf + b->end, data, len);
    b->end += len;
    return 0;
}

static int wait_for(DataPath *p, short events)
{
    struct pollfd pfd = {p->fd, events, 0};
    int rc;
    do {
        rc = poll(&pfd, 1, p->timeout_ms);
    } while (rc < 0 && errno == EINTR);
    if (rc == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    return rc < 0 ? -1 : 0;
}

int path_flush(DataPath *p)
{
    Bytes *o = &p->out;
    if (p->unsent > 1)
        p->stats[PS_REPLIES_HELD] += p->unsent - 1;
    p->unsent = 0;
    while (o->start < o->end) {
        p->stats[PS_SENDS]++;
        ssize_t n = send(p->fd, o->buf + o->start, o->end - o->start,
                         MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if ((errno == EAGAIN || errno == EWOULDBLOCK) &&
                    wait_for(p, POLLOUT) == 0)
                continue;
            return -1;
        }
        o->start += (size_t)n;
    }
    o->start = o->end = 0;
    return 0;
}

int path_fill(DataPath *p, size_t n)
{
    Bytes *in = &p->in;
    if (in->end - in->start >= n)
        return 0;
    /* Replies go out first: the initiator may wait for them. */
    if (path_flush(p) < 0)
        return -1;
    if (bytes_reserve(in, n - (in->end - in->start) + 65536) < 0) {
        errno = ENOMEM;
        return -1;
    }
    while (in->end - in->start < n) {
        ssize_t got = recv(p->fd, in->buf + in->end, in->cap - in->end, 0);
        if (got > 0) {
            in->end += (size_t)got;
            continue;
        }
        if (got == 0) {
            errno = ECONNRESET;
            return -1;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int64_t t = now_ns();
            int rc = wait_for(p, POLLIN);
            p->stats[PS_INPUT_WAITS]++;
            p->stats[PS_INPUT_WAIT_NS] += now_ns() - t;
            if (rc == 0)
                continue;
        }
        return -1;
    }
    return 0;
}

uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
        (uint32_t)p[2] << 8 | p[3];
}

void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

size_t pdu_length(const uint8_t *bhs)
{
    size_t data = (size_t)bhs[5] << 16 | (size_t)bhs[6] << 8 | bhs[7];
    return BHS + (size_t)bhs[4] * 4 + data + (-data & 3);
}

void target_header(DataPath *p, uint8_t *h, int opcode, int flags,
                   int status, uint32_t dlen, const uint8_t *lun,
                   uint32_t itt, uint32_t ttt, int advance, uint32_t w36,
                   uint32_t w40, uint32_t w44)
{
    memset(h, 0, BHS);
    h[0] = (uint8_t)opcode;
    h[1] = (uint8_t)flags;
    h[3] = (uint8_t)status;
    h[5] = (uint8_t)(dlen >> 16);
    h[6] = (uint8_t)(dlen >> 8);
    h[7] = (uint8_t)dlen;
    if (lun)
        memcpy(h + 8, lun, 8);
    put32(h + 16, itt);
    put32(h + 20, ttt);
    put32(h + 24, p->stat_sn);
    put32(h + 28, p->exp_cmd_sn);
    put32(h + 32, p->exp_cmd_sn + CMD_WINDOW - 1);
    put32(h + 36, w36);
    put32(h + 40, w40);
    put32(h + 44, w44);
    if (advance) {
        p->stat_sn++;
        p->unsent++;
        p->stats[PS_REPLIES]++;
    }
}
