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

"""The data set: collections of ~16.5 KB JSON documents.

As in the reference architecture: one database, 50 collections of 15,000
documents each (about 12 GB), every document with an indexed ``mNumber``
and a ``state`` among 57 values, the rest random fields. ``scale`` shrinks
the number of documents per collection; generation is deterministic per
seed, so two loads of the same scale hold the same bytes.
"""

import json
import random
import string

COLLECTIONS = 50
DOCUMENTS_PER_COLLECTION = 15000
DOCUMENT_BYTES = 16896          # ~16.5 KB
STATES = tuple('STATE_%02d' % n for n in range(57))
# Text fields are random words of a fixed vocabulary, as application data
# is: they compress, and documents share no long runs (little for
# deduplication to find inside one copy of the set).
_LETTERS = string.ascii_lowercase


def _vocabulary(size=4096, seed=42):
    rnd = random.Random(seed)
    return [''.join(rnd.choice(_LETTERS) for _n in range(rnd.randrange(3, 11)))
            for _w in range(size)]


_WORDS = _vocabulary()


def _text(rnd, length):
    words = rnd.choices(_WORDS, k=length // 6 + 2)
    return ' '.join(words)[:length]


class Spec(object):

    def __init__(self, scale=1.0, collections=COLLECTIONS,
                 documents=DOCUMENTS_PER_COLLECTION,
                 document_bytes=DOCUMENT_BYTES, seed=2017):
        if not 0 < scale <= 1.0:
            raise ValueError('scale must be in (0, 1], not %r' % (scale,))
        if collections < 1 or documents < 1 or document_bytes < 256:
            raise ValueError('collections, documents and document_bytes '
                             'must be positive (document_bytes >= 256)')
        self.collections = collections
        self.documents = max(1, int(documents * scale))
        self.document_bytes = document_bytes
        self.seed = seed

    @property
    def total_documents(self):
        return self.collections * self.documents

    @property
    def approx_bytes(self):
        return self.total_documents * self.document_bytes

    def collection_names(self):
        return ['collection_%02d' % n for n in range(self.collections)]

    def m_number(self, collection_index, n):
        """The unique mNumber of document ``n`` of a collection."""
        return collection_index * 10 ** 7 + n


def document(spec, collection_index, n):
    """Document ``n`` of collection ``collection_index``."""
    rnd = random.Random((spec.seed, collection_index, n).__hash__())
    doc = {'mNumber': spec.m_number(collection_index, n),
           'state': rnd.choice(STATES),
           'customer': {'id': rnd.randrange(10 ** 9),
                        'name': _text(rnd, 16)},
           'created': 1483228800 + rnd.randrange(10 ** 8)}
    # Fill to the document size with random fields of 64-512 characters.
    budget = spec.document_bytes - 200
    field = 0
    while budget > 0:
        length = min(budget, rnd.randrange(64, 513))
        doc['f%03d' % field] = _text(rnd, length)
        budget -= length + 10
        field += 1
    return doc


def batches(spec, collection_index, size=500):
    """The documents of one collection, ``size`` at a time."""
    batch = []
    for n in range(spec.documents):
        batch.append(document(spec, collection_index, n))
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def write_file(path, nbytes):
    """JSON lines of the data set until the file holds ``nbytes``."""
    spec = Spec(scale=1.0)
    written = n = 0
    with open(path, 'w') as f:
        while written < nbytes:
            index, number = n % spec.collections, n // spec.collections
            line = json.dumps(document(spec, index, number)) + '\n'
            f.write(line)
            written += len(line)
            n += 1
    with open(path, 'r+') as f:
        f.truncate(nbytes)
    return n
