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

"""Start an OpenStack service the way the compute bed needs it.

``python -m tools.gate.compute.launch [OPTIONS] MODULE:FUNCTION [ARGS...]``
imports the service's module first (it may monkey-patch at import), then
applies the options, then runs the service with ARGS as its command line:

``--iscsi-connector``
    install ``brick.UserspaceISCSIConnector`` in os-brick (nova-compute,
    cinder-volume);
``--privsep-in-process``
    run oslo.privsep's privileged functions in the service's own process.
    The bed runs as root, so nothing is lost; and a service that starts
    its privileged helper and then forks its workers (Neutron's agents
    under oslo.service's threading backend) leaves the children sharing
    the parent's helper connection, whose replies the parent then reads:
    the children wait forever.
"""

import importlib
import sys

OPTIONS = ('--iscsi-connector', '--privsep-in-process')


def privsep_in_process():
    """Every privsep context, present and future, runs in this process."""
    from oslo_privsep import priv_context
    original = priv_context.PrivContext.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.set_client_mode(False)

    priv_context.PrivContext.__init__ = init


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    options = set()
    while argv and argv[0] in OPTIONS:
        options.add(argv.pop(0))
    if not argv or ':' not in argv[0]:
        sys.exit('usage: launch [%s] MODULE:FUNCTION [ARGS...]' %
                 '] ['.join(OPTIONS))
    module_name, function = argv[0].split(':', 1)
    if '--privsep-in-process' in options:
        # Before the service's modules make their contexts.
        privsep_in_process()
    module = importlib.import_module(module_name)
    if '--iscsi-connector' in options:
        from tools.gate.compute import brick
        brick.install()
    sys.argv = [module_name.rsplit('.', 1)[-1]] + argv[1:]
    return getattr(module, function)()


if __name__ == '__main__':
    sys.exit(main())
