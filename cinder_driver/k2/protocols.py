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

"""The K2 adapter per transport: initiators, targets and connection info.

Everything else is the same for every transport and stays in
:class:`cinder_driver.k2.adapter.K2Adapter`. A new transport (NVMe/TCP,
say) is one more subclass here and one more driver class.
"""

import base64
import hashlib
import hmac

from cinder.common import constants
from cinder import exception
from cinder.i18n import _

from cinder_driver.common import exception as flash_exception
from cinder_driver.common import naming
from cinder_driver.common import probe
from cinder_driver.k2 import adapter
from cinder_driver.k2 import hostcopy
from cinder_driver.k2 import hosts

ISCSI_PORT = 3260


def _colons(wwn):
    wwn = wwn.replace(':', '')
    return ':'.join(wwn[i:i + 2] for i in range(0, len(wwn), 2))


class K2ISCSIAdapter(adapter.K2Adapter):

    PROTOCOL = constants.ISCSI
    INITIATOR_KIND = 'iscsi'

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.target_iqn = None
        self.portals = []
        self.host_copy = hostcopy.HostCopier(self)

    def load_targets(self, state):
        self.target_iqn = state.iscsi_target
        if not self.target_iqn:
            raise self._no_target('/system/state',
                                  _('the array reports no iSCSI target'))
        self.portals = self.portals_of(self.client.iscsi_addresses())

    def portals_of(self, found):
        """``ip:port`` portals of k2_iscsi_portals, or all ``found``."""
        portals = []
        for item in self.configuration.k2_iscsi_portals or found:
            address, _sep, port = item.partition(':') \
                if item.count(':') == 1 else (item, '', '')
            if address not in found:
                raise flash_exception.InvalidBackendConfig(
                    option='k2_iscsi_portals', value=item,
                    reason='not an iSCSI address of the array (it has %s)'
                    % ', '.join(found))
            portals.append('%s:%s' % (address, port or ISCSI_PORT))
        if not portals:
            raise self._no_target('/system/net_ips',
                                  _('the array has no iSCSI portal'))
        return portals

    def probe_ports(self, results, state):
        if not state.iscsi_target:
            return results.add(probe.FAIL, 'ports', 'the array reports no '
                               'iSCSI target IQN')
        try:
            portals = self.portals_of(self.client.iscsi_addresses())
        except flash_exception.InvalidBackendConfig as e:
            return results.add(probe.FAIL, 'ports', e.msg)
        except flash_exception.ArrayAPIError:
            return results.add(probe.FAIL, 'ports', 'the array has no iSCSI '
                               'data address')
        return results.add(probe.PASS, 'ports', 'iSCSI target %s on %s' % (
            state.iscsi_target, ', '.join(portals)))

    def initiators(self, connector):
        initiator = connector.get('initiator')
        if not initiator:
            raise exception.InvalidConnectorException(missing='initiator')
        return [initiator]

    def chap(self, host_name):
        """(username, secret) a host must log in with, or None.

        Without chap_username/chap_password each host gets its own
        secret, derived from san_password: every cinder-volume service of
        the backend computes the same one and none is stored (rotating
        san_password rotates every host's secret at its next attach).
        """
        conf = self.configuration
        if not conf.safe_get('use_chap_auth'):
            return None
        if conf.safe_get('chap_username') and conf.safe_get('chap_password'):
            return conf.chap_username, conf.chap_password
        digest = hmac.new(conf.san_password.encode(),
                          ('chap:' + host_name).encode(),
                          hashlib.sha256).digest()
        return host_name, base64.b32encode(digest).decode()[:16].lower()

    def connection_info(self, volume, connector, lun):
        count = len(self.portals)
        data = {'target_discovered': False,
                'target_iqn': self.target_iqn,
                'target_portal': self.portals[0],
                'target_lun': lun,
                'target_iqns': [self.target_iqn] * count,
                'target_portals': list(self.portals),
                'target_luns': [lun] * count,
                'volume_id': volume.id,
                'discard': True}
        chap = self.chap(naming.host_name(connector,
                                          hosts.HOST_NAME_LIMIT))
        if chap is not None:
            data.update(auth_method='CHAP', auth_username=chap[0],
                        auth_password=chap[1])
        return {'driver_volume_type': 'iscsi', 'data': data}


class K2FCAdapter(adapter.K2Adapter):

    PROTOCOL = constants.FC
    INITIATOR_KIND = 'fc'

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fc_targets = []

    def load_targets(self, state):
        self.fc_targets = self.client.fc_target_wwns()
        if not self.fc_targets:
            raise self._no_target('/system/fc_ports',
                                  _('the array has no FC target port'))

    def probe_ports(self, results, state):
        ports = self.client.fc_target_wwns()
        if not ports:
            return results.add(probe.FAIL, 'ports', 'the array reports no FC '
                               'target port')
        return results.add(probe.PASS, 'ports', 'FC target ports %s' %
                           ', '.join(_colons(p) for p in ports))

    def initiators(self, connector):
        wwpns = [w.lower() for w in connector.get('wwpns') or []]
        if not wwpns:
            raise exception.InvalidConnectorException(missing='wwpns')
        return [_colons(w) for w in wwpns]

    def _zone(self, connector):
        targets = list(self.fc_targets)
        return {'target_wwn': targets,
                'initiator_target_map': {
                    w.lower(): list(targets)
                    for w in connector.get('wwpns') or []}}

    def connection_info(self, volume, connector, lun):
        data = {'target_discovered': True, 'target_lun': lun,
                'volume_id': volume.id, 'discard': True}
        data.update(self._zone(connector))
        return {'driver_volume_type': 'fibre_channel', 'data': data}

    def detached(self, connector, host_id):
        """Zone information once the host has no mapping left, else none.
        """
        info = {'driver_volume_type': 'fibre_channel', 'data': {}}
        if not self.client.mappings_of(host_id=host_id):
            info['data'] = self._zone(connector)
        return info
