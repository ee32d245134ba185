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

"""``tox -e tempest [-- REGEX]``: Tempest against cinder-flash on the bed.

Also ``up`` and ``down`` to keep a bed running by hand.
"""

import argparse
import collections
import os
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

from cinder_driver.common import compat  # noqa: E402
from tools.gate import bed as bed_mod  # noqa: E402

# These tests list every tenant's volumes while the other workers create
# and delete theirs and their groups, which races in Cinder's API: its
# detailed view looks up each listed volume's group after the list was
# read, and a group destroyed in between answers 404. They run alone,
# after the concurrent pass. cinder-tempest-plugin's replication tests
# are among them: their class clean-up (``_clear_volume_type``) lists
# every tenant's volumes.
# A failover moves the whole backend to the other array: alone as well.
# Our group snapshot test's cleanup lists every volume too.
SERIAL_REGEX = (r'^(tempest\.api\.volume\.admin\.'
                r'test_(volume_retype|groups|volumes_list|volume_manage|'
                r'snapshot_manage|group_snapshots)\.'
                r'|cinder_tempest_plugin\.api\.volume\.admin\.'
                r'test_volume_replication(_negative)?\.'
                r'|tempest_plugin\.tests\.api\.(test_replication_failover|'
                r'test_flash_features\.FlashConsistentGroupSnapshotTest))')
# Tests that compare a volume's host before and after an operation. In a
# cluster the member that handles a manage or a retype writes its own
# host into the volume (Cinder's manager does so for clustered volumes),
# so these run in a last pass with one member of the cluster stopped.
ONE_SERVICE_REGEX = (r'^(tempest\.api\.volume\.admin\.('
                     r'test_volume_manage\.VolumeManageAdminTest\.'
                     r'test_unmanage_manage_volume|test_volume_retype\.'
                     r'VolumeRetypeWithoutMigrationTest\.'
                     r'test_available_volume_retype)'
                     r'|tempest_plugin\.tests\.api\.test_flash_features\.'
                     r'FlashVolumeTypesTest\.'
                     r'test_retype_between_dedup_and_nodedup)\b')
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = bed_mod.ROOT
BIN = bed_mod.BIN
DEFAULT_REGEX = (r'^(tempest\.api\.volume|cinder_tempest_plugin\.(api|rbac)'
                 r'|cinder_tempest_plugin\.scenario\.test_volume_concurrency'
                 r'|tempest_plugin\.tests)')


# The LINSTOR backend: Tempest's own volume API tests, on its volume type.
LINSTOR_REGEX = r'^tempest\.api\.volume'
FLAVOURS = {
    'k2': {'volume_type': 'dedup', 'storage_protocol': 'iSCSI',
           'manage_volume': 'cv-%s', 'manage_snapshot': 'True',
           'manage_snapshot_ref': 'cs-%s', 'replication': 'True'},
    'linstor': {'volume_type': 'linstor', 'storage_protocol': 'DRBD',
                'manage_volume': 'volume-%s', 'manage_snapshot': 'False',
                'manage_snapshot_ref': 'snapshot-%s',
                'replication': 'False'},
}


def tempest_conf(bed, flavour='k2'):
    values = dict(FLAVOURS[flavour], pw=bed.passwords['admin'],
                  backends=','.join(bed_mod.BACKENDS),
                  # The bed leaves Cinder's policy defaults as they are.
                  scoped=compat.scope_enforced_by_default(
                      compat.cinder_major()))
    return textwrap.dedent('''\
        [DEFAULT]
        log_file = tempest.log
        [auth]
        admin_username = admin
        admin_password = %(pw)s
        admin_project_name = admin
        admin_domain_name = Default
        use_dynamic_credentials = True
        [identity]
        uri_v3 = http://127.0.0.1:5000/v3
        auth_version = v3
        region = RegionOne
        [identity-feature-enabled]
        api_v2 = False
        [service_available]
        cinder = True
        nova = False
        glance = False
        neutron = False
        swift = False
        [volume]
        catalog_type = block-storage
        backend_names = %(backends)s
        storage_protocol = %(storage_protocol)s
        vendor_name = cinder-flash
        volume_type = %(volume_type)s
        min_microversion = 3.0
        max_microversion = latest
        build_timeout = 120
        manage_volume_ref = source-name,%(manage_volume)s
        manage_snapshot_ref = source-name,%(manage_snapshot_ref)s
        [volume-feature-enabled]
        backup = False
        snapshot = True
        clone = True
        manage_volume = True
        manage_snapshot = %(manage_snapshot)s
        extend_attached_volume = False
        volume_revert = True
        consistency_group = True
        replication = %(replication)s
        multi_backend = True
        enable_volume_image_dep_tests = True
        concurrency_tests = True
        [compute-feature-enabled]
        volume_multiattach = True
        [enforce_scope]
        cinder = %(scoped)s
        [cinder_flash]
        pool_protocols = iSCSI,DRBD
        ''') % values


