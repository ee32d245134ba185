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

"""The Juju user secrets the charms' options of type ``secret`` name.

Shared by both charms: a missing, ungranted or unreadable secret is a
``backend.ConfigError`` whose message becomes the unit's status.
"""

import ops

import backend


def content(charm, option):
    """The secret's key/value content, or None if the option is empty."""
    uri = charm.config.get(option)
    if not uri:
        return None
    try:
        return charm.model.get_secret(id=uri).get_content(refresh=True)
    except ops.SecretNotFoundError:
        raise backend.ConfigError('%s: secret %s not found or not granted '
                                  'to %s' % (option, uri, charm.app.name))
    except ops.ModelError:
        raise backend.ConfigError('%s: secret %s cannot be read; grant it '
                                  'to %s' % (option, uri, charm.app.name))
