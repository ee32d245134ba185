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

"""``tox -e tempest-compute``: Tempest on the compute bed.

By default: Tempest's volume tests that need Nova (attach and detach,
extend attached, snapshots of attached volumes, force detach, volumes from
images, boot from volume) on the K2 backend, and the MongoDB scenario
(standalone measured; replica set and sharded skipped with the reason).
``--smoke``: only the boot-from-volume data check (CI's small version).
``up`` and ``down`` keep a bed running by hand; ``test`` runs Tempest on
a bed that is up.
"""

import argparse
import configparser
import io
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))

from tempest_plugin.workload import report  # noqa: E402
from tools.gate import bed as bed_mod  # noqa: E402
from tools.gate.compute import cloud  # noqa: E402
from tools.gate.compute import network  # noqa: E402
from tools.gate import run as gate_run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
VOLUME_REGEX = (
    r'tempest\.api\.volume\.('
    r'test_volumes_actions\.'
    r'|test_volumes_extend\.VolumesExtendAttachedTest\.'
    r'|test_volumes_snapshots\.VolumesSnapshotTestJSON\.'
    r'test_snapshot_create_(delete_with_volume_in_use|offline_delete_online)'
    r'|admin\.test_volumes_actions\.VolumesActionsTest\.'
    r'test_force_detach_volume'
    r'|admin\.test_snapshot_manage\.SnapshotManageAdminTest\.'
    r'test_snapshot_manage_with_attached_volume'
    r'|test_volumes_get\.|test_volumes_negative\.)'
    r'|tempest\.scenario\.test_volume_boot_pattern\.')
SMOKE_REGEX = r'^tempest_plugin\.tests\.scenario\.test_volume_data\.'
FULL_REGEX = r'^(%s|tempest_plugin\.tests\.scenario\.)' % VOLUME_REGEX
# Instances under software emulation take their time; so does a test
# that boots two of them and loads a database on each.
TEST_TIMEOUT = 5400
# The small version boots one, at most 15 minutes under TCG on two loaded
# cores so far (5 minutes on an idle machine).
SMOKE_TIMEOUT = 1800
RUN_LABEL = ('QEMU TCG guests (software emulation, not a benchmark): '
             '1 vCPU, 512 MiB, FerretDB %s on SQLite; 2-core test machine '
             'shared with other work')


def tempest_conf(bed, mongodb_scale=0.002):
    """The gate's tempest.conf with Nova, Glance and Neutron enabled."""
    from tools import ferretdb
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(gate_run.tempest_conf(bed, 'k2'))
    ids = bed.cloud
    settings = {
        'service_available': {'nova': 'True', 'glance': 'True',
                              'neutron': 'True'},
        'auth': {'create_isolated_networks': 'False'},
        'compute': {'image_ref': ids['image'], 'image_ref_alt': ids['image'],
                    'flavor_ref': ids['flavor'],
                    'flavor_ref_alt': ids['flavor_alt'],
                    'fixed_network_name': cloud.NETWORK_NAME,
                    'build_timeout': '900', 'build_interval': '5'},
        'compute-feature-enabled': {
            'config_drive': 'True', 'console_output': 'True',
            'snapshot': 'True', 'attach_encrypted_volume': 'False',
            'swap_volume': 'False', 'shelve': 'False', 'resize': 'False',
            'cold_migration': 'False', 'live_migration': 'False',
            'suspend': 'False', 'pause': 'False', 'rescue': 'False',
            'change_password': 'False', 'interface_attach': 'False'},
        'validation': {'run_validation': 'True', 'connect_method': 'fixed',
                       'network_for_ssh': cloud.NETWORK_NAME,
                       'image_ssh_user': 'debian',
                       'image_alt_ssh_user': 'debian',
                       'auth_method': 'keypair', 'ip_version_for_ssh': '4',
                       # One SSH command is bounded by this too: the
                       # MongoDB load and benchmark are one command, which
                       # under emulation on a busy machine outlasts 900 s.
                       'ssh_timeout': '2400', 'connect_timeout': '30',
                       'ping_timeout': '300'},
        'volume': {'build_timeout': '900', 'volume_size': '1'},
        'volume-feature-enabled': {'extend_attached_volume': 'True'},
        'cinder_flash_feature_enabled': {'mongodb_scenarios': 'True'},
        'cinder_flash_mongodb': {
            'image_ref': ids['image'], 'flavor_ref': ids['flavor'],
            'ssh_user': 'debian', 'install_method': 'image',
            'server': 'ferretdb', 'volume_size': '1',
            'dataset_scale': str(mongodb_scale), 'iterations': '1',
            'processes': '2', 'threads': '2', 'ops_per_thread': '25',
            'topologies': 'standalone,replica-set,sharded',
            'run_label': RUN_LABEL % ferretdb.VERSION},
    }
    for section, values in settings.items():
        if not parser.has_section(section):
            parser.add_section(section)
        for key, value in values.items():
            parser.set(section, key, value)
    out = io.StringIO()
    parser.write(out)
    return out.getvalue()


