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

"""The CI summary's last lines: counts per suite and the failed tests'
names, so that a failure in a long run can be found from its tail."""

import contextlib
import io
import os
import shutil
import tempfile

import subunit
import testtools

from tools import summarize


def stream(results, tracebacks=None):
    out = io.BytesIO()
    writer = subunit.StreamResultToBytes(out)
    for test_id, status in results:
        text = (tracebacks or {}).get(test_id)
        if text:
            # As testtools sends a failure's details: before its status.
            writer.status(test_id=test_id, file_name='traceback',
                          file_bytes=text.encode(), eof=True,
                          mime_type='text/plain; charset=utf8')
        writer.status(test_id=test_id, test_status=status)
    return out.getvalue()


class SummaryTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(prefix='ci-summary-')
        self.addCleanup(shutil.rmtree, self.dir, True)

    def write(self, name, data, mode='wb'):
        with open(os.path.join(self.dir, name), mode) as f:
            f.write(data)

    def summarize(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = summarize.main(self.dir)
        return status, out.getvalue().splitlines()

    def test_failed_tests_are_named_before_the_totals(self):
        self.write('functional.subunit', stream(
            [('t.a', 'success'), ('t.b', 'fail'), ('t.c', 'skip')]))
        self.write('py3.subunit', stream([('u.a', 'success')]))
        self.write('docs.check', 'fail\n', 'w')
        status, lines = self.summarize()
        self.assertEqual(1, status)
        self.assertEqual(['FAILED docs: the check failed',
                          'FAILED functional: t.b',
                          '2 passed, 2 failed, 1 skipped'], lines[-3:])
        self.assertIn('functional:          1 passed, 1 failed, 1 skipped',
                      lines)

    def test_a_failure_carries_the_last_line_of_its_traceback(self):
        long = 'x' * 1000
        self.write('functional.subunit', stream(
            [('t.a', 'fail'), ('t.b', 'fail')],
            {'t.a': 'Traceback (most recent call last):\n  File "t.py"\n'
                    'AttachError: no free loop device\n\n',
             't.b': 'ValueError: ' + long}))
        _status, lines = self.summarize()
        self.assertEqual('FAILED functional: t.a: AttachError: no free loop '
                         'device', lines[-3])
        self.assertEqual(summarize.REASON_CHARS,
                         len(lines[-2]) - len('FAILED functional: t.b: '))
        self.assertTrue(lines[-2].endswith('x...'))

    def test_a_green_run_names_nothing(self):
        self.write('py3.subunit', stream([('u.a', 'success')]))
        self.write('pep8.check', 'pass\n', 'w')
        status, lines = self.summarize()
        self.assertEqual(0, status)
        self.assertEqual([], [line for line in lines
                              if line.startswith('FAILED')])
        self.assertEqual('2 passed, 0 failed, 0 skipped', lines[-1])
