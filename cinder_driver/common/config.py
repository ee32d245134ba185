"""Reading a backend section the way every cinder-flash driver does."""

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def _explicit(configuration, name):
    """The value set in the backend section itself, or None if unset.

    Cinder's backend-group configuration defaults every grafted option to
    None inside the backend section, so None means "not set there".
    """
    backend_conf = getattr(configuration.conf, 'backend_conf', None)
    if backend_conf is None:
        return configuration.safe_get(name)
    try:
        return getattr(backend_conf, name)
    except Exception:
        return None


def tls_verify(configuration):
    """What to pass as requests' ``verify`` for this backend.

    Cinder's driver_ssl_cert_verify defaults to False; cinder-flash
    verifies unless the backend section turns it off explicitly.
    """
    ca_path = configuration.safe_get('driver_ssl_cert_path')
    explicit = _explicit(configuration, 'driver_ssl_cert_verify')
    if explicit is False:
        LOG.warning('TLS certificate verification of backend %s is '
                    'disabled by driver_ssl_cert_verify=False.',
                    configuration.config_group)
        return False
    return ca_path or True
