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

"""Lifecycle of one reference array: state directory, services, stop."""

import json
import logging
import os
import secrets
import signal
import socket
import threading
import uuid

from reference_array.core import devices
from reference_array.core import engine as engine_mod
from reference_array.core import native_engine
from reference_array.core import store as store_mod
from reference_array.http import faults as faults_mod
from reference_array.http import server as http_server
from reference_array.k2 import api as k2_api
from reference_array.k2 import backend as k2_backend
from reference_array.k2 import exporter as k2_exporter
from reference_array.k2 import hosts as k2_hosts
from reference_array.k2 import models as k2_models
from reference_array.k2 import records as k2_records
from reference_array.k2.replication import objects as replication_objects
from reference_array.k2.replication import peer as replication_peer
from reference_array.k2.replication import sessions as replication_sessions
from reference_array.k2.replication import shipper as replication_shipper
from reference_array.k2 import schema as k2_schema
from reference_array.k2 import system as k2_system
from reference_array.k2 import volumes as k2_volumes
from reference_array.linstor import api as linstor_api
from reference_array.linstor import backend as linstor_backend
from reference_array.linstor import exporter as linstor_exporter
from reference_array.linstor import models as linstor_models
from reference_array.linstor import records as linstor_records
from reference_array import private
from reference_array.target import iscsi
from reference_array import tlsutil

LOG = logging.getLogger(__name__)
CONFIG = linstor_exporter.CONFIG
DEFAULT_CAPACITY_GIB = 1024
# Staged writes older than this are stored even without a flush.
STAGED_SECONDS = 2.0


