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

"""What Cinder's scheduler and volume manager see of a driver's stats.

The stats go through the scheduler's own HostManager (as a volume
service's report does) and come back from ``get_pools``, the call behind
``cinder get-pools --detail``; the volume manager's view is the driver's
``capabilities`` after ``init_capabilities``.
"""

from cinder import objects
from cinder.scheduler import host_manager
from oslo_utils import timeutils


def pools(ctx, host, stats):
    """{pool name: capabilities} as get_pools reports them."""
    service = objects.Service(ctx, host=host, binary='cinder-volume',
                              topic='cinder-volume')
    service.create()
    try:
        manager = host_manager.HostManager()
        manager.update_service_capabilities(
            'volume', host, dict(stats), None, timeutils.utcnow())
        return {p['name']: p['capabilities']
                for p in manager.get_pools(ctx)}
    finally:
        service.destroy()


def backend(driver):
    """The top level of the stats, as the volume manager keeps it."""
    driver.init_capabilities()
    return driver.capabilities
