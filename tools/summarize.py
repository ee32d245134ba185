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

"""Count test results from the subunit streams and check files of a run.

Prints one line per suite, then the id of every failed test with the
last line of its traceback (a run's log may be all a reader has), and
ends with ``N passed, N failed, N skipped``. Exits non-zero when anything
failed or a suite produced no result.
"""

import collections
import os
import sys

import subunit
import testtools


# Of a failure's reason, at most this many characters on its line.
REASON_CHARS = 300


def reason(traceback):
    """The last non-empty line of a traceback, shortened."""
    lines = [line.strip() for line in traceback.splitlines() if line.strip()]
    if not lines:
        return ''
    last = lines[-1]
    return last if len(last) <= REASON_CHARS else \
        last[:REASON_CHARS - 3] + '...'


def count(path, failed):
    """Totals of one stream; (id, reason) of its failed tests go to
    ``failed``.
    """
    totals = collections.Counter()
    ids = []
    tracebacks = collections.defaultdict(bytes)

    class Collector(testtools.StreamResult):

        def status(self, test_id=None, test_status=None, file_name=None,
                   file_bytes=None, **kwargs):
            if file_name == 'traceback' and file_bytes:
                tracebacks[test_id] += file_bytes
            if test_status in ('success', 'xfail'):
                totals['passed'] += 1
            elif test_status in ('fail', 'uxsuccess'):
                totals['failed'] += 1
                ids.append(test_id)
            elif test_status == 'skip':
                totals['skipped'] += 1

    with open(path, 'rb') as stream:
        case = subunit.ByteStreamToStreamResult(stream,
                                                non_subunit_name='stdout')
        result = Collector()
        result.startTestRun()
        case.run(result)
        result.stopTestRun()
    failed.extend((test, reason(tracebacks[test].decode('utf-8', 'replace')))
                  for test in ids)
    return totals


def main(results_dir):
    grand = collections.Counter()
    failed = []
    ok = True
    for name in sorted(os.listdir(results_dir)):
        path = os.path.join(results_dir, name)
        suite, ext = os.path.splitext(name)
        if ext == '.subunit':
            suite_failed = []
            totals = count(path, suite_failed)
            failed.extend('%s: %s%s' % (suite, test, ': ' + why if why else '')
                          for test, why in suite_failed)
            if not sum(totals.values()):
                print('%s: no test ran' % suite)
                ok = False
        elif ext == '.check':
            with open(path) as f:
                passed = f.read().strip() == 'pass'
            totals = collections.Counter(
                {'passed' if passed else 'failed': 1})
            if not passed:
                failed.append('%s: the check failed' % suite)
        else:
            continue
        print('%-20s %d passed, %d failed, %d skipped' % (
            suite + ':', totals['passed'], totals['failed'],
            totals['skipped']))
        grand.update(totals)
    for line in failed:
        print('FAILED %s' % line)
    print('%d passed, %d failed, %d skipped' % (
        grand['passed'], grand['failed'], grand['skipped']))
    return 0 if ok and not grand['failed'] and grand['passed'] else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
