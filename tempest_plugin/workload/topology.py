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

"""The three topologies of the reference architecture.

In a cloud each member is an instance booted from a volume of the type
under test; these functions return the shell commands (run over SSH as
root) that start ``mongod``/``mongos`` on a member and the ``mongosh``
scripts that form the replica sets and the sharded cluster. Locally
(FerretDB, which has neither replica sets nor sharding) the same layouts
are approximated: see ``local_layout``.
"""

import json
import shlex

STANDALONE = 'standalone'
REPLICA_SET = 'replica-set'
SHARDED = 'sharded'
TOPOLOGIES = (STANDALONE, REPLICA_SET, SHARDED)
DATA_DIR = '/var/lib/mongodb-bench'
PORT = 27017


def members(topology):
    """Roles of the instances a topology needs, in boot order."""
    if topology == STANDALONE:
        return ['mongod']
    if topology == REPLICA_SET:
        return ['rs0-0', 'rs0-1', 'rs0-2']
    if topology == SHARDED:
        return (['cfg-0', 'cfg-1', 'cfg-2'] +
                ['shard0-%d' % n for n in range(3)] +
                ['shard1-%d' % n for n in range(3)] + ['mongos'])
    raise ValueError('unknown topology %r; one of %s' % (
        topology, ', '.join(TOPOLOGIES)))


def _mongod(extra):
    return ('mkdir -p %(d)s && mongod --dbpath %(d)s --bind_ip_all '
            '--port %(p)d --fork --logpath %(d)s/mongod.log %(x)s' % {
                'd': DATA_DIR, 'p': PORT, 'x': extra}).strip()


def start_command(role, config_hosts=None):
    """The command that starts one member."""
    if role == 'mongod':
        return _mongod('')
    if role.startswith('rs0-'):
        return _mongod('--replSet rs0')
    if role.startswith('cfg-'):
        return _mongod('--configsvr --replSet cfg')
    if role.startswith('shard'):
        return _mongod('--shardsvr --replSet %s' % role.split('-')[0])
    if role == 'mongos':
        if not config_hosts:
            raise ValueError('mongos needs the config servers')
        return ('mongos --configdb cfg/%s --bind_ip_all --port %d --fork '
                '--logpath /var/log/mongos.log' % (
                    ','.join('%s:%d' % (h, PORT) for h in config_hosts),
                    PORT))
    raise ValueError('unknown member role %r' % role)


def initiate_script(name, hosts, config_server=False):
    """mongosh script that forms replica set ``name`` of ``hosts``."""
    config = {'_id': name, 'members': [
        {'_id': n, 'host': '%s:%d' % (h, PORT)} for n, h in enumerate(hosts)]}
    if config_server:
        config['configsvr'] = True
    return 'rs.initiate(%s)' % json.dumps(config, sort_keys=True)


def shard_script(shards, database, collections):
    """mongosh script (on mongos): add the shards, shard on ``mNumber``.

    Every collection of the data set is sharded on a hash of mNumber.
    """
    lines = ['sh.addShard("%s/%s")' % (name, ','.join(
        '%s:%d' % (h, PORT) for h in hosts)) for name, hosts in shards]
    lines.append('sh.enableSharding("%s")' % database)
    lines += ['sh.shardCollection("%s.%s", {mNumber: "hashed"})' % (
        database, c) for c in collections]
    return '\n'.join(lines)


def wait_primary_script(timeout_s=180):
    """mongosh script: wait until the replica set has elected a primary."""
    return ('var deadline = Date.now() + %d; '
            'while (!db.hello().primary) { '
            'if (Date.now() > deadline) { print("no primary"); quit(1); } '
            'sleep(1000); }' % (timeout_s * 1000))


def _mongosh(script):
    return 'mongosh --quiet --eval %s' % shlex.quote(script)


def formation(topology, ips, database, collections):
    """Every command that forms ``topology`` on booted members, in order.

    ``ips`` maps each role of ``members(topology)`` to its address.
    Returns [(role, shell command run on that member as its SSH user)]:
    the servers start, each replica set is initiated and has a primary
    before anything depends on it, and the config servers are up before
    mongos starts and adds the shards.
    """
    roles = members(topology)
    missing = [r for r in roles if r not in ips]
    if missing:
        raise ValueError('no address for %s' % ', '.join(missing))
    config_hosts = [ips[r] for r in roles if r.startswith('cfg-')]

    def start(role):
        return (role, 'sudo sh -c %s' % shlex.quote(
            start_command(role, config_hosts)))

    steps = [start(r) for r in roles if r != 'mongos']
    if topology == REPLICA_SET:
        steps += [
            ('rs0-0', _mongosh(initiate_script('rs0', [ips[r]
                                                       for r in roles]))),
            ('rs0-0', _mongosh(wait_primary_script()))]
    elif topology == SHARDED:
        steps += [
            ('cfg-0', _mongosh(initiate_script('cfg', config_hosts,
                                               config_server=True))),
            ('cfg-0', _mongosh(wait_primary_script()))]
        shards = []
        for shard in ('shard0', 'shard1'):
            hosts = [ips[r] for r in roles if r.startswith(shard + '-')]
            steps += [(shard + '-0', _mongosh(initiate_script(shard, hosts))),
                      (shard + '-0', _mongosh(wait_primary_script()))]
            shards.append((shard, hosts))
        steps += [start('mongos'),
                  ('mongos', _mongosh(shard_script(shards, database,
                                                   collections)))]
    return steps


def unavailable(topology, server, enabled):
    """Why ``topology`` cannot run here, or None if it can.

    ``server``: what the image runs (``mongod`` or ``ferretdb``);
    ``enabled``: the topologies the run is asked for.
    """
    members(topology)
    if topology not in enabled:
        return ('%s is not in [cinder_flash_mongodb] topologies' %
                topology)
    if topology != STANDALONE and server == 'ferretdb':
        return ('%s needs mongod: the image runs FerretDB ([cinder_flash_'
                'mongodb] server = ferretdb), which has neither replica '
                'sets nor sharding, and no package registry ships mongod; '
                'run it on a cloud whose image has MongoDB' % topology)
    return None


def entry(topology):
    """The member the benchmark runs on."""
    return 'mongos' if topology == SHARDED else members(topology)[0]


def client_uri(topology):
    """The benchmark's URI, from the entry member."""
    uri = 'mongodb://127.0.0.1:%d/' % PORT
    if topology == REPLICA_SET:
        uri += '?replicaSet=rs0'
    return uri


def local_layout(topology, collections):
    """How a local run approximates a topology with independent servers.

    Returns [(server index, [collections it loads])]. A replica set is
    three servers each loaded with the whole set (three copies, as three
    members hold); a sharded cluster is two servers splitting the
    collections between them.
    """
    if topology == STANDALONE:
        return [(0, list(collections))]
    if topology == REPLICA_SET:
        return [(n, list(collections)) for n in range(3)]
    if topology == SHARDED:
        return [(0, list(collections[0::2])), (1, list(collections[1::2]))]
    raise ValueError('unknown topology %r; one of %s' % (
        topology, ', '.join(TOPOLOGIES)))
