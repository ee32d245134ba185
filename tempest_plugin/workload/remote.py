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

"""Load and benchmark one MongoDB endpoint; print one JSON line.

``python3 -m tempest_plugin.workload.remote --uri mongodb://... `` runs on
the entry member of a topology in the cloud scenarios (with pymongo) and
in ``tox -e mongo-local``.
"""

import argparse
import json
import sys

from tempest_plugin.workload import dataset
from tempest_plugin.workload import driver


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('--uri', default='mongodb://127.0.0.1:27017/')
    parser.add_argument('--database', default='bench')
    parser.add_argument('--scale', type=float, default=1.0)
    parser.add_argument('--collections', type=int,
                        default=dataset.COLLECTIONS)
    parser.add_argument('--processes', type=int, default=4)
    parser.add_argument('--threads', type=int, default=8)
    parser.add_argument('--iterations', type=int, default=10)
    parser.add_argument('--ops-per-thread', type=int, default=100)
    parser.add_argument('--skip-load', action='store_true')
    parser.add_argument('--load-only', action='store_true',
                        help='load the data set, no benchmark (so that '
                             'the storage can be watched over the '
                             'benchmark alone)')
    args = parser.parse_args(argv)
    import pymongo
    spec = dataset.Spec(scale=args.scale, collections=args.collections)
    clients = []

    def db_factory():
        client = pymongo.MongoClient(args.uri)
        clients.append(client)
        return client[args.database]
    loaded, load_s = (0, 0.0) if args.skip_load else driver.load(
        db_factory(), spec)
    out = {'loaded': loaded, 'load_seconds': round(load_s, 2)}
    errors = 0
    if not args.load_only:
        result = driver.benchmark(db_factory, spec, args.processes,
                                  args.threads, args.iterations,
                                  args.ops_per_thread)
        out.update(result.as_dict())
        errors = result.errors
    for client in clients:
        client.close()
    print(json.dumps(out), flush=True)
    return 0 if errors == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
