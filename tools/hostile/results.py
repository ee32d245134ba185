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

"""Rows of measures, and what the array logged meanwhile."""


class Result(object):

    def __init__(self):
        self.rows = []

    def add(self, probe, measure, value, wanted, ok, detail=''):
        self.rows.append({'probe': probe, 'measure': measure,
                          'value': value, 'wanted': wanted, 'ok': bool(ok),
                          'detail': detail})

    @property
    def failed(self):
        return [r for r in self.rows if not r['ok']]


def tracebacks(text):
    return text.count('Traceback (most recent call last)')


def new_lines(arr, before):
    text = arr.log()[len(before):]
    return [line for line in text.splitlines() if line.strip()]