def _load_or_create_config(data_dir, args):
    path = os.path.join(data_dir, CONFIG)
    stored = None
    if os.path.exists(path):
        with open(path) as f:
            config = json.load(f)
        stored = json.dumps(config, sort_keys=True)
    else:
        system_id = uuid.uuid4().hex[:12]
        config = {
            'system_id': system_id,
            'name': args.name or 'ref-%s' % system_id[:6],
            # No leading '-': the password may be passed on command lines.
            'users': {'admin': 'p' + secrets.token_urlsafe(18)},
            'capacity_gib': args.capacity_gib or DEFAULT_CAPACITY_GIB,
        }
    if args.user and args.password:
        config['users'][args.user] = args.password
    if args.capacity_gib:
        config['capacity_gib'] = args.capacity_gib
    if 'linstor_nodes' not in config:
        config['linstor_nodes'] = linstor_records.default_nodes(
            getattr(args, 'linstor_local_node', None) or
            socket.gethostname())
    if linstor_exporter.CHAP_KEY not in config:
        config[linstor_exporter.CHAP_KEY] = linstor_exporter.new_chap_key()
    if json.dumps(config, sort_keys=True) == stored:
        # Unchanged: nothing written, so a full disk never stops a start.
        return config
    tmp = path + '.tmp'
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w') as f:
        json.dump(config, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return config


def _system(config, host):
    """What the K2 system objects and the target say about this array."""
    system_id = config['system_id']
    return {
        'system_id': system_id,
        'name': config['name'],
        'iqn': 'iqn.2026-11.io.cinder-flash:array.%s' % system_id,
        'portals': [host],
        'fc_wwns': ['50:02:4f:40:%s:%s:01:%02x' % (
            system_id[0:2], system_id[2:4], n) for n in (0, 1)],
        'total_kib': config['capacity_gib'] * k2_system.KIB_PER_GIB,
    }


class Array(object):
    """One array: every service built here, each given what it uses."""

    def __init__(self, args):
        self.args = args
        self.data_dir = os.path.abspath(args.data_dir)
        private.make_private(self.data_dir)
        self.config = _load_or_create_config(self.data_dir, args)
        host = args.listen
        system = _system(self.config, host)
        db_path = os.path.join(self.data_dir, 'array.db')
        private.precreate(db_path)
        self.store = store_mod.Store(
            db_path, key_functions=dict(k2_models.KEY_FUNCTIONS,
                                        **linstor_models.KEY_FUNCTIONS),
            kept=k2_models.KEPT + linstor_models.KEPT,
            views=dict(k2_models.VIEW_FUNCTIONS,
                       **linstor_models.VIEW_FUNCTIONS))
        self.engine = native_engine.create(self.store)
        self.faults = faults_mod.Injector(seed=args.fault_seed)
        if args.faults:
            with open(args.faults) as f:
                self.faults.load(json.load(f))

        # K2 dialect, with replication.
        records = k2_records.Records(self.store)
        volume_source = not getattr(args, 'no_volume_source', False)
        volumes = k2_volumes.Volumes(records, self.engine,
                                     system['total_kib'], volume_source)
        sessions = replication_sessions.Sessions(records, self.engine)
        peers = replication_peer.Peers(records, self.data_dir,
                                       link_down=self.faults.link_down)
        self.shipper = replication_shipper.Shipper(
            records, self.engine, sessions, peers)
        self.faults.watch_link(self.shipper.link_changed)
        self.replication = replication_objects.ReplicationObjects(
            records, self.engine, sessions, peers, self.shipper,
            system['system_id'])
        backend = k2_backend.K2Backend(
            records, self.engine,
            k2_system.System(records, self.engine, system),
            [volumes, k2_hosts.Hosts(records), self.replication])
        self._seed_peer(args)
        cert = key = None
        if not args.no_tls:
            cert, key = tlsutil.ensure_certificate(self.data_dir,
                                                   hosts=(host, 'localhost'))
        self.cert = cert
        capabilities = dict(k2_schema.CAPABILITIES,
                            volume_source=volume_source)
        self.k2_server = http_server.JSONServer(
            k2_api.K2API(backend, dict(self.config['users']),
                         capabilities=capabilities,
                         peer_api=replication_peer.PeerAPI(
                             records, self.engine, volumes, sessions, peers,
                             self.shipper)),
            host, args.k2_port, cert, key,
            request_log=os.path.join(self.data_dir, 'k2-requests.log'),
            faults=self.faults,
            admin=getattr(args, 'fault_injection', False))

        # LINSTOR dialect.
        self.linstor = linstor_backend.LinstorBackend(
            self.store, self.engine, self.config['linstor_nodes'],
            system['total_kib'])
        lcert = lkey = None
        client_ca = getattr(args, 'linstor_client_ca', None)
        basic = getattr(args, 'linstor_auth', 'none') == 'basic'
        # Credentials travel only over TLS.
        if getattr(args, 'linstor_tls', False) or client_ca or basic:
            lcert, lkey = tlsutil.ensure_certificate(
                self.data_dir, hosts=(host, 'localhost'))
        linstor_users = None
        if basic:
            linstor_users = dict(self.config['users'])
        self.linstor_server = http_server.JSONServer(
            linstor_api.LinstorAPI(self.linstor, users=linstor_users), host,
            getattr(args, 'linstor_port', 0) or 0, lcert, lkey,
            request_log=os.path.join(self.data_dir, 'linstor-requests.log'),
            faults=self.faults, client_ca=client_ca)

        # The iSCSI target sees both dialects' exports; a LINSTOR node's
        # own initiator is asked about first.
        self.exports = devices.Exports(self.store, system['iqn'], [
            linstor_exporter.LinstorExporter(
                self.store, self.engine, self.linstor.records,
                self.config['system_id'],
                self.config[linstor_exporter.CHAP_KEY]),
            k2_exporter.K2Exporter(records, self.engine,
                                   self.config['system_id'])],
            engine=self.engine)
        self.target = iscsi.Target(self.exports, host, args.iscsi_port)
        self._stopped = threading.Event()
        self._stopping = threading.Lock()
        self._preparing = self._prepare_stop = None

    def _seed_peer(self, args):
        """``--peer``: pair with another array at start-up (once)."""
        if not getattr(args, 'peer', None):
            return
        url = args.peer.rstrip('/')
        host = url.split('://', 1)[-1]
        if self.replication.peer_by_host(host) is not None:
            return
        default_name = 'peer-' + host.replace(':', '-').replace('.', '-')
        body = {'name': args.peer_name or default_name,
                'mgmt_host': host, 'url': url,
                'username': args.peer_user,
                'password': args.peer_password}
        if args.peer_ca_cert:
            with open(args.peer_ca_cert) as f:
                body['ca_cert'] = f.read()
        # The peer may not be up yet: it is checked at first use.
        self.replication.add_peer(body, check=False)

    def endpoints(self):
        user = self.args.user if (self.args.user and self.args.password) \
            else 'admin'
        return {
            'k2': self.k2_server.url,
            'linstor': self.linstor_server.url,
            'iscsi_portal': '%s:%d' % (self.target.host, self.target.port),
            'iqn': self.exports.iqn,
            'user': user,
            'password': self.config['users'][user],
            'ca_cert': self.cert,
            'data_dir': self.data_dir,
            'pid': os.getpid(),
        }

    def start(self):
        self._prepare_stop = os.pipe()
        self._preparing = threading.Thread(
            target=self.engine.prepare_ahead, args=(self._prepare_stop[0],),
            name='prepare-ahead', daemon=True)
        try:
            self._preparing.start()
            self.target.start()
            self.k2_server.start()
            self.linstor_server.start()
            self.shipper.start()
        except BaseException:
            self._stop_preparing()
            raise

    def _stop_preparing(self):
        """The preparing thread told to end, waited for; its pipe closed."""
        thread, fds = self._preparing, self._prepare_stop
        self._preparing = self._prepare_stop = None
        if fds is None:
            return
        os.write(fds[1], b'.')
        if thread.is_alive():
            thread.join()
        for fd in fds:
            os.close(fd)

    def stop(self):
        with self._stopping:
            if self._stopped.is_set():
                return
            self._stopped.set()
        self._stop_preparing()
        self.shipper.stop()
        self.k2_server.stop()
        self.linstor_server.stop()
        self.target.stop()
        self.engine.flush()
        self.store.close()

    def serve_until_signalled(self):
        done = threading.Event()

        def _signal(signum, frame):
            done.set()

        signal.signal(signal.SIGTERM, _signal)
        signal.signal(signal.SIGINT, _signal)
        self.start()
        print(json.dumps(self.endpoints()), flush=True)
        full = False
        while not done.wait(1.0):
            try:
                self.engine.settle(older_than=STAGED_SECONDS)
                full = False
            except engine_mod.NoSpace as e:
                # The writes stay staged and are tried again; one line
                # when the disk fills, not one a second.
                if not full:
                    LOG.warning('staged writes wait for space: %s', e)
                full = True
            except Exception:
                # The writes stay staged and are tried again.
                LOG.exception('storing staged writes failed')
        self.stop()
