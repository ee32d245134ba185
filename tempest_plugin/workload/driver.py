# Copyright 2026 The cinder-flash Authors
#
#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""Load the data set and run the update benchmark.

The benchmark of the reference architecture: workers find a document by
``mNumber`` and update it from its ``state`` to another random state,
several processes with several threads each, for a number of iterations.
Reported: updated documents per second and operations (finds + updates)
per second, measured by the benchmark itself.

Everything talks to a database object with pymongo's interface
(``db[name].insert_many``, ``create_index``, ``find_one``,
``update_one``), so any
MongoDB-protocol server works.
"""

import concurrent.futures
import random
import threading
import time

from tempest_plugin.workload import dataset


def load(db, spec, batch=500, workers=4):
    """Insert every collection; returns (documents, seconds)."""
    started = time.monotonic()

    def one(index):
        coll = db[spec.collection_names()[index]]
        coll.create_index('mNumber', unique=True)
        count = 0
        for docs in dataset.batches(spec, index, batch):
            coll.insert_many(docs, ordered=False)
            count += len(docs)
        return count

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        total = sum(pool.map(one, range(spec.collections)))
    return total, time.monotonic() - started


class Result(object):

    def __init__(self):
        self.updated = 0
        self.operations = 0
        self.seconds = 0.0
        self.errors = 0
        self._lock = threading.Lock()

    def add(self, updated, operations, errors=0):
        with self._lock:
            self.updated += updated
            self.operations += operations
            self.errors += errors

    @property
    def updated_per_s(self):
        return self.updated / self.seconds if self.seconds else 0.0

    @property
    def operations_per_s(self):
        return self.operations / self.seconds if self.seconds else 0.0

    def as_dict(self):
        return {'updated': self.updated, 'operations': self.operations,
                'seconds': round(self.seconds, 3), 'errors': self.errors,
                'updated_per_s': round(self.updated_per_s, 1),
                'operations_per_s': round(self.operations_per_s, 1)}


def _worker(db, spec, ops, seed, result, indexes):
    rnd = random.Random(seed)
    names = spec.collection_names()
    updated = operations = errors = 0
    for _n in range(ops):
        index = rnd.choice(indexes)
        coll = db[names[index]]
        number = spec.m_number(index, rnd.randrange(spec.documents))
        try:
            # Find the document by mNumber, then move it from the state it
            # is in to another random one; the update matches on both, so
            # a concurrent change in between is not overwritten.
            doc = coll.find_one({'mNumber': number}, {'state': 1})
            operations += 1
            if doc is None:
                continue
            new_state = rnd.choice([s for s in dataset.STATES
                                    if s != doc['state']])
            reply = coll.update_one({'mNumber': number,
                                     'state': doc['state']},
                                    {'$set': {'state': new_state}})
            operations += 1
            updated += reply.modified_count
        except Exception:
            errors += 1
    result.add(updated, operations, errors)


def benchmark(db_factory, spec, processes=2, threads=4, iterations=10,
              ops_per_thread=100, seed=1, collections=None):
    """Run the update benchmark; returns a Result.

    ``db_factory()`` returns a database handle; each worker gets its own
    (processes are modelled as separate connection pools).
    ``collections``: indexes of the collections this server holds (all
    by default).
    """
    indexes = list(range(spec.collections)) if collections is None \
        else list(collections)
    if not indexes:
        raise ValueError('no collection to benchmark')
    result = Result()
    started = time.monotonic()
    for iteration in range(iterations):
        with concurrent.futures.ThreadPoolExecutor(
                processes * threads) as pool:
            futures = []
            for p in range(processes):
                db = db_factory()
                for t in range(threads):
                    futures.append(pool.submit(
                        _worker, db, spec, ops_per_thread,
                        (seed, iteration, p, t).__hash__(), result,
                        indexes))
            for future in futures:
                future.result()
    result.seconds = time.monotonic() - started
    return result
