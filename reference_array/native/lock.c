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

/* A reentrant lock that native threads take without the GIL.
 *
 * The array's store lock: Python code holds it with ``with store.lock``
 * (as it would a threading.RLock), and the native data path of each
 * iSCSI connection takes the same lock around its engine calls without
 * ever holding the GIL. Waiting for it from Python releases the GIL.
 */

#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "native.h"

void native_lock_acquire(NativeLock *l)
{
    pthread_mutex_lock(&l->mutex);
}

void native_lock_release(NativeLock *l)
{
    pthread_mutex_unlock(&l->mutex);
}

static PyObject *Lock_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    NativeLock *l = (NativeLock *)type->tp_alloc(type, 0);
    if (!l)
        return NULL;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&l->mutex, &attr);
    pthread_mutexattr_destroy(&attr);
    return (PyObject *)l;
}

static void Lock_dealloc(NativeLock *l)
{
    pthread_mutex_destroy(&l->mutex);
    Py_TYPE(l)->tp_free((PyObject *)l);
}

static int take(NativeLock *l, int blocking, double timeout)
{
    int rc = pthread_mutex_trylock(&l->mutex);
    if (rc != EBUSY || !blocking)
        return rc == 0;
    if (timeout < 0) {
        Py_BEGIN_ALLOW_THREADS
        rc = pthread_mutex_lock(&l->mutex);
        Py_END_ALLOW_THREADS
        return rc == 0;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long long ns = until.tv_nsec + (long long)(timeout * 1e9);
    until.tv_sec += ns / 1000000000;
    until.tv_nsec = ns % 1000000000;
    Py_BEGIN_ALLOW_THREADS
    rc = pthread_mutex_timedlock(&l->mutex, &until);
    Py_END_ALLOW_THREADS
    return rc == 0;
}

static PyObject *Lock_acquire(NativeLock *l, PyObject *args, PyObject *kw)
{
    static char *names[] = {"blocking", "timeout", NULL};
    int blocking = 1;
    double timeout = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pd", names, &blocking,
                                     &timeout))
        return NULL;
    return PyBool_FromLong(take(l, blocking, timeout));
}

static PyObject *Lock_enter(NativeLock *l, PyObject *unused)
{
    take(l, 1, -1);
    Py_RETURN_TRUE;
}

static PyObject *Lock_release(NativeLock *l, PyObject *unused)
{
    if (pthread_mutex_unlock(&l->mutex)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "cannot release un-acquired lock");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *Lock_exit(NativeLock *l, PyObject *args)
{
    return Lock_release(l, NULL);
}

static PyMethodDef Lock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))Lock_acquire,
     METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1) -> whether it was taken."},
    {"release", (PyCFunction)Lock_release, METH_NOARGS, "Release once."},
    {"__enter__", (PyCFunction)Lock_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Lock_exit, METH_VARARGS, NULL},
    {NULL},
};

PyTypeObject NativeLockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "reference_array.native._native.Lock",
    .tp_basicsize = sizeof(NativeLock),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A reentrant lock native threads take without the GIL.",
    .tp_new = Lock_new,
    .tp_dealloc = (destructor)Lock_dealloc,
    .tp_methods = Lock_methods,
};
