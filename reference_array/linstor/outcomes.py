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

"""What a LINSTOR backend call did, or why it was refused, in the
backend's words; ``api`` turns both into ApiCallRc entries.

A ``Report`` says what happened to which object (``event``: created,
modified, deleted, not_found, already_deployed, deprecated). A refusal is
a ``core.errors`` exception whose ``subject`` is the LINSTOR object kind
(``rsc_dfn``, ``rsc``, ``snapshot`` ...) and whose ``reason`` names the
cause the api maps to LINSTOR's code.
"""

import collections

from reference_array.core import errors

Report = collections.namedtuple('Report', 'level event message obj op refs')
# reason -> the core error it is
REASONS = {
    'prop': errors.Invalid, 'layer_stack': errors.Invalid,
    'place_count': errors.Invalid, 'volume_size': errors.Invalid,
    'rsc_name': errors.Invalid, 'snapshot_name': errors.Invalid,
    'request': errors.Invalid, 'in_use': errors.Conflict,
    'no_space': errors.Conflict, 'no_nodes': errors.Conflict,
    'no_snapshots': errors.NotAllowed, 'no_pool': errors.NotFound,
    'exists': errors.Conflict, 'vlm_nr': errors.Invalid,
    'minor_nr': errors.Invalid, 'out_of_range': errors.Invalid,
    'no_clone': errors.NotAllowed,
}


def report(level, event, message, obj=None, op=None, refs=None):
    """A report; ``level``: 'ok', 'info', 'warn' or 'error'.

    'error' is a step that failed after others took effect: the call
    answers 500 with all of them.
    """
    return Report(level, event, message, obj, op, dict(refs or {}))


def resource_created(rd_name, node):
    return report('ok', 'created', "Resource '%s' created on node '%s'." % (
        rd_name, node), obj='rsc', op='create',
        refs={'RscDfn': rd_name, 'Node': node})


def not_found(obj, what, op=None, refs=None, message=None):
    return errors.NotFound(message or '%s not found.' % what, subject=obj,
                           op=op, refs=refs)


def unknown_node(name):
    """A node named by a filter that LINSTOR loads by name
    (``CtrlApiDataLoader.loadNode``) and does not have: not found, with
    no object bits in the code, a cause and a correction.
    """
    return errors.NotFound(
        "Node '%s' not found." % name, subject='node', bare=True,
        cause="The specified node '%s' could not be found in the "
        "database" % name,
        correction="Create a node with the name '%s' first." % name)


def exists(obj, what, refs=None):
    return errors.Conflict('%s already exists.' % what, subject=obj,
                           reason='exists', op='create', refs=refs)


def invalid(message, reason='request', obj=None, op=None):
    return errors.Invalid(message, subject=obj, reason=reason, op=op)


def refused(reason, message, obj=None, op=None, refs=None, **more):
    """``more``: what else the wire entry says (``cause``, ``details``)."""
    return REASONS[reason](message, subject=obj, reason=reason, op=op,
                           refs=refs, **more)
