"""Unexpected array replies become clear Cinder errors, never tracebacks.

The clients check the shape of every reply they parse, but an array can
still answer something no check foresaw (a field of the wrong type deep in
an object). ``Guarded`` wraps an adapter so that such a reply surfaces to
Cinder as a ``VolumeBackendAPIException`` naming the operation; the
traceback goes to the debug log for whoever investigates.
"""

import functools

from cinder import exception
from cinder.i18n import _
from oslo_log import log as logging

LOG = logging.getLogger(__name__)
UNEXPECTED = (KeyError, TypeError, ValueError, IndexError, AttributeError)


class Guarded(object):

    def __init__(self, target, backend):
        object.__setattr__(self, '_target', target)
        object.__setattr__(self, '_backend', backend)

    def __getattr__(self, name):
        value = getattr(self._target, name)
        if not callable(value) or name.startswith('_'):
            return value

        @functools.wraps(value)
        def guarded(*args, **kwargs):
            try:
                return value(*args, **kwargs)
            except UNEXPECTED as e:
                LOG.debug('%s: %s failed on an unexpected reply',
                          self._backend, name, exc_info=True)
                raise exception.VolumeBackendAPIException(data=_(
                    '%(backend)s: %(op)s: the array answered something '
                    'the driver cannot use (%(kind)s: %(err)s)') % {
                        'backend': self._backend, 'op': name,
                        'kind': type(e).__name__, 'err': e})
        return guarded

    def __setattr__(self, name, value):
        setattr(self._target, name, value)
