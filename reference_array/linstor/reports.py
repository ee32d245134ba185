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

"""LINSTOR error reports: what ``GET /v1/error-reports`` lists.

LINSTOR writes an error report for a refusal it did not expect to be
routine (an invalid name or property, a restore over resources, an
internal error), names it in the entry's ``error_report_ids`` and serves
it under ``/v1/error-reports``; "not found" and "already exists" get
none. Reports are kept in memory, the newest ``KEEP`` of them: a client
cannot make the array hold more.
"""

import collections
import itertools
import os
import socket
import threading
import time

KEEP = 1000
# Which refusals LINSTOR files no report for.
ROUTINE = ('exists', 'not_found')


class ErrorReports(object):

    def __init__(self, version, keep=KEEP):
        self.version = version
        self.node = socket.gethostname()
        # LINSTOR's ids: the instance (8 hex digits), a module part, then
        # a sequence number.
        self.instance = '%08X' % (int(time.time()) ^ os.getpid())
        self.sequence = itertools.count()
        self.reports = collections.OrderedDict()
        self.keep = keep
        self.lock = threading.Lock()

    def file(self, entry, exception):
        """File a report of an ApiCallRc error entry; add its id to it."""
        now = time.time()
        with self.lock:
            report_id = '%s-00000-%06d' % (self.instance,
                                           next(self.sequence))
            self.reports[report_id] = {
                'id': report_id, 'time_ms': int(now * 1000),
                'exception': exception, 'message': entry['message'],
                'text': self._text(report_id, now, exception, entry)}
            while len(self.reports) > self.keep:
                self.reports.popitem(last=False)
        entry['error_report_ids'] = entry.get('error_report_ids', []) + [
            report_id]
        return report_id

    def _text(self, report_id, now, exception, entry):
        return '\n'.join([
            'ERROR REPORT %s' % report_id, '',
            'Application:     reference array (LINSTOR dialect)',
            'Module:          Controller',
            'Version:         %s' % self.version,
            'Error time:      %s' % time.strftime(
                '%Y-%m-%d %H:%M:%S', time.gmtime(now)),
            'Node:            %s' % self.node, '',
            'Reported error:', '===============', '',
            'Category:        %s' % exception,
            'Error message:   %s' % entry['message'],
            'Cause:           %s' % entry.get('cause', ''),
            'Details:         %s' % entry.get('details', ''), ''])

    def _view(self, report, with_content):
        view = {'node_name': self.node, 'error_time': report['time_ms'],
                'filename': 'ErrorReport-%s.log' % report['id'],
                'module': 'CONTROLLER', 'version': self.version,
                'exception': report['exception'],
                'exception_message': report['message']}
        if with_content:
            view['text'] = report['text']
        return view

    def listing(self, node=None, since=None, to=None, with_content=False,
                limit=1000, ids=()):
        """Reports, oldest first, as ``GET /v1/error-reports`` shows them."""
        with self.lock:
            reports = list(self.reports.values())
        out = []
        for report in reports:
            if node and node.lower() != self.node.lower():
                continue
            if ids and report['id'] not in ids:
                continue
            if since is not None and report['time_ms'] < since:
                continue
            if to is not None and report['time_ms'] > to:
                continue
            out.append(self._view(report, with_content))
        return out[:limit] if limit > 0 else out

    def delete(self, ids):
        """Forget the reports named; the ids found."""
        with self.lock:
            return [i for i in ids if self.reports.pop(i, None)]
