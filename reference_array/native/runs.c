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

/* Allocation status (GET LBA STATUS) and I/O counters of the store.
 *
 * A chunk is allocated when it holds data (not zeros) in the nearest
 * layer of its image's chain that has it. A run stops after ``limit``
 * bytes, and sooner: a run of data after RUN_WINDOW chunks, a run of
 * holes after RUN_PROBES masked entries. Initiators ask again from
 * where a run stops, and some ask before every read (an NBD server
 * answering sparse reads), so the work of one answer is bounded
 * whatever the volume holds. Staged chunks are not looked at: the
 * engine stores them first.
 */

#include <stdlib.h>
#include <string.h>

#include "store.h"

#define RUN_WINDOW 64
#define RUN_PROBES 16

/* Whether chunk ``idx`` of an image holds data: one probe. */
static int allocated(Store *s, const int64_t *chain, int n, int64_t idx)
{
    s->work[W_MAP_PROBES]++;
    for (int k = 0; k < n; k++) {
        int64_t chunk;
        int found = store_map_entry(s, chain[k], idx, &chunk, NULL, 0);
        if (found)
            return found < 0 ? -1 : chunk != 0;
    }
    return 0;
}

/* First chunk in [first, end) that is a hole (or ``end``); at most
 * RUN_WINDOW chunks. */
static int64_t data_run_end(Store *s, const int64_t *chain, int n,
                            int64_t first, int64_t end)
{
    int64_t top[RUN_WINDOW];
    int rank[RUN_WINDOW];
    for (int i = 0; i < RUN_WINDOW; i++)
        rank[i] = -1;
    s->work[W_MAP_PROBES]++;
    sqlite3_stmt *st = store_stmt(s, S_RUN_ROWS);
    if (!st)
        return -1;
    for (int k = 0; k < n; k++) {
        sqlite3_bind_int64(st, 1, chain[k]);
        sqlite3_bind_int64(st, 2, first);
        sqlite3_bind_int64(st, 3, end);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            int64_t i = sqlite3_column_int64(st, 0) - first;
            if (i >= 0 && i < RUN_WINDOW && rank[i] < 0) {
                rank[i] = k;
                top[i] = sqlite3_column_int64(st, 1);
            }
        }
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
            store_db_error(s);
            return -1;
        }
    }
    for (int64_t idx = first; idx < end; idx++)
        if (rank[idx - first] < 0 || !top[idx - first])
            return idx;
    return end;
}

/* First chunk in [first, end) that holds data (or ``end``). */
static int64_t hole_run_end(Store *s, const int64_t *chain, int n,
                            int64_t first, int64_t end)
{
    int64_t pos = first;
    sqlite3_stmt *st = store_stmt(s, S_NEXT_DATA);
    if (!st)
        return -1;
    for (int probe = 0; probe < RUN_PROBES; probe++) {
        int64_t nearest = end;
        for (int k = 0; k < n; k++) {
            s->work[W_MAP_PROBES]++;
            sqlite3_bind_int64(st, 1, chain[k]);
            sqlite3_bind_int64(st, 2, pos);
            sqlite3_bind_int64(st, 3, nearest);
            int rc = sqlite3_step(st);
            if (rc == SQLITE_ROW)
                nearest = sqlite3_column_int64(st, 0);
            sqlite3_reset(st);
            if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
                store_db_error(s);
                return -1;
            }
        }
        if (nearest == end)
            return end;
        int kind = allocated(s, chain, n, nearest);
        if (kind)
            return kind < 0 ? -1 : nearest;
        /* Data below, masked by zeros written above it. */
        pos = nearest + 1;
    }
    return pos;
}

int store_allocated_run(Store *s, const int64_t *chain, int n,
                        int64_t offset, int64_t limit, int *kind,
                        int64_t *length)
{
    int64_t chunk = (int64_t)s->chunk;
    int64_t first = offset / chunk;
    int64_t end = (offset + limit + chunk - 1) / chunk;
    int64_t window = end < first + RUN_WINDOW ? end : first + RUN_WINDOW;
    int64_t stop;
    if (n == 1) {
        sqlite3_stmt *st = store_stmt(s, S_COUNT_RUN);
        if (!st)
            return -1;
        s->work[W_MAP_PROBES]++;
        sqlite3_bind_int64(st, 1, chain[0]);
        sqlite3_bind_int64(st, 2, first);
        sqlite3_bind_int64(st, 3, window);
        int rc = sqlite3_step(st);
        int64_t count = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
        sqlite3_reset(st);
        if (rc != SQLITE_ROW) {
            store_db_error(s);
            return -1;
        }
        if (count == window - first) {
            /* All data (the common answer), counted inside SQLite. */
            *kind = 1;
            stop = window;
            goto out;
        }
    }
    *kind = allocated(s, chain, n, first);
    if (*kind < 0)
        return -1;
    stop = *kind ? data_run_end(s, chain, n, first, window)
        : hole_run_end(s, chain, n, first, end);
    if (stop < 0)
        return -1;
out:
    *length = (stop * chunk < offset + limit ? stop * chunk : offset + limit)
        - offset;
    return 0;
}

/* -- I/O counters ------------------------------------------------------- */
void store_count(Store *s, int write, int64_t volume, int64_t bytes,
                 int64_t ns)
{
    s->io[write].ops++;
    s->io[write].bytes += bytes;
    s->io[write].ns += ns;
    if (volume < 0)
        return;
    size_t i;
    for (i = 0; i < s->volumes_count; i++)
        if (s->volumes[i].id == volume)
            break;
    if (i == s->volumes_count) {
        if (i == s->volumes_cap) {
            size_t cap = s->volumes_cap ? 2 * s->volumes_cap : 16;
            void *grown = realloc(s->volumes, cap * sizeof(*s->volumes));
            if (!grown)
                return;
            s->volumes = grown;
            s->volumes_cap = cap;
        }
        memset(&s->volumes[i], 0, sizeof(s->volumes[i]));
        s->volumes[i].id = volume;
        s->volumes_count++;
    }
    s->volumes[i].io[write].ops++;
    s->volumes[i].io[write].bytes += bytes;
    s->volumes[i].io[write].ns += ns;
}
