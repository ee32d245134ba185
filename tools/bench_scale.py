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

"""REST times as the array fills with volumes, in the driver's layout.

Each volume has a volume group of its own (``cvg-<name>`` holding
``cv-<name>``), as our K2 driver creates them. At each population (0,
1,000 and 10,000 volumes by default) the section times, as medians:

lookup   a volume group by name, then its volume by name (the driver's
         lookups before any operation); also through krest, the client
         of Cinder's in-tree K2 driver, as a peer we did not write
create   a volume group and its volume (the driver's create)
page     one page of 100 volume groups from the middle of the list
attach   a mapping of a volume to a host (the driver's attach)

and reads the array's RSS. The array is filled through REST, as a
driver would fill it; a population not reached within the fill budget
is reported with how far the fill got, never extrapolated.

The same for the LINSTOR dialect (``run_linstor``), resource definitions
spawned from a resource group as our LINSTOR driver creates them (one
1 GiB volume, two replicas placed by the array):

lookup   a definition by name, then its volume definitions (our
         driver's lookups); also through python-linstor, the client of
         Cinder's in-tree LINSTOR driver, as a peer we did not write
create   a spawn from the resource group (the driver's create)
page     one page of 100 definitions from the middle of the list
place    an autoplace of two replicas for a new definition (its
         definition and volume made beforehand, not timed)
stats    a query-size-info of the resource group (the driver's
         capacity poll)
"""

import statistics
import time
from urllib import parse
import warnings

from cinder_driver.k2 import client as k2_client
from cinder_driver.linstor import client as linstor_client

SAMPLES = 9
SAMPLE_BUDGET = 60.0


def _median_ms(fn, samples=SAMPLES, budget=SAMPLE_BUDGET,
               beside=None):
    """(median ms of ``fn``, samples taken); with ``beside``, a third
    figure: the median ms of ``beside``, sampled in turn with ``fn`` so
    that a machine's drift during the run moves both alike.
    """
    times, other = [], []
    deadline = time.monotonic() + budget
    for _n in range(samples):
        for call, found in ((fn, times), (beside, other)):
            if call is not None:
                started = time.perf_counter()
                call()
                found.append(time.perf_counter() - started)
        if time.monotonic() > deadline:
            break
    median = statistics.median(times) * 1000
    if beside is None:
        return median, len(times)
    return median, len(times), statistics.median(other) * 1000


class Timed(object):
    """The calls ``OPS`` timed on one array at its population (``count``
    of ``NOUN``); ``empty``: the same on a second array kept at none,
    each call timed there in turn with the same call here (its
    ``_at0_ms`` figures: the time at 0 of the same moment).
    """

    OPS = ()
    NOUN = None

    def _begin(self):
        """Before a measurement's first call."""

    def _before(self, op):
        """Before the samples of ``op`` (not timed)."""

    def _samples(self, op):
        return SAMPLES

    def _offers(self, op):
        """Whether ``op`` can be timed here."""
        return True

    def _end(self):
        """After a measurement's last call."""

    def _undo(self):
        """Back to none: what the calls timed made, deleted."""
        raise NotImplementedError()

    def measure(self):
        out = {self.NOUN: self.count}
        sides = [self] if self.empty is None else [self, self.empty]
        for side in sides:
            side._begin()
        for op in self.OPS:
            for side in sides:
                side._before(op)
            if not all(side._offers(op) for side in sides):
                continue
            figures = _median_ms(getattr(self, op),
                                 samples=self._samples(op),
                                 beside=self.empty and getattr(self.empty,
                                                               op))
            out[op + '_ms'], out[op + '_samples'] = figures[:2]
            if self.empty is not None:
                out[op + '_at0_ms'] = figures[2]
        for side in sides:
            side._end()
        if self.empty is not None:
            self.empty._undo()
        out['rss_MiB'] = self.array.rss_mib()
        return out


