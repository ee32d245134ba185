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

"""What every driver test case against a live reference array shares."""

from cinder.tests.unit import test
from cinder.volume import configuration
from cinder.volume import driver as volume_driver

from cinder_driver.tests import objects


class DriverTestCase(test.TestCase):

    def backend_options(self):
        """The backend section's options for this array (a dict)."""
        raise NotImplementedError()

    def make_driver(self, driver_kwargs=None, **overrides):
        """A driver set up and checked as cinder-volume would."""
        options = dict(self.backend_options(),
                       volume_backend_name=self.BACKEND,
                       flash_rest_retries=0)
        options.update(overrides)
        conf = configuration.Configuration(volume_driver.volume_opts,
                                           config_group=self.BACKEND)
        drv = self.DRIVER(configuration=conf, host='cinder@' + self.BACKEND,
                          **(driver_kwargs or {}))
        for key, value in options.items():
            self.override_config(key, value, group=self.BACKEND)
        drv.do_setup(self.ctx)
        drv.check_for_setup_error()
        return drv

    def requests(self):
        """'METHOD path' lines of the array's request log so far."""
        raise NotImplementedError()

    def volume_type(self, **specs):
        return objects.volume_type(self.ctx, **specs)

    def volume(self, size=1, vtype=None, **updates):
        return objects.volume(self.ctx, size, vtype, **updates)

    def create(self, size=1, vtype=None, **kwargs):
        vol = self.volume(size, vtype, **kwargs)
        vol.update(self.driver.create_volume(vol) or {})
        return vol

    def snapshot(self, vol):
        snap = objects.snapshot(self.ctx, vol)
        snap.update(self.driver.create_snapshot(snap) or {})
        return snap

    def count(self, fn, *args):
        """(result, requests the call sent to the array)."""
        before = len(self.requests())
        result = fn(*args)
        return result, self.requests()[before:]
