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

/* reference_array.native._native: the module, its checks at import and
 * the BLAKE3 digest. Its types: Store (store_type.c, store_methods.c),
 * DataPath (path.c) and Lock (lock.c). */

#include <string.h>

#include "path.h"

PyObject *native_db_error;
PyObject *native_connection_type;

static PyObject *digest(PyObject *mod, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"data", "simd", NULL};
    Py_buffer buf;
    int simd = 1;
    uint8_t out[32];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*|p", names, &buf,
                                     &simd))
        return NULL;
    int rc = native_blake3_with(buf.buf, (size_t)buf.len, out, simd);
    PyBuffer_Release(&buf);
    if (rc < 0) {
        PyErr_SetString(PyExc_ValueError, "at most 64 KiB");
        return NULL;
    }
    return PyBytes_FromStringAndSize((const char *)out, 32);
}

static PyMethodDef module_methods[] = {
    {"blake3", (PyCFunction)(void (*)(void))digest,
     METH_VARARGS | METH_KEYWORDS,
     "blake3(data, simd=True) -> the 32-byte BLAKE3 digest (data up to "
     "64 KiB); simd=False: the portable lanes."},
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native",
    "The array's native data path: the chunk store.", -1, module_methods,
};

/* The store reads the sqlite3 handle out of CPython's sqlite3.Connection
 * struct (store.h) and drives it with this library: both hold only for
 * the exact Python and SQLite it was built against. Anything else is
 * refused here (the array then runs its pure-Python data path). */
static int built_for_this(PyObject *sqlite)
{
    if (Py_Version != PY_VERSION_HEX) {
        PyErr_Format(PyExc_ImportError,
                     "built for Python %s (0x%08x), running 0x%08lx",
                     PY_VERSION, PY_VERSION_HEX, (unsigned long)Py_Version);
        return -1;
    }
    if (strcmp(sqlite3_libversion(), SQLITE_VERSION) ||
            sqlite3_libversion_number() != SQLITE_VERSION_NUMBER) {
        PyErr_Format(PyExc_ImportError,
                     "built for SQLite %s, loaded %s", SQLITE_VERSION,
                     sqlite3_libversion());
        return -1;
    }
    PyObject *theirs = PyObject_GetAttrString(sqlite, "sqlite_version");
    if (!theirs)
        return -1;
    const char *version = PyUnicode_AsUTF8(theirs);
    int same = version && !strcmp(version, SQLITE_VERSION);
    if (version && !same)
        PyErr_Format(PyExc_ImportError,
                     "built for SQLite %s, Python's sqlite3 uses %s",
                     SQLITE_VERSION, version);
    Py_DECREF(theirs);
    return same ? 0 : -1;
}

PyMODINIT_FUNC PyInit__native(void)
{
    PyObject *sqlite = PyImport_ImportModule("sqlite3");
    if (!sqlite)
        return NULL;
    if (built_for_this(sqlite) < 0) {
        Py_DECREF(sqlite);
        return NULL;
    }
    native_db_error = PyObject_GetAttrString(sqlite, "OperationalError");
    native_connection_type = PyObject_GetAttrString(sqlite, "Connection");
    Py_DECREF(sqlite);
    if (!native_db_error || !native_connection_type ||
            PyType_Ready(&NativeStoreType) < 0 ||
            PyType_Ready(&NativeLockType) < 0 ||
            PyType_Ready(&NativeDataPathType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    if (PyModule_AddObjectRef(m, "Store", (PyObject *)&NativeStoreType) < 0 ||
            PyModule_AddObjectRef(m, "Lock", (PyObject *)&NativeLockType) < 0 ||
            PyModule_AddObjectRef(m, "DataPath",
                                  (PyObject *)&NativeDataPathType) < 0 ||
            PyModule_AddIntConstant(m, "MAX_TRANSFER", MAX_TRANSFER) < 0 ||
            PyModule_AddIntConstant(m, "PATCH_BOUND", PATCH_BOUND) < 0 ||
            PyModule_AddIntConstant(m, "RECORD_HEADER", RECORD_HEADER) < 0 ||
            PyModule_AddStringConstant(m, "BLAKE3_SIMD",
                                       native_blake3_simd()) < 0 ||
            PyModule_AddStringConstant(m, "SQLITE_VERSION",
                                       sqlite3_libversion()) < 0 ||
            PyModule_AddStringConstant(m, "PYTHON_VERSION", PY_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
