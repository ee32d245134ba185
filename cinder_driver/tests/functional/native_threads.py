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

"""Run driver tests in Cinder's native-thread mode and report what ran.

``python -m cinder_driver.tests.functional.native_threads TEST...`` with
``OS_CINDER_DISABLE_EVENTLET_PATCHING=true``: Cinder's test package then
takes its threading backend and poisons ``eventlet.monkey_patch``. The
last line of the output is a JSON report: how the tests went, what of
the standard library eventlet patched, and which of our modules hold
anything of eventlet's.
"""

import json
import sys
import types
import unittest


def _from_eventlet(value):
    name = value.__name__ if isinstance(value, types.ModuleType) else \
        getattr(value, '__module__', None)
    return isinstance(name, str) and name.split('.')[0] == 'eventlet'


def report(result):
    import eventlet.patcher

    from cinder import monkey_patch
    ours = {name: module for name, module in list(sys.modules.items())
            if name.split('.')[0] == 'cinder_driver' and module is not None}
    return {
        'ran': result.testsRun,
        'failed': len(result.failures) + len(result.errors),
        'skipped': len(result.skipped),
        'cinder_patched': bool(monkey_patch.MONKEY_PATCHED),
        'patched': [m for m in ('os', 'select', 'socket', 'thread', 'time')
                    if eventlet.patcher.is_monkey_patched(m)],
        'ours_using_eventlet': sorted(
            name for name, module in ours.items()
            if any(_from_eventlet(v) for v in vars(module).values())),
        'our_modules': len(ours),
    }


def main(names):
    suite = unittest.defaultTestLoader.loadTestsFromNames(names)
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=2).run(
        suite)
    print(json.dumps(report(result)))
    return 0 if result.wasSuccessful() else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
