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
