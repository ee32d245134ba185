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

"""cinder-flash backends in Canonical's cinder-volume snap.

The base snap reads ``<family>.<backend>.*`` keys into a configuration
model and renders one ``cinder.conf.d/<backend>.conf`` section per
backend. This module adds the family ``flash``: every key of a
``flash.<backend>`` namespace becomes the option of the same name (the
charm validated them), ``volume-driver`` must name a cinder-flash driver,
and the backends may share one Cinder cluster (the drivers are
active/active).
"""

import logging

import pydantic
from pydantic import alias_generators

from cinder_volume import cinder_volume
from cinder_volume import configuration
from cinder_volume import context
from cinder_volume import error

FAMILY = 'flash'
DRIVER_PATTERN = r'^cinder_driver\.(k2|linstor)\.driver\.[A-Za-z0-9]+Driver$'


class FlashConfiguration(configuration.BaseBackendConfiguration):
    """One cinder-flash backend; unknown keys pass through to cinder.conf."""

    model_config = pydantic.ConfigDict(
        extra='allow',
        alias_generator=pydantic.AliasGenerator(
            validation_alias=configuration.to_kebab,
            serialization_alias=alias_generators.to_snake))

    volume_driver: str = pydantic.Field(pattern=DRIVER_PATTERN)


class FlashBackendContext(context.BaseBackendContext):

    def __init__(self, backend_name, backend_config):
        super().__init__(backend_name, backend_config)
        self.supports_cluster = True


class Configuration(configuration.Configuration):
    """The base snap's backend families plus ``flash``."""

    flash: dict[str, FlashConfiguration] = {}


class FlashCinderVolume(cinder_volume.GenericCinderVolume):

    def config_type(self):
        return Configuration

    def backend_contexts(self, snap):
        """Every configured backend's context, ``flash`` ones included.

        The base class finds a family's context class in its own module
        only, so the discovery is done here, with ours for ``flash``.
        """
        if self._backend_contexts is None:
            config = self.get_config(snap)
            found = {}
            for family in type(config).model_fields:
                backends = getattr(config, family)
                if not isinstance(backends, dict):
                    continue
                if family == FAMILY:
                    klass = FlashBackendContext
                else:
                    klass = getattr(context, '%sBackendContext' %
                                    family.title(), None)
                if klass is None:
                    logging.warning('no context for backend family %s',
                                    family)
                    continue
                for name, backend in backends.items():
                    if name in found:
                        raise error.CinderError(
                            'backend %s is configured twice' % name)
                    found[name] = klass(name, backend.model_dump())
            self._backend_contexts = context.CinderBackendContexts(
                enabled_backends=list(found), contexts=found)
        return self._backend_contexts