def tempest_passes(regex, cluster, concurrency=4):
    """``tempest run --regex`` arguments of each pass, in order.

    The gate's suites run concurrently, then SERIAL_REGEX alone; in a
    cluster the tests of ONE_SERVICE_REGEX run last (with a member
    stopped) and in no other pass.
    """
    if regex not in (DEFAULT_REGEX, LINSTOR_REGEX):
        return [[regex, '--concurrency', str(concurrency)]]
    if not cluster:
        return [[regex, '--exclude-regex', SERIAL_REGEX,
                 '--concurrency', '4'], [SERIAL_REGEX, '--serial']]
    return [[regex, '--exclude-regex', '%s|%s' % (SERIAL_REGEX,
                                                  ONE_SERVICE_REGEX),
             '--concurrency', '4'],
            [SERIAL_REGEX, '--exclude-regex', ONE_SERVICE_REGEX, '--serial'],
            # Those of this run's suites only (both must match at 0).
            ['(?=%s)(?:%s)' % (regex, ONE_SERVICE_REGEX), '--serial']]


def run_tempest(bed, regex, results_dir, flavour='k2', conf_text=None,
                concurrency=4, exclude_list=os.path.join(HERE, 'exclude.txt')):
    work = os.path.join(bed.dir, 'tempest-' + flavour)
    if os.path.exists(work):
        subprocess.run(['rm', '-rf', work], check=True)
    env = dict(bed.env, HOME=os.path.join(bed.dir, 'home'))
    os.makedirs(env['HOME'], exist_ok=True)
    subprocess.run([os.path.join(BIN, 'tempest'), 'init', work], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(work, 'etc', 'tempest.conf'), 'w') as f:
        f.write(conf_text or tempest_conf(bed, flavour))
    exclude = ['--exclude-list', exclude_list]
    passes = tempest_passes(regex, bool(bed.cluster), concurrency)
    one_member = passes[-1] if bed.cluster and len(passes) == 3 else None
    code, subunit = 0, b''
    for args in passes:
        cmd = [os.path.join(BIN, 'tempest'), 'run', '--regex'] + args + \
            exclude
        print('[gate] %s%s' % (' '.join(cmd), ' (with %s stopped)' % (
            bed.cluster.members[-1]) if args is one_member else ''),
            flush=True)
        if args is one_member:
            with bed.cluster.one_member_stopped():
                code |= subprocess.run(cmd, cwd=work, env=env).returncode
        else:
            code |= subprocess.run(cmd, cwd=work, env=env).returncode
        subunit += subprocess.run([os.path.join(BIN, 'stestr'), 'last',
                                   '--subunit'], cwd=work, env=env,
                                  capture_output=True).stdout
    if results_dir:
        os.makedirs(results_dir, exist_ok=True)
        name = 'tempest.subunit' if flavour == 'k2' else \
            'tempest-%s.subunit' % flavour
        with open(os.path.join(results_dir, name), 'wb') as f:
            f.write(subunit)
    report(subunit)
    return code


def scan_for_secrets(bed):
    """Files and line numbers of log lines that contain a password."""
    secrets = list(bed.passwords.values()) + [bed.array['password'],
                                              bed.replica['password']]
    found = []
    for name in sorted(os.listdir(bed.logs)):
        path = os.path.join(bed.logs, name)
        with open(path, errors='replace') as f:
            for number, line in enumerate(f, 1):
                if any(secret in line for secret in secrets):
                    found.append('%s:%d' % (name, number))
    return found


def by_hand(bed, command):
    """``up`` or ``down`` of a bed kept by hand; False for other commands."""
    if command == 'up':
        bed.up()
        return True
    if command == 'down':
        bed.down()
        return True
    return False


def check_logs(bed, tag='[gate]'):
    """0 when no service log holds a password, else 1 (printed)."""
    leaks = scan_for_secrets(bed)
    if leaks:
        print('%s FAILED: passwords in log lines: %s' % (
            tag, ', '.join(leaks[:20])), flush=True)
        return 1
    print('%s no password in any service log (%s)' % (
        tag, ', '.join(sorted(os.listdir(bed.logs)))), flush=True)
    return 0


