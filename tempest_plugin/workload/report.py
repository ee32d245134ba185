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

"""The results table, in the reference architecture's layout.

One row per topology and volume type: updated documents/s and
operations/s from the benchmark, IOPS, throughput and latency, and the
data reduction from the storage. A measurement that is missing or makes no
sense fails the run instead of printing.
"""

# The name under which a Tempest result carries its table.
DETAIL_NAME = 'mongodb-results'
COLUMNS = ('topology', 'volume type', 'updated docs/s', 'ops/s', 'IOPS',
           'MB/s', 'latency ms', 'data reduction')
SEED = {
    # The reference architecture's published results, for comparison.
    'standalone': {'updated docs/s': 4400, 'IOPS': 16700,
                   'latency ms': 0.44, 'data reduction': 2.4},
    'replica-set': {'updated docs/s': 3400, 'IOPS': 31800,
                    'latency ms': 0.54, 'data reduction': 3.8},
    'sharded': {'updated docs/s': 3750, 'IOPS': 31500,
                'latency ms': 0.60},
}


# The pool stats that are rates over the array's last sampling interval.
RATE_KEYS = ('read_iops', 'write_iops', 'throughput_bytes_per_sec',
             'latency_usec')


class BadMeasurement(ValueError):
    pass


def window_average(reports, before=None):
    """IOPS, MB/s and latency over a benchmark window, from pool stats.

    Each of Cinder's pool reports carries the array's rates over its own
    last sampling interval (a few seconds), not over the benchmark: one
    report read after the run describes whatever came after it. So the
    pool is read all through the window and the distinct reports are
    averaged: ``reports`` as read (the first one after the end included,
    for the window's tail); ``before``, the report in force when the
    window opened, which describes the time before it and is left out.
    Latency is weighted by each report's IOPS.
    """
    seen, distinct = set(), []
    if before is not None:
        seen.add(_report_key(before))
    for caps in reports:
        key = _report_key(caps)
        if key in seen:
            continue
        seen.add(key)
        distinct.append(caps)
    if not distinct:
        raise BadMeasurement('no pool report covers the benchmark')

    def iops(caps):
        return (caps.get('read_iops') or 0) + (caps.get('write_iops') or 0)
    total = sum(iops(c) for c in distinct)
    latency = (sum(iops(c) * (c.get('latency_usec') or 0)
                   for c in distinct) / total) if total else 0.0
    return {'IOPS': total / len(distinct),
            'MB/s': sum(c.get('throughput_bytes_per_sec') or 0
                        for c in distinct) / len(distinct) / 1e6,
            'latency ms': latency / 1000.0,
            'reports': len(distinct)}


def is_new(caps, before):
    """Whether pool stats ``caps`` come from a later report than ``before``.
    """
    return _report_key(caps) != _report_key(before)


def _report_key(caps):
    """What tells one pool report from the next.

    The scheduler's timestamp of the report, or failing that its rates.
    """
    return caps.get('timestamp') or tuple(caps.get(k) for k in RATE_KEYS)


def check(row, dedup):
    """Raise BadMeasurement naming what is missing or nonsensical."""
    for key in COLUMNS[2:]:
        value = row.get(key)
        if value is None:
            raise BadMeasurement('%s / %s: %s is missing' % (
                row.get('topology'), row.get('volume type'), key))
        if not isinstance(value, (int, float)) or value < 0:
            raise BadMeasurement('%s / %s: %s = %r is not a measurement' % (
                row.get('topology'), row.get('volume type'), key, value))
    if row['updated docs/s'] <= 0 or row['ops/s'] <= 0:
        raise BadMeasurement('%s / %s: the benchmark updated nothing' % (
            row['topology'], row['volume type']))
    if row['IOPS'] <= 0:
        raise BadMeasurement('%s / %s: the storage saw no I/O' % (
            row['topology'], row['volume type']))
    if row['data reduction'] < 1.0 and dedup:
        raise BadMeasurement('%s / %s: data reduction %.2f:1 is below 1 '
                             'with deduplication on' % (
                                 row['topology'], row['volume type'],
                                 row['data reduction']))


def _cell(key, value):
    if key == 'data reduction':
        return '%.2f:1' % value
    if isinstance(value, float):
        return '%.2f' % value if value < 10 else '%.0f' % value
    return str(value)


def table(rows, title=None):
    """Markdown table of ``rows`` (dicts keyed by COLUMNS)."""
    lines = []
    if title:
        lines.append(title)
        lines.append('')
    lines.append('| %s |' % ' | '.join(COLUMNS))
    lines.append('|%s|' % '|'.join('---' for _c in COLUMNS))
    for row in rows:
        lines.append('| %s |' % ' | '.join(
            _cell(k, row[k]) for k in COLUMNS))
    return '\n'.join(lines)
