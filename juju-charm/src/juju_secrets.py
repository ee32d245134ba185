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
