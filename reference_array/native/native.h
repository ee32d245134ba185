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

/* The array's native data path: shared declarations. */
#ifndef REFERENCE_ARRAY_NATIVE_H
#define REFERENCE_ARRAY_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* The largest input ``native_blake3`` digests, in KiB. */
#define NATIVE_DIGEST_MAX_CHUNKS 64

int native_blake3(const uint8_t *in, size_t len, uint8_t out[32]);
/* ``simd`` 0: the portable lanes (for the tests), 1: the CPU's best. */
int native_blake3_with(const uint8_t *in, size_t len, uint8_t out[32],
                       int simd);
/* The SIMD lanes this CPU digests with ("avx2"), or "" (portable). */
const char *native_blake3_simd(void);

typedef struct {
    PyObject_HEAD
    pthread_mutex_t mutex;
} NativeLock;

void native_lock_acquire(NativeLock *l);
void native_lock_release(NativeLock *l);

extern PyTypeObject NativeStoreType;
extern PyTypeObject NativeLockType;
/* sqlite3.OperationalError, raised for errors of the database. */
extern PyObject *native_db_error;

#endif
