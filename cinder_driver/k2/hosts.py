"""The array hosts of connectors, and the CHAP credentials they log in with.

One registry per array (per adapter): host ids are cached per process,
keyed on the connector's initiators, and belong to that array only.
"""

import base64
import hashlib
import hmac
import threading

from cinder import exception
from cinder.i18n import _
from cinder_driver.common import cleanup
from cinder_driver.common import exception as flash_exception
from cinder_driver.common import naming

HOST_NAME_LIMIT = 32


def chap_credentials(configuration, host_name):
    """(username, secret) a host must log in with, or None.

    Without chap_username/chap_password each host gets its own secret,
    derived from san_password: every cinder-volume service of the backend
    computes the same one and none is stored (rotating san_password
    rotates every host's secret at its next attach).
    """
    conf = configuration
    if not conf.safe_get('use_chap_auth'):
        return None
    if conf.safe_get('chap_username') and conf.safe_get('chap_password'):
        return conf.chap_username, conf.chap_password
    digest = hmac.new(conf.san_password.encode(),
                      ('chap:' + host_name).encode(),
                      hashlib.sha256).digest()
    return host_name, base64.b32encode(digest).decode()[:16].lower()


class HostRegistry(object):
    """Finds or creates the host of a connector's initiators.

    :param client: the K2Client of the array.
    :param kind: initiator kind, 'iscsi' or 'fc'.
    :param chap: callable(host name) -> (user, secret) or None.
    """

    def __init__(self, client, kind, chap):
        self.client = client
        self.kind = kind
        self.chap = chap
        self._hosts = {}
        self._lock = threading.Lock()

    @staticmethod
    def name(connector):
        return naming.host_name(connector, HOST_NAME_LIMIT)

    def host_id(self, connector, initiators, create):
        """The host id, created (``create``) or None if the array has none.
        """
        key = tuple(initiators)
        with self._lock:
            cached = self._hosts.get(key)
        if cached is not None:
            return cached
        if create:
            host_id = self._create(connector, initiators)
        else:
            host_id = self.client.host_of_initiators(self.kind, initiators)
            if host_id is None:
                return None
        with self._lock:
            self._hosts[key] = host_id
        return host_id

    def forget(self, initiators):
        with self._lock:
            self._hosts.pop(tuple(initiators), None)

    def _create(self, connector, initiators):
        """The connector's host, created if the array has none.

        Creating first costs no lookup for a new host (host, initiators)
        and one for a known one (its name is taken: find it by initiator),
        so a first attach takes at most three calls either way.
        """
        name = self.name(connector)
        chap = self.chap(name)
        profile = None
        if chap is not None:
            profile = self.client.ensure_auth_profile(name, *chap)
        try:
            host_id = self.client.create_host(name, profile)
        except flash_exception.ObjectExists:
            return self._known(name, profile, initiators)
        for initiator in initiators:
            try:
                self.client.add_initiator(self.kind, host_id, initiator)
            except flash_exception.ObjectExists:
                # The initiator belongs to a host of another name: that
                # one is the host, the new one goes.
                found = self.client.host_of_initiators(self.kind,
                                                       initiators)
                if found is None or found == host_id:
                    raise
                with cleanup.suppressed('removing host %s' % host_id):
                    self.client.delete_host(host_id)
                return found
        return host_id

    def _known(self, name, profile, initiators):
        host_id = self.client.host_of_initiators(self.kind, initiators)
        if host_id is None:
            # A host of that name without these initiators (a reinstalled
            # node, say): they are added to it.
            host_id = self.client.host_by_name(name)
            if host_id is None:
                raise exception.VolumeBackendAPIException(data=_(
                    'the array refused host %s and has none of that name')
                    % name)
            for initiator in initiators:
                self.client.add_initiator(self.kind, host_id, initiator)
        if profile is not None:
            # A host made before CHAP was turned on gets its profile.
            self.client.set_host_auth_profile(host_id, profile)
        return host_id
