"""Cleanup after a failure that never hides the failure itself."""

import contextlib

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


@contextlib.contextmanager
def suppressed(what):
    """Run a cleanup step; if it fails, log it and carry on."""
    try:
        yield
    except Exception as e:
        LOG.warning('Cleanup failed while %s: %s', what, e)


@contextlib.contextmanager
def undo_on_error(what, undo):
    """Call ``undo()`` if the block fails, then re-raise the block's error.

    ``what`` names the undo for the log, e.g. "removing volume group 5".
    """
    try:
        yield
    except Exception:
        with suppressed(what):
            undo()
        raise