def report(subunit_bytes):
    import io

    import subunit
    import testtools

    per_suite = collections.defaultdict(collections.Counter)
    skips = collections.Counter()
    reasons = collections.defaultdict(bytes)

    class Collector(testtools.StreamResult):
        def status(self, test_id=None, test_status=None, file_name=None,
                   file_bytes=None, **kw):
            if test_id and file_name == 'reason' and file_bytes:
                reasons[test_id] += bytes(file_bytes)
            if test_id and test_status in ('success', 'fail', 'skip',
                                           'xfail', 'uxsuccess'):
                # "setUpClass (tempest.api...)" counts for its module.
                name = test_id.split('(')[-1].strip(' )')
                per_suite[name.split('.')[0]][test_status] += 1
            if test_status == 'skip':
                text = reasons.pop(test_id, b'').decode(errors='replace')
                skips[text.strip() or '(no reason given)'] += 1

    stream = subunit.ByteStreamToStreamResult(io.BytesIO(subunit_bytes))
    collector = Collector()
    collector.startTestRun()
    stream.run(collector)
    collector.stopTestRun()
    print('\n[gate] results per suite', flush=True)
    for suite, counts in sorted(per_suite.items()):
        ran = sum(counts[s] for s in ('success', 'fail', 'xfail',
                                      'uxsuccess'))
        print('  %-24s ran %d, passed %d, skipped %d, failed %d' % (
            suite, ran, counts['success'] + counts['xfail'], counts['skip'],
            counts['fail'] + counts['uxsuccess']))
    if skips:
        print('[gate] skip reasons')
        for reason, n in skips.most_common():
            print('  %3d  %s' % (n, reason.splitlines()[0][:150]))


def cluster_fault_round(bed, results_dir):
    """One kill -9 of a cinder-volume under load, checked (CI's share of
    ``tox -e soak -- --cluster``); written as the ``cluster`` suite.
    """
    import io

    import subunit

    from tools.gate import cluster_figures
    from tools.gate import cluster_rounds
    soak = cluster_rounds.Soak(bed, seed=1, workers=4)
    soak.watcher.start()
    try:
        outcome = soak.kill_round(1, 'gate-b', 30)
        soak.load.teardown()
        outcome['after the teardown'] = soak.check(2, 'after the teardown')
    finally:
        soak.watcher.stop()
    for line in cluster_figures.report(soak, [outcome]):
        cluster_figures.say(line)
    cases = [('cleanup_requested', [] if outcome['cleanup requested'] else
              ['no cleanup was requested for the dead service'])]
    cases += [(key.replace(' ', '_'), outcome[key]) for key in (
        'after the kill', 'after the restart', 'after the teardown')]
    stream = io.BytesIO()
    out = subunit.StreamResultToBytes(stream)
    for name, problems in cases:
        test_id = 'cluster.kill_round.' + name
        out.status(test_id=test_id, test_status='inprogress')
        out.status(test_id=test_id,
                   test_status='fail' if problems else 'success',
                   file_name='reason', file_bytes='\n'.join(
                       problems).encode(), eof=True,
                   mime_type='text/plain')
    if results_dir:
        with open(os.path.join(results_dir, 'cluster.subunit'), 'wb') as f:
            f.write(stream.getvalue())
    return 1 if any(problems for _n, problems in cases) else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('command', nargs='?', default='tempest',
                        help='tempest (default), up, down')
    parser.add_argument('regex', nargs='?', default=DEFAULT_REGEX)
    parser.add_argument('--state-dir', default=os.path.join(ROOT, '.gate'))
    parser.add_argument('--results-dir',
                        default=os.environ.get('CINDER_FLASH_RESULTS'))
    parser.add_argument('--cluster', action='store_true',
                        help='two cinder-volume services in one cluster '
                        'instead of one service')
    parser.add_argument('--coordinator', default='redis',
                        choices=('redis', 'etcd'),
                        help="the cluster's lock coordinator")
    args = parser.parse_args()
    if args.command not in ('tempest', 'up', 'down'):
        # ``tox -e tempest -- REGEX``: a lone argument is the regex.
        args.command, args.regex = 'tempest', args.command
    bed = bed_mod.Bed(args.state_dir,
                      cluster=args.coordinator if args.cluster else None)
    try:
        if by_hand(bed, args.command):
            return 0
        bed.up()
        try:
            code = run_tempest(bed, args.regex, args.results_dir)
            if args.regex == DEFAULT_REGEX:
                print('[gate] the same API tests on the LINSTOR backend',
                      flush=True)
                code |= run_tempest(bed, LINSTOR_REGEX, args.results_dir,
                                    'linstor')
            if bed.cluster and args.regex == DEFAULT_REGEX:
                print('[gate] a cinder-volume of the cluster killed under '
                      'load', flush=True)
                code |= cluster_fault_round(bed, args.results_dir)
            return check_logs(bed) or code
        finally:
            bed.down()
    except bed_mod.BedError as e:
        print('[gate] FAILED: %s' % e, file=sys.stderr, flush=True)
        return 1


if __name__ == '__main__':
    sys.exit(main())
