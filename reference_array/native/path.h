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

/* A connection's native data path (path.c, path_read.c, path_write.c,
 * pdu.c). */
#ifndef REFERENCE_ARRAY_NATIVE_PATH_H
#define REFERENCE_ARRAY_NATIVE_PATH_H

#include <time.h>

#include "store.h"

#define BHS 48
/* The largest data segment the target receives (MaxRecvDataSegmentLength
 * it declares) and the largest transfer the native path handles; larger
 * ones go to the Python session. */
#define MAX_SEGMENT 262144
#define MAX_TRANSFER (1 << 20)
/* PDUs (and their bytes) held back while a write's data is solicited:
 * a window of commands with immediate data, and as many pings. */
#define CMD_WINDOW 32
#define MAX_PENDING (2 * CMD_WINDOW)
#define MAX_PENDING_BYTES (CMD_WINDOW * 65536)
/* Replies go out once this much waits. */
#define SEND_BATCH 262144
/* Writes whose data is solicited at once on a connection, and the bytes
 * their buffers take on all connections together (path_write.c). */
#define SOLICITED_MAX 8
#define SOLICITED_BYTES ((size_t)64 << 20)

typedef struct {
    int64_t number;
    int64_t *chain;
    int n;
    int64_t blocks;
    int read_only;
    int64_t volume;             /* counted per volume; -1: not */
} PathLun;

typedef struct {
    uint8_t *buf;
    size_t cap, start, end;
} Bytes;

/* A write whose data is solicited (R2T) while the loop goes on: its
 * command, its data as it arrives, the burst asked for. */
typedef struct {
    uint8_t cmd[BHS];
    uint8_t *data;
    uint32_t bytes, got, end;   /* all of it; received; end of the burst */
    uint32_t r2t_sn, data_sn;
} Solicited;

/* What a connection's loop did, by count (and the time some of it took):
 * what the shape tests and the array's log look at. */
enum {
    PS_COMMANDS,            /* commands handled here */
    PS_WRITES,              /* of which writes staged here */
    PS_COLLECTED,           /* writes handed to the session with data */
    PS_COLLECTED_EPOCH,     /*   ... as the engine's objects moved */
    PS_COLLECTED_ROOM,      /*   ... as no room was granted */
    PS_COLLECTED_STAGE,     /*   ... as staging failed */
    PS_STOPS,               /* PDUs left to the session */
    PS_LOCKS,               /* times the engine's lock was taken */
    PS_LOCK_WAITS,          /*   ... and found held */
    PS_LOCK_WAIT_NS,
    PS_INPUT_WAITS,         /* times the loop waited for input */
    PS_INPUT_WAIT_NS,
    PS_SENDS,               /* send() calls */
    PS_REPLIES,             /* commands answered */
    PS_REPLIES_HELD,        /* answers that waited for a later command */
    PS_SETTLES,             /* batches stored by this connection */
    PS_SETTLE_NS,
    PS_SOLICITED,           /* writes solicited while the loop went on */
    PS_SOLICITED_PEAK,      /*   ... the most at once */
    PS_ROOM_REFILLS,        /* times the engine granted room again */
    PS_COUNT
};

typedef struct {
    PyObject_HEAD
    Store *store;
    NativeLock *lock;
    PyObject *engine;           /* for storing a batch: engine._settle_some */
    int fd;
    int timeout_ms;
    uint32_t max_send_segment, max_burst, first_burst;
    int immediate_data;
    size_t dirty_chunks;        /* staged chunks that call for a batch */
    size_t batch_chunks;        /* chunks the engine stores a batch */
    ZSTD_CCtx *cctx;            /* compresses them before (prepare.c) */
    uint32_t stat_sn, exp_cmd_sn;
    PathLun *luns;
    size_t nluns;
    int64_t epoch;
    Bytes in, out, pending;
    size_t pending_count;
    uint8_t *data;              /* a command's data (MAX_TRANSFER) */
    char error[160];            /* a protocol error: the session ends */
    uint64_t stats[PS_COUNT];
    size_t unsent;              /* answers waiting in ``out`` */
    Solicited solicited[SOLICITED_MAX]; /* in command order */
    size_t nsolicited;
    int handback;               /* the first goes back to the session */
} DataPath;