class Population(Timed):
    """Volumes on one array (see ``Timed``)."""

    # The page before the creates: the empty array's page is then of
    # none, as at 0.
    OPS = ('lookup', 'krest_lookup', 'page', 'create', 'attach')
    NOUN = 'volumes'

    def __init__(self, array, empty=None):
        self.array = array
        self.k2 = array.k2
        self.count = 0
        self.host = self.k2.create('hosts', {'name': 'scale-host'})
        self.volumes = []
        self.krest = self._krest(array.info)
        self.empty = empty
        self.made, self.mapped = [], []

    @staticmethod
    def _krest(info):
        """A krest endpoint, as Cinder's in-tree driver makes one
        (no certificate verification).
        """
        import krest
        import urllib3
        warnings.simplefilter('ignore',
                              urllib3.exceptions.InsecureRequestWarning)
        url = parse.urlsplit(info['k2'])
        return krest.EndPoint('%s:%s' % (url.hostname, url.port),
                              info['user'], info['password'],
                              ssl_validate=False)

    def add(self, name):
        vg = self.k2.create('volume_groups', {'name': 'cvg-' + name,
                                              'quota': 0, 'is_dedup': True})
        vol = self.k2.create('volumes', {
            'name': 'cv-' + name, 'size': 1024 * 1024,
            'volume_group': k2_client.ref('volume_groups', vg['id'])})
        self.volumes.append(vol['id'])
        self.count += 1
        return vol

    def fill(self, target, budget):
        deadline = time.monotonic() + budget
        while self.count < target and time.monotonic() < deadline:
            self.add('fill-%06d' % self.count)
        return self.count >= target

    # -- the calls timed ---------------------------------------------------
    def _probe(self):
        return 'fill-%06d' % (self.count // 2) if self.count else 'absent'

    def lookup(self):
        name = self._probe()
        self.k2.find('volume_groups', name='cvg-' + name)
        self.k2.find('volumes', name='cv-' + name)

    def krest_lookup(self):
        name = self._probe()
        self.krest.search('volume_groups', name='cvg-' + name)
        self.krest.search('volumes', name='cv-' + name)

    def create(self):
        self.made.append(self.add('probe-%06d-%d' % (self.count,
                                                     len(self.made))))

    def page(self):
        self.k2.http.request('GET', '/volume_groups', params={
            '__limit': 100, '__offset': self.count // 2})

    def attach(self):
        vol = self.made[len(self.mapped)]
        self.mapped.append(self.k2.create('mappings', {
            'volume': k2_client.ref('volumes', vol['id']),
            'host': k2_client.ref('hosts', self.host['id'])}))

    def _begin(self):
        self.made, self.mapped = [], []

    def _samples(self, op):
        # A mapping of each volume the creates made.
        return len(self.made) if op == 'attach' else SAMPLES

    def _undo(self):
        for mapping in self.mapped:
            self.k2.delete('mappings', mapping['id'])
        for vol in self.made:
            self.k2.delete('volumes', vol['id'])
            self.k2.delete('volume_groups', int(
                vol['volume_group']['ref'].rsplit('/', 1)[1]))
        self.made, self.mapped, self.volumes, self.count = [], [], [], 0


def _run(population, points, fill_budget, log, noun, line):
    """Measurements at each population in ``points`` (``noun``: what is
    counted; ``line``: the log line of a point).
    """
    out = []
    for target in points:
        started = time.monotonic()
        reached = population.fill(target, fill_budget)
        point = {'target': target, 'reached': reached,
                 'fill_s': time.monotonic() - started}
        if not reached:
            point[noun] = population.count
            log('  fill to %d %s stopped at %d after %.0f s' % (
                target, noun, population.count, point['fill_s']))
            out.append(point)
            break
        point.update(population.measure())
        log(line % point)
        out.append(point)
    return out


def run(array, points, fill_budget, log=print, empty=None):
    """Measurements at each population in ``points``; ``empty``: a second
    array, on which each call is timed in turn (see ``Population``).
    """
    at0 = Population(empty) if empty is not None else None
    return _run(Population(array, at0), points, fill_budget, log, 'volumes',
                '  %(volumes)6d volumes: lookup %(lookup_ms).1f ms (krest '
                '%(krest_lookup_ms).1f ms), create %(create_ms).1f ms, page '
                '%(page_ms).1f ms, attach %(attach_ms).1f ms, RSS '
                '%(rss_MiB).0f MiB')


def _table(points, noun, header, keys):
    """Markdown rows of ``points``: ``header`` names the columns after
    the population's, ``keys`` the figures in them (then the RSS).
    """
    rows = ['', '| %s | %s | RSS MiB |' % (noun, header),
            '|---' * (len(keys) + 2) + '|']
    base = points[0] if points and points[0].get('reached') else None
    for point in points:
        if not point.get('reached'):
            rows.append('| %d: not reached (%d after %.0f s of filling) |'
                        % (point['target'], point[noun.split()[0]],
                           point['fill_s']) + ' |' * (len(keys) + 1))
            continue
        cells = []
        for key in keys:
            cell = '%.1f' % point[key] if key in point else ''
            # Against the time at 0 of the same moment where there is
            # one (``Population``'s ``empty``), else the first point's.
            at0 = point.get(key[:-3] + '_at0_ms')
            if cell and at0:
                cell += ' (%.1f at 0: %.1fx)' % (at0, point[key] / at0)
            elif cell and base and point is not base and base.get(key):
                cell += ' (%.1fx)' % (point[key] / base[key])
            cells.append(cell)
        rows.append('| %d (filled in %.0f s) | %s | %.0f |' % (
            point['target'], point['fill_s'], ' | '.join(cells),
            point['rss_MiB']))
    return '\n'.join(rows)


def markdown(points):
    return _table(points, 'volumes (one group each)',
                  'lookup ms | lookup via krest ms | create ms | page of '
                  '100 ms | attach ms', ('lookup_ms', 'krest_lookup_ms',
                                         'create_ms', 'page_ms',
                                         'attach_ms'))


# -- LINSTOR ---------------------------------------------------------------
GROUP = 'scale-rg'
VOLUME_KIB = 1024 * 1024


class LinstorPopulation(Timed):
    """Resource definitions on one array (see ``Timed``)."""

    # As for K2: the page before the creates.
    OPS = ('lookup', 'peer_lookup', 'page', 'create', 'place', 'stats')
    NOUN = 'definitions'

    def __init__(self, array, empty=None):
        self.array = array
        self.empty = empty
        self.uri = array.info['linstor']
        self.rest = linstor_client.LinstorClient(
            [self.uri], verify=array.info.get('ca_cert') or True,
            read_timeout=600, retries=0)
        self.rest.create_resource_group(GROUP, {'place_count': 2}, 'scale')
        # Definitions on the array; the fill's names count apart (the
        # probes of each measurement are named apart).
        self.count = self.filled = 0
        self.peer = None
        self.made, self.unplaced = [], []

    def _python_linstor(self):
        """python-linstor, as Cinder's in-tree driver connects (None
        when it is not installed). A connection per measurement, as the
        driver opens one per operation: one kept through a fill longer
        than the array's idle timeout (30 s) is closed by the array.
        """
        try:
            import linstor
        except ImportError:
            return None
        peer = linstor.Linstor(self.uri.replace('http://', 'linstor://'),
                               timeout=600)
        peer.connect()
        return peer

    def add(self, name):
        self.rest.spawn(GROUP, name, VOLUME_KIB)
        self.count += 1

    def fill(self, target, budget):
        deadline = time.monotonic() + budget
        while self.count < target and time.monotonic() < deadline:
            self.add('fill-%06d' % self.filled)
            self.filled += 1
        return self.count >= target

    # -- the calls timed ---------------------------------------------------
    def _begin(self):
        self.name = ('fill-%06d' % (self.filled // 2) if self.filled
                     else 'absent')
        self.made, self.unplaced = [], []
        self.peer = self._python_linstor()

    def _offers(self, op):
        return op != 'peer_lookup' or self.peer is not None

    def lookup(self):
        self.rest.resource_definition(self.name)
        try:
            self.rest.volume_definitions(self.name)
        except linstor_client.LinstorRefusal as e:
            # At 0 there is no definition: the same two calls, refused.
            if self.filled or not e.not_found():
                raise

    def peer_lookup(self):
        self.peer.resource_dfn_list(
            filter_by_resource_definitions=[self.name])

    def page(self):
        self.rest.get('/v1/resource-definitions', params={
            'limit': 100, 'offset': self.count // 2})

    def create(self):
        self.made.append('probe-%06d-%d' % (self.count, len(self.made)))
        self.add(self.made[-1])

    def _before(self, op):
        if op != 'place':
            return
        # Each autoplace's definition and volume, made beforehand.
        for n in range(SAMPLES):
            self.unplaced.append('place-%06d-%d' % (self.count, n))
            self.rest.create_resource_definition(self.unplaced[-1], GROUP)
            self.rest.call('POST', '/v1/resource-definitions/%s/volume-'
                           'definitions' % self.unplaced[-1], {
                               'volume_definition': {
                                   'size_kib': VOLUME_KIB}})
        self._targets = iter(self.unplaced)

    def place(self):
        self.rest.autoplace(next(self._targets), {'place_count': 2})

    def stats(self):
        self.rest.query_size_info(GROUP)

    def _end(self):
        self.count += len(self.unplaced)
        if self.peer is not None:
            self.peer.disconnect()

    def _undo(self):
        for name in self.made + self.unplaced:
            self.rest.delete_resource_definition(name)
        self.made, self.unplaced, self.count = [], [], 0


def run_linstor(array, points, fill_budget, log=print, empty=None):
    """LINSTOR measurements at each population of definitions; ``empty``:
    as for ``run``.
    """
    at0 = LinstorPopulation(empty) if empty is not None else None
    return _run(LinstorPopulation(array, at0), points, fill_budget, log,
                'definitions', '  %(definitions)6d definitions: lookup '
                '%(lookup_ms).1f ms, create %(create_ms).1f ms, page '
                '%(page_ms).1f ms, place %(place_ms).1f ms, stats '
                '%(stats_ms).1f ms, RSS %(rss_MiB).0f MiB')


def linstor_markdown(points):
    return _table(points, 'definitions', 'lookup ms | lookup via '
                  'python-linstor ms | create (spawn) ms | page of 100 ms '
                  '| autoplace ms | query-size-info ms', (
                      'lookup_ms', 'peer_lookup_ms', 'create_ms', 'page_ms',
                      'place_ms', 'stats_ms'))
