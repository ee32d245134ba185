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

"""The compute bed's provider network, made and removed by the bed.

Neutron 29 has no linuxbridge driver and this kernel has no Open vSwitch
datapath; ML2's macvtap mechanism driver needs only a "physical"
interface. That interface is one end of a veth pair whose other end sits
in a network namespace of the bed's own, so guest traffic leaves through
it into nothing. The host reaches the guests (Tempest's SSH) through a
macvlan in bridge mode on the same interface, beside the guests'
macvtaps. Guests take their address from the config drive: no DHCP, no
metadata service.
"""

import ipaddress
import subprocess

NETNS = 'cfbed-physnet'
PHYS = 'cfphys0'         # the interface Neutron's macvtap agent maps
PEER = 'cfphys0p'        # its other end, inside NETNS
HOST_IF = 'cfhost0'      # the host's address on the segment
PHYSNET = 'physnet1'
CIDR = ipaddress.ip_network('10.217.0.0/24')
HOST_IP = str(CIDR.network_address + 1)
POOL = (str(CIDR.network_address + 20), str(CIDR.network_address + 250))


class NetworkError(Exception):
    pass


def _ip(*args, check=True):
    result = subprocess.run(('ip',) + args, capture_output=True, text=True,
                            timeout=30)
    if check and result.returncode != 0:
        raise NetworkError('ip %s failed: %s' % (' '.join(args),
                                                 result.stderr.strip()))
    return result


def _exists(name):
    return _ip('link', 'show', name, check=False).returncode == 0


def _netns_exists():
    return NETNS in _ip('netns', 'list').stdout.split()


def leftovers():
    """What of this network exists now (names)."""
    found = [name for name in (PHYS, HOST_IF) if _exists(name)]
    if _netns_exists():
        found.append('netns ' + NETNS)
    return found


def up():
    left = leftovers()
    if left:
        raise NetworkError('%s already exist(s): another compute bed is up, '
                           'or one was not brought down' % ', '.join(left))
    try:
        _ip('netns', 'add', NETNS)
        _ip('-n', NETNS, 'link', 'set', 'lo', 'up')
        _ip('link', 'add', PHYS, 'type', 'veth', 'peer', 'name', PEER,
            'netns', NETNS)
        _ip('-n', NETNS, 'link', 'set', PEER, 'up')
        _ip('link', 'set', PHYS, 'up')
        _ip('link', 'add', HOST_IF, 'link', PHYS, 'type', 'macvlan', 'mode',
            'bridge')
        _ip('addr', 'add', '%s/%d' % (HOST_IP, CIDR.prefixlen), 'dev',
            HOST_IF)
        _ip('link', 'set', HOST_IF, 'up')
    except BaseException:
        down()
        raise


def down():
    """Remove everything up() made (what exists of it); raise if any stays.

    Deleting the veth also removes the macvlan and any macvtap left on it.
    """
    for name in (HOST_IF, PHYS):
        if _exists(name):
            _ip('link', 'del', name, check=False)
    if _netns_exists():
        _ip('netns', 'del', NETNS, check=False)
    left = leftovers()
    if left:
        raise NetworkError('could not remove %s' % ', '.join(left))