def mongodb_tables(subunit_bytes):
    """The results tables the MongoDB scenario attached to its result."""
    import subunit
    import testtools
    tables = []

    class Collector(testtools.StreamResult):
        def status(self, file_name=None, file_bytes=None, **kw):
            if file_name == report.DETAIL_NAME and file_bytes:
                tables.append(bytes(file_bytes).decode(errors='replace'))

    stream = subunit.ByteStreamToStreamResult(io.BytesIO(subunit_bytes))
    collector = Collector()
    collector.startTestRun()
    stream.run(collector)
    collector.stopTestRun()
    return tables


def run(bed, regex, results_dir, timeout=TEST_TIMEOUT):
    bed.env['OS_TEST_TIMEOUT'] = str(timeout)
    home = os.path.join(bed.dir, 'home')
    if os.path.isdir(home):
        # A bed kept up runs Tempest again: the last run's workspace goes.
        subprocess.run([os.path.join(bed_mod.BIN, 'tempest'), 'workspace',
                        'remove', '--name', 'tempest-compute'],
                       env=dict(bed.env, HOME=home), capture_output=True)
    code = gate_run.run_tempest(
        bed, regex, results_dir, flavour='compute',
        conf_text=tempest_conf(bed), concurrency=2,
        exclude_list=os.path.join(HERE, 'exclude.txt'))
    work = os.path.join(bed.dir, 'tempest-compute')
    subunit_bytes = subprocess.run(
        [os.path.join(bed_mod.BIN, 'stestr'), 'last', '--subunit'],
        cwd=work, env=dict(bed.env, HOME=os.path.join(bed.dir, 'home')),
        capture_output=True).stdout
    tables = mongodb_tables(subunit_bytes)
    if tables:
        text = '\n\n'.join(tables)
        print('\n[compute] MongoDB scenario\n' + text, flush=True)
        if results_dir:
            with open(os.path.join(results_dir, 'mongodb-results.md'),
                      'w') as f:
                f.write(text + '\n')
    return code


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('command', nargs='?', default='tempest',
                        help='tempest (default), up, down, test')
    parser.add_argument('regex', nargs='?')
    parser.add_argument('--smoke', action='store_true',
                        help='only boot from a volume, write and read back')
    parser.add_argument('--state-dir',
                        default=os.path.join(bed_mod.ROOT, '.gate'))
    parser.add_argument('--results-dir',
                        default=os.environ.get('CINDER_FLASH_RESULTS'))
    args = parser.parse_args()
    if args.command not in ('tempest', 'up', 'down', 'test'):
        args.command, args.regex = 'tempest', args.command
    regex = args.regex or (SMOKE_REGEX if args.smoke else FULL_REGEX)
    bed = cloud.ComputeBed(args.state_dir, server_image=not args.smoke)
    try:
        if gate_run.by_hand(bed, args.command):
            return 0
        if args.command == 'test':
            return run(bed, regex, args.results_dir)
        bed.up()
        try:
            code = run(bed, regex, args.results_dir,
                       SMOKE_TIMEOUT if args.smoke else TEST_TIMEOUT)
            return gate_run.check_logs(bed, '[compute]') or code
        finally:
            bed.down()
    except (bed_mod.BedError, network.NetworkError) as e:
        print('[compute] FAILED: %s' % e, file=sys.stderr, flush=True)
        return 1


if __name__ == '__main__':
    sys.exit(main())