extern PyTypeObject NativeDataPathType;

/* What handling a PDU came to: the loop goes on (HANDLED) or stops, at a
 * PDU the session handles (STOP), with a write whose data it collected
 * for the session (COLLECTED), or on an error (FAILED). */
enum { STOP = 0, HANDLED = 1, COLLECTED = 2, FAILED = -1 };

#define OP_DATA_OUT 0x05
#define OP_SCSI_COMMAND 0x01
#define OP_SCSI_RESPONSE 0x21
#define OP_DATA_IN 0x25
#define OP_R2T 0x31
#define F_FINAL 0x80
#define F_READ 0x40
#define F_WRITE 0x20
#define F_OVERFLOW 0x04
#define F_UNDERFLOW 0x02
#define F_STATUS 0x01
#define SECTOR 512
#define NO_TAG 0xffffffffu

static inline int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* path.c: the LUN a command names (NULL: not one the session gave), and
 * the range of READ/WRITE (10) and (16) (0 for other opcodes). */
PathLun *path_find_lun(DataPath *p, const uint8_t *raw);
int path_rw_range(const uint8_t *cdb, uint64_t *lba, uint32_t *blocks);

/* path_read.c: commands answered with Data-In */
int do_read(DataPath *p, const uint8_t *cmd, PathLun *lun, uint64_t lba,
            uint32_t blocks);
int do_lba_status(DataPath *p, const uint8_t *cmd, PathLun *lun);
/* path_write.c: WRITE, its data solicited as needed */
int do_write(DataPath *p, PyThreadState **ts, const uint8_t *bhs,
             uint32_t blocks, size_t len, size_t dlen);
/* While writes' data is solicited: a Data-Out for one of them, and any
 * other PDU, held back until they are all staged. */
int solicited_data(DataPath *p, PyThreadState **ts);
int path_hold(DataPath *p);
/* Stage the solicited writes whose data is all here, in command order;
 * COLLECTED when the first goes back to the session. */
int solicited_finish(DataPath *p, PyThreadState **ts);
void solicited_free_all(DataPath *p);

/* pdu.c: the wire */
int bytes_reserve(Bytes *b, size_t more);
int bytes_append(Bytes *b, const void *data, size_t len);
/* Buffer at least ``n`` unread bytes: 0, or -1 with errno (ETIMEDOUT,
 * ECONNRESET for a closed peer). */
int path_fill(DataPath *p, size_t n);
/* Send every waiting reply: 0 or -1 with errno. */
int path_flush(DataPath *p);
/* Length of the whole PDU at the start of the input (0: header not yet
 * there). */
size_t pdu_length(const uint8_t *bhs);
void put32(uint8_t *p, uint32_t v);
uint32_t get32(const uint8_t *p);
/* A target PDU header (the common shape up to byte 35, then three words).
 */
void target_header(DataPath *p, uint8_t *h, int opcode, int flags,
                   int status, uint32_t dlen, const uint8_t *lun,
                   uint32_t itt, uint32_t ttt, int advance, uint32_t w36,
                   uint32_t w40, uint32_t w44);

/* Take the engine's lock and check that what the session resolved still
 * holds (0), or release it again (-1). */
static inline int enter(DataPath *p)
{
    p->stats[PS_LOCKS]++;
    if (pthread_mutex_trylock(&p->lock->mutex)) {
        /* Answers waiting go out first: the initiator goes on with them
         * while this waits (a send that fails fails again later). */
        path_flush(p);
        int64_t t = now_ns();
        native_lock_acquire(p->lock);
        p->stats[PS_LOCK_WAITS]++;
        p->stats[PS_LOCK_WAIT_NS] += now_ns() - t;
    }
    if (p->store->db && p->store->epoch == p->epoch)
        return 0;
    native_lock_release(p->lock);
    return -1;
}

#endif
