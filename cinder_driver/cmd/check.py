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

"""The checks behind ``cinder-flash check``.

The backend section is read as cinder-volume reads it, the driver class
it names is built and set up exactly as the service would, and the
active adapter probes its array (``probe()``): a configuration the driver
refuses fails here too, with the driver's own message.
"""

from oslo_config import cfg
from oslo_utils import importutils

from cinder import exception as cinder_exception

from cinder_driver.common import exception
from cinder_driver.common import options as common_options
from cinder_driver.common import probe
from cinder_driver.k2 import options as k2_options
from cinder_driver.linstor import options as linstor_options

PASS, FAIL, WARN, SKIP = probe.PASS, probe.FAIL, probe.WARN, probe.SKIP

DRIVERS = (
    'cinder_driver.k2.driver.K2ISCSIDriver',
    'cinder_driver.k2.driver.K2FCDriver',
    'cinder_driver.linstor.driver.LinstorDrbdDriver',
    'cinder_driver.linstor.driver.LinstorISCSIDriver',
)


class Report(object):

    def __init__(self, backend):
        self.backend = backend
        self.results = []

    def add(self, verdict, name, detail):
        self.results.append((verdict, name, detail))
        return verdict

    @property
    def ok(self):
        return bool(self.results) and all(
            v in (PASS, WARN) for v, _n, _d in self.results)

    def lines(self):
        for verdict, name, detail in self.results:
            yield '%-4s  %-12s %s' % (verdict, name, detail)
        failed = sum(1 for v, _n, _d in self.results if v == FAIL)
        if self.ok:
            yield 'backend %s: ready' % self.backend
        else:
            yield 'backend %s: NOT ready (%d check(s) failed)' % (
                self.backend, failed)


def _load(config_files, backend):
    """The backend's configuration as cinder-volume builds it."""
    from cinder.common import config as cinder_config  # noqa: F401
    from cinder import objects
    objects.register_all()
    from cinder.volume import configuration
    from cinder.volume import driver as volume_driver
    from cinder.volume.drivers.san import san
    from cinder.volume import manager

    conf = cfg.CONF
    conf(['--config-file=%s' % f for f in config_files], project='cinder',
         default_config_files=[], default_config_dirs=[])
    if backend not in conf.list_all_sections():
        return None
    backend_conf = configuration.Configuration(volume_driver.volume_opts,
                                               config_group=backend)
    for opts in (manager.volume_backend_opts, san.san_opts,
                 common_options.rest_opts, common_options.lock_opts,
                 k2_options.k2_opts, linstor_options.linstor_opts):
        backend_conf.append_config_values(opts)
    return backend_conf


def _setup(conf, backend):
    """The driver the section names, set up as cinder-volume sets it up."""
    driver = importutils.import_class(conf.volume_driver)(
        configuration=conf, host='cinder-flash-check@%s' % backend)
    driver.do_setup(None)
    return driver


# A bad value is only read when an option is first used; the driver's
# own refusals are Cinder exceptions naming the option.
_REFUSED = (cfg.Error, ValueError, cinder_exception.CinderException)


def run(config_files, backend):
    report = Report(backend)
    try:
        conf = _load(config_files, backend)
    except (cfg.Error, OSError) as e:
        report.add(FAIL, 'config', 'cannot read configuration: %s' % e)
        return report
    if conf is None:
        report.add(FAIL, 'config', 'no section [%s] in %s' % (
            backend, ', '.join(config_files)))
        return report
    try:
        if conf.volume_driver not in DRIVERS:
            report.add(FAIL, 'config', 'volume_driver=%s is not a '
                       'cinder-flash driver (expected one of: %s)' % (
                           conf.volume_driver, ', '.join(sorted(DRIVERS))))
            return report
        driver = _setup(conf, backend)
        for result in driver.adapter.probe():
            report.add(*result)
    except exception.ArrayAPIError as e:
        report.add(FAIL, 'array', e.msg)
    except _REFUSED as e:
        report.add(FAIL, 'config', getattr(e, 'msg', None) or str(e))
    return report
