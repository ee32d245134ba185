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

"""The compute bed's pieces that run without starting anything.

The os-brick connector's choices, the services' configuration, the guest's
config-drive script, the image recipe and the user-space iSCSI helpers.
The bed itself runs in ``tox -e tempest-compute``; the connector against a
real array in the functional tier (test_userspace_iscsi).
"""

import configparser
import importlib.machinery
import importlib.util
import ipaddress
import json
import os
import shutil
import socket
import sys
import threading
from unittest import mock

import fixtures
from os_brick import exception as brick_exception
from os_brick.initiator import connector as brick_connector
from oslo_config import cfg
import testtools

from tempest_plugin import plugin
from tempest_plugin.workload import report
from tools.gate.compute import brick
from tools.gate.compute import conf
from tools.gate.compute import image
from tools.gate.compute import launch
from tools.gate.compute import libvirtd
from tools.gate.compute import network
from tools.gate.compute import prepare
from tools.gate.compute import run as compute_run
from tools import iscsi_loop

PROPS = {'target_portal': '127.0.0.1:3260', 'target_iqn': 'iqn.t:a',
         'target_lun': 3,
         'target_portals': ['127.0.0.1:3260', '127.0.0.2:3260'],
         'target_iqns': ['iqn.t:a', 'iqn.t:a'], 'target_luns': [3, 3]}


class ConnectorTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture_env = mock.patch.dict(os.environ, {
            brick.INITIATOR_ENV: 'iqn.2026-11.io.test:node',
            brick.STATE_ENV: '/nonexistent/attachments'})
        self.useFixture_env.start()
        self.addCleanup(self.useFixture_env.stop)
        self.connector = brick.UserspaceISCSIConnector(root_helper=None)

    def test_paths_of_a_connection(self):
        self.assertEqual([('127.0.0.1:3260', 'iqn.t:a', 3),
                          ('127.0.0.2:3260', 'iqn.t:a', 3)],
                         brick.targets(PROPS))
        single = {'target_portal': 'h:1', 'target_iqn': 'i', 'target_lun': 0}
        self.assertEqual([('h:1', 'i', 0)], brick.targets(single))
        self.assertRaises(brick_exception.InvalidParameterValue,
                          brick.targets, {'target_iqn': 'i'})
        self.assertRaises(brick_exception.InvalidParameterValue,
                          brick.targets, dict(PROPS, target_luns=[1]))

    def test_reports_the_initiator_it_logs_in_with(self):
        self.assertEqual({'initiator': 'iqn.2026-11.io.test:node'},
                         self.connector.get_connector_properties(None))

    @mock.patch.object(iscsi_loop.Attachment, 'attach')
    def test_connect_falls_back_to_the_next_portal(self, attach):
        attach.side_effect = [iscsi_loop.AttachError('portal 1 down'),
                              '/dev/loop7']
        self.assertEqual({'type': 'block', 'path': '/dev/loop7'},
                         self.connector.connect_volume(PROPS))
        attach.side_effect = [iscsi_loop.AttachError('one'),
                              iscsi_loop.AttachError('two')]
        err = self.assertRaises(brick_exception.VolumeDeviceNotFound,
                                self.connector.connect_volume, PROPS)
        self.assertIn('one', str(err))
        self.assertIn('two', str(err))

    @mock.patch.object(iscsi_loop, 'Attachment')
    def test_chap_reaches_the_target_not_the_logs(self, attachment):
        attachment.return_value.attach.return_value = '/dev/loop1'
        props = dict(PROPS, auth_method='CHAP', auth_username='u',
                     auth_password='chap-test-value')
        self.connector.connect_volume(props)
        target = attachment.call_args[0][1]
        self.assertEqual(('u', 'chap-test-value'), target.chap)
        self.assertEqual('iqn.2026-11.io.test:node', target.initiator)
        opts = target.blockdev('chap')
        self.assertEqual('chap', opts['password-secret'])
        self.assertNotIn('chap-test-value', json.dumps(opts))

    @mock.patch.object(iscsi_loop.Attachment, 'detach')
    def test_disconnect(self, detach):
        self.connector.disconnect_volume(PROPS, None)
        self.assertEqual(2, detach.call_count)
        detach.side_effect = iscsi_loop.AttachError('busy')
        self.assertRaises(brick_exception.BrickException,
                          self.connector.disconnect_volume, PROPS, None)
        # Forced and told to ignore errors: it goes on.
        self.connector.disconnect_volume(PROPS, None, force=True,
                                         ignore_errors=True)

    @mock.patch.object(iscsi_loop.Attachment, 'resize', return_value=2 << 30)
    @mock.patch.object(iscsi_loop.Attachment, 'attached')
    def test_extend_follows_the_attached_path(self, attached, resize):
        attached.side_effect = [None, '/dev/loop2']
        self.assertEqual(2 << 30, self.connector.extend_volume(PROPS))
        attached.side_effect = [None, None]
        self.assertRaises(brick_exception.VolumeDeviceNotFound,
                          self.connector.extend_volume, PROPS)

    def test_install_takes_the_place_of_the_iscsi_connector(self):
        self.addCleanup(mock.patch.stopall)
        mock.patch.dict(brick_connector._connector_mapping_linux).start()
        mock.patch.object(brick_connector, 'unix_connector_list',
                          list(brick_connector.unix_connector_list)).start()
        brick.install()
        self.assertEqual(brick.CLASS_PATH,
                         brick_connector._connector_mapping_linux['ISCSI'])
        listed = brick_connector.unix_connector_list
        self.assertEqual(
            ['os_brick.initiator.connectors.base.BaseLinuxConnector',
             brick.CLASS_PATH], listed)
        made = brick_connector.InitiatorConnector.factory('ISCSI', None)
        self.assertIsInstance(made, brick.UserspaceISCSIConnector)
        props = brick_connector.get_connector_properties(None, '127.0.0.1',
                                                         False, False)
        self.assertEqual('iqn.2026-11.io.test:node', props['initiator'])


class LaunchTestCase(testtools.TestCase):

    def test_privileged_functions_run_in_process(self):
        from oslo_privsep import priv_context
        self.addCleanup(setattr, priv_context.PrivContext, '__init__',
                        priv_context.PrivContext.__init__)
        launch.privsep_in_process()
        ctx = priv_context.PrivContext('cinder_flash_test', cfg_section='x',
                                       pypath='x.y', capabilities=[])
        self.assertFalse(ctx.client_mode)

    def test_options_then_the_service(self):
        calls = []
        fake = mock.Mock(main=lambda: calls.append(list(sys.argv)) or 7)
        with mock.patch.object(launch.importlib, 'import_module',
                               return_value=fake) as imp, \
                mock.patch.object(brick, 'install') as install, \
                mock.patch.object(sys, 'argv', ['launch']):
            self.assertEqual(7, launch.main(['--iscsi-connector',
                                             'svc.cmd.volume:main',
                                             '--config-file', 'c.conf']))
        imp.assert_called_once_with('svc.cmd.volume')
        install.assert_called_once_with()
        self.assertEqual([['volume', '--config-file', 'c.conf']], calls)
        self.assertRaises(SystemExit, launch.main, ['--iscsi-connector'])


class TargetTestCase(testtools.TestCase):

    def test_bad_targets_are_refused(self):
        for args in (('nohost', 'iqn', 1, 'ini'), ('h:x', 'iqn', 1, 'ini'),
                     ('h:1', '', 1, 'ini'), ('h:1', 'iqn', 1, '')):
            self.assertRaises(iscsi_loop.AttachError, iscsi_loop.Target,
                              *args)

    def test_one_state_directory_per_path_and_initiator(self):
        a = iscsi_loop.Target('h:1', 'iqn', 1, 'ini-a')
        self.assertEqual(a.key, iscsi_loop.Target('h:1', 'iqn', 1,
                                                  'ini-a').key)
        for other in (('h:1', 'iqn', 1, 'ini-b'), ('h:1', 'iqn', 2, 'ini-a'),
                      ('h:2', 'iqn', 1, 'ini-a')):
            self.assertNotEqual(a.key, iscsi_loop.Target(*other).key)

    def test_qmp_skips_events_and_reports_errors(self):
        path = self.useFixture(fixtures.TempDir()).join('qmp.sock')
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        server.listen(1)
        self.addCleanup(server.close)
        seen = []

        def serve(replies):
            conn, _addr = server.accept()
            with conn, conn.makefile('rwb') as f:
                f.write(b'{"QMP": {"version": {}}}\n')
                f.flush()
                for reply in replies:
                    seen.append(json.loads(f.readline()))
                    f.write(reply + b'\n')
                    f.flush()

        thread = threading.Thread(target=serve, args=([
            b'{"return": {}}', b'{"event": "JOB"}\n{"return": {"ok": 1}}'],))
        thread.start()
        self.assertEqual({'ok': 1}, iscsi_loop.qmp(
            path, 'block_resize', {'node-name': 'lun', 'size': 5}))
        thread.join(10)
        self.assertEqual(['qmp_capabilities', 'block_resize'],
                         [m['execute'] for m in seen])
        self.assertEqual({'node-name': 'lun', 'size': 5},
                         seen[1]['arguments'])
        thread = threading.Thread(target=serve, args=([
            b'{"return": {}}', b'{"error": {"desc": "Cannot grow"}}'],))
        thread.start()
        err = self.assertRaises(iscsi_loop.AttachError, iscsi_loop.qmp,
                                path, 'block_resize')
        thread.join(10)
        self.assertIn('Cannot grow', str(err))

    def _attachment_on(self, loop):
        base = self.useFixture(fixtures.TempDir()).path
        att = iscsi_loop.Attachment(base, iscsi_loop.Target(
            'h:1', 'iqn', 1, 'ini'))
        os.makedirs(att.dir)
        with open(att.loopfile, 'w') as f:
            f.write(loop)
        return att

    @mock.patch.object(iscsi_loop, '_mounted', return_value=False)
    @mock.patch.object(iscsi_loop, '_run')
    def test_detach_ends_when_the_device_serves_another_file(self, run,
                                                             _mounted):
        # The moment the kernel frees the device, another process's
        # losetup --find may bind it to a file of its own: the detach is
        # done, the device is not "still in use".
        att = self._attachment_on('/dev/loop7')
        ours = os.path.realpath(att.export)
        theirs = self.useFixture(fixtures.TempDir()).join('part.img')
        reads = iter([ours, ours, ours])
        with mock.patch.object(iscsi_loop.Attachment, '_loop_backing',
                               side_effect=lambda _l: next(reads, theirs)):
            att.detach(timeout=1)
        self.assertEqual([['blockdev', '--flushbufs', '/dev/loop7'],
                          ['losetup', '--detach', '/dev/loop7']],
                         [c[0][0] for c in run.call_args_list])
        self.assertFalse(os.path.exists(att.dir))

    @mock.patch.object(iscsi_loop, '_mounted', return_value=False)
    @mock.patch.object(iscsi_loop, '_run')
    def test_detach_of_a_device_still_ours_is_an_error(self, run, _mounted):
        att = self._attachment_on('/dev/loop7')
        with mock.patch.object(iscsi_loop.Attachment, '_loop_backing',
                               return_value=os.path.realpath(att.export)):
            err = self.assertRaises(iscsi_loop.AttachError, att.detach,
                                    timeout=0.3)
            self.assertIn('/dev/loop7 is still in use', str(err))
            self.assertTrue(os.path.isdir(att.dir))
            att.detach(timeout=0.3, force=True)
        self.assertFalse(os.path.exists(att.dir))


class FakeBed(object):
    passwords = {'admin': 'p-admin', 'db': 'p-db', 'service': 'p-svc'}
    cloud = {'image': 'img-1', 'flavor': 'fl-1', 'flavor_alt': 'fl-2',
             'network': 'net-1', 'network_name': 'provider'}


class ConfigurationTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.ctx = conf.Context('/bed', '/bed/logs', '/venv',
                                'mysql+pymysql://os:p-db@127.0.0.1',
                                'p-svc', 'qemu:///system?socket=/s/sock',
                                'rabbit://guest:guest@127.0.0.1:5672/')

    def parse(self, text):
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(text)
        return parser

    def test_nova(self):
        nova = self.parse(conf.nova(self.ctx))
        self.assertEqual('qemu', nova['libvirt']['virt_type'])
        self.assertEqual('qemu:///system?socket=/s/sock',
                         nova['libvirt']['connection_uri'])
        self.assertEqual('True', nova['DEFAULT']['force_config_drive'])
        self.assertEqual('True',
                         nova['service_user']['send_service_user_token'])
        for section in ('placement', 'neutron', 'cinder', 'service_user',
                        'keystone_authtoken'):
            self.assertEqual('p-svc', nova[section]['password'], section)
        self.assertTrue(nova['nova_sys_admin']['helper_command'].startswith(
            '/venv/bin/privsep-helper --config-file /bed/nova/nova.conf'))
        self.assertIn('/nova?charset=utf8', nova['database']['connection'])
        self.assertIn('/nova_api?', nova['api_database']['connection'])

    def test_no_sudo_anywhere(self):
        for text in (conf.nova(self.ctx), conf.neutron(self.ctx),
                     conf.glance(self.ctx), conf.placement(self.ctx)):
            self.assertNotIn('sudo', text)
        self.assertEqual('env', self.parse(conf.neutron(self.ctx))[
            'agent']['root_helper'])

    def test_neutron_macvtap_on_the_bed_interface(self):
        ml2 = self.parse(conf.ml2(self.ctx))
        self.assertEqual('macvtap', ml2['ml2']['mechanism_drivers'])
        self.assertEqual(network.PHYSNET,
                         ml2['ml2_type_flat']['flat_networks'])
        agent = self.parse(conf.macvtap_agent(self.ctx))
        self.assertEqual('%s:%s' % (network.PHYSNET, network.PHYS),
                         agent['macvtap']['physical_interface_mappings'])
        self.assertEqual('noop', agent['securitygroup']['firewall_driver'])
        # Nova binds ports on its own host name: the agent reports that.
        self.assertEqual(conf.COMPUTE_HOST, agent['DEFAULT']['host'])
        nova = self.parse(conf.nova(self.ctx))
        self.assertEqual(conf.COMPUTE_HOST, nova['DEFAULT']['host'])

    def test_glance_file_store(self):
        glance = self.parse(conf.glance(self.ctx))
        self.assertEqual('file', glance['glance_store']['default_backend'])
        self.assertEqual('/bed/glance/images',
                         glance['file']['filesystem_store_datadir'])

    def test_cinder_reaches_nova(self):
        extra = self.parse(conf.cinder_extra(self.ctx, '/bed/cinder.conf',
                                             '/tox/bin/privsep-helper'))
        self.assertEqual('nova', extra['nova']['username'])
        self.assertEqual('password', extra['nova']['auth_type'])
        self.assertEqual('/tox/bin/privsep-helper --config-file '
                         '/bed/cinder.conf',
                         extra['privsep_osbrick']['helper_command'])

    def test_interface_names_fit_the_kernel(self):
        for name in (network.PHYS, network.PEER, network.HOST_IF):
            self.assertLessEqual(len(name), 15, name)
        host = ipaddress.ip_address(network.HOST_IP)
        first, last = (ipaddress.ip_address(a) for a in network.POOL)
        self.assertIn(host, network.CIDR)
        self.assertIn(last, network.CIDR)
        self.assertFalse(first <= host <= last)

    def test_libvirtd_stays_in_the_bed_directory(self):
        lv = libvirtd.Libvirtd('/bed', '/bed/logs')
        self.assertEqual('qemu:///system?socket=/bed/libvirt/sock/'
                         'libvirt-sock', lv.uri)
        cmd = lv.command()
        self.assertEqual(['unshare', '--mount'], cmd[:2])
        args = cmd[cmd.index('libvirtd-bed') + 1:cmd.index('--')]
        pairs = dict(zip(args[1::2], args[0::2]))
        self.assertEqual(set(libvirtd.SYSTEM_DIRS), set(pairs))
        for dst, src in pairs.items():
            self.assertTrue(src.startswith('/bed/libvirt/'), src)

    def test_tempest_conf_enables_compute_and_the_scenarios(self):
        text = compute_run.tempest_conf(FakeBed())
        parsed = self.parse(text)
        for service in ('nova', 'glance', 'neutron', 'cinder'):
            self.assertEqual('True', parsed['service_available'][service])
        self.assertEqual('img-1', parsed['compute']['image_ref'])
        self.assertEqual('provider', parsed['validation']['network_for_ssh'])
        self.assertEqual('True', parsed['volume-feature-enabled'][
            'extend_attached_volume'])
        # Our plugin's options take what the bed writes.
        opts = cfg.ConfigOpts()
        plugin.CinderFlashTempestPlugin().register_opts(opts)
        path = self.useFixture(fixtures.TempDir()).join('tempest.conf')
        with open(path, 'w') as f:
            f.write(text)
        opts(['--config-file', path])
        mongo = opts.cinder_flash_mongodb
        self.assertEqual('ferretdb', mongo.server)
        self.assertEqual(['standalone', 'replica-set', 'sharded'],
                         mongo.topologies)
        self.assertIn('TCG', mongo.run_label)
        self.assertTrue(opts.cinder_flash_feature_enabled.mongodb_scenarios)


class ResultsTestCase(testtools.TestCase):

    def test_tables_come_from_the_results_stream(self):
        import io

        import subunit
        out = io.BytesIO()
        stream = subunit.StreamResultToBytes(out)
        stream.status(test_id='t.standalone', test_status='inprogress')
        stream.status(test_id='t.standalone', file_name=report.DETAIL_NAME,
                      file_bytes=b'| standalone | dedup |', eof=True,
                      mime_type='text/plain; charset=utf8')
        stream.status(test_id='t.standalone', file_name='other',
                      file_bytes=b'not a table', eof=True)
        stream.status(test_id='t.standalone', test_status='success')
        self.assertEqual(['| standalone | dedup |'],
                         compute_run.mongodb_tables(out.getvalue()))


def _guest_script():
    path = os.path.join(os.path.dirname(image.__file__), 'guest',
                        'guest-config-drive')
    loader = importlib.machinery.SourceFileLoader('guest_config_drive', path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class GuestTestCase(testtools.TestCase):

    NET = {'links': [{'id': 'tap1', 'mtu': 1450,
                      'ethernet_mac_address': 'FA:16:3E:00:00:01'}],
           'networks': [{'link': 'tap1', 'type': 'ipv4',
                         'ip_address': '10.217.0.23',
                         'netmask': '255.255.255.0',
                         'routes': [{'network': '0.0.0.0',
                                     'netmask': '0.0.0.0',
                                     'gateway': '10.217.0.1'}]}],
           'services': [{'type': 'dns', 'address': '10.217.0.1'}]}

    def test_static_address_from_network_data(self):
        guest = _guest_script()
        commands = []
        resolv = self.useFixture(fixtures.TempDir()).join('resolv.conf')
        with mock.patch.object(guest, 'run',
                               side_effect=lambda *c: commands.append(c)), \
                mock.patch.object(guest, 'interfaces',
                                  return_value={'fa:16:3e:00:00:01': 'eth0'}):
            guest.configure_network(self.NET, resolv)
        self.assertIn(('ip', 'link', 'set', 'eth0', 'mtu', '1450'), commands)
        self.assertIn(('ip', 'addr', 'add', '10.217.0.23/24', 'dev', 'eth0'),
                      commands)
        self.assertIn(('ip', 'route', 'add', '0.0.0.0/0', 'via',
                       '10.217.0.1', 'dev', 'eth0'), commands)
        with open(resolv) as f:
            self.assertEqual('nameserver 10.217.0.1\n', f.read())

    def test_dhcp_network_and_unknown_mac(self):
        guest = _guest_script()
        net = {'links': self.NET['links'],
               'networks': [dict(self.NET['networks'][0],
                                 type='ipv4_dhcp')]}
        with mock.patch.object(guest, 'dhcp') as dhcp, \
                mock.patch.object(guest, 'run'), \
                mock.patch.object(guest, 'interfaces',
                                  return_value={'fa:16:3e:00:00:01': 'eth0'}):
            guest.configure_network(net)
        dhcp.assert_called_once_with('eth0')
        commands = []
        with mock.patch.object(guest, 'run',
                               side_effect=lambda *c: commands.append(c)), \
                mock.patch.object(guest, 'interfaces', return_value={}):
            guest.configure_network(self.NET, os.devnull)
        self.assertFalse([c for c in commands if 'addr' in c])


class ImageRecipeTestCase(testtools.TestCase):

    def _file(self, name, text):
        """A file of its own in a directory of its own, removed after."""
        where = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(where, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def test_mirror_from_apt_sources(self):
        sources = self._file(
            'debian.sources',
            'Types: deb\nURIs: http://deb.example/debian-security\n'
            'Suites: bookworm-security\n\nTypes: deb\n'
            'URIs: http://deb.example/debian\nSuites: bookworm\n')
        with mock.patch.object(image.glob, 'glob', return_value=[sources]), \
                mock.patch.dict(os.environ, clear=False) as env:
            env.pop('CINDER_FLASH_DEBIAN_MIRROR', None)
            self.assertEqual('http://deb.example/debian', image.mirror())
            env['CINDER_FLASH_DEBIAN_MIRROR'] = 'http://other/debian'
            self.assertEqual('http://other/debian', image.mirror())

    def test_a_changed_guest_file_is_a_new_image(self):
        copy = self.useFixture(fixtures.TempDir()).join('guest')
        shutil.copytree(image.GUEST_FILES, copy)
        with mock.patch.object(image, 'GUEST_FILES', copy):
            before = image.path()
            with open(os.path.join(copy, 'inittab'), 'a') as f:
                f.write('# changed\n')
            self.assertNotEqual(before, image.path())
        self.assertTrue(before.endswith('.qcow2'))

    def test_the_base_image_is_a_recipe_of_its_own(self):
        full, base = image.path(), image.path(server=False)
        self.assertNotEqual(full, base)
        self.assertIn('-base-', os.path.basename(base))
        self.assertNotIn('-base-', os.path.basename(full))

    def _customised(self, server):
        root = self.useFixture(fixtures.TempDir()).path
        for sub in ('boot', 'sbin'):
            os.makedirs(os.path.join(root, sub))
        for name in ('vmlinuz-6', 'initrd.img-6'):
            open(os.path.join(root, 'boot', name), 'w').close()
        with mock.patch.object(image, '_run'):
            image._customise(root, server,
                             'b0a1c2d3-0000-4000-8000-000000000000')
        return root

    def test_only_the_full_image_has_the_database_server(self):
        binary = self._file('ferretdb', 'server')
        full = self._customised(binary)
        base = self._customised(None)
        for rel in ('usr/local/bin/mongod', 'usr/local/bin/ferretdb'):
            self.assertTrue(os.path.exists(os.path.join(full, rel)), rel)
            self.assertFalse(os.path.exists(os.path.join(base, rel)), rel)
        self.assertTrue(os.path.exists(os.path.join(
            base, 'boot/extlinux/extlinux.conf')))

    def test_a_stuck_build_step_is_an_error_naming_it(self):
        with mock.patch.object(image.subprocess, 'run', side_effect=(
                image.subprocess.TimeoutExpired('debootstrap', 5))):
            e = self.assertRaises(image.ImageError, image._run,
                                  'debootstrap', '--variant=minbase')
        self.assertIn('debootstrap --variant=minbase: no end', str(e))

    def test_what_a_stopped_build_left_mounted_is_unmounted(self):
        work = self.useFixture(fixtures.TempDir()).path
        mounts = self._file('mounts', (
            'proc /proc proc rw 0 0\n'
            'proc %(w)s/root/proc proc rw 0 0\n'
            'sysfs %(w)s/root/sys sysfs rw 0 0\n'
            'devpts %(w)s/root/dev/pts devpts rw 0 0\n'
            'tmpfs %(w)s-other tmpfs rw 0 0\n') % {'w': work})
        with mock.patch.object(image.subprocess, 'run') as run:
            image._unmount_under(work, mounts)
        points = [c[0][0][-1] for c in run.call_args_list]
        self.assertEqual(os.path.join(work, 'root/dev/pts'), points[0])
        self.assertEqual(sorted(os.path.join(work, 'root', p)
                                for p in ('dev/pts', 'proc', 'sys')),
                         sorted(points))


class PrepareTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        patches = [
            mock.patch.object(prepare, 'cvenv_ready', return_value=False),
            mock.patch.object(prepare.os.path, 'exists', return_value=True)]
        for patch in patches:
            patch.start()
            self.addCleanup(patch.stop)

    def test_a_failed_step_is_named(self):
        def run(cmd, **kw):
            failed = 'pip' in os.path.basename(cmd[0])
            return mock.Mock(returncode=1 if failed else 0,
                             stdout='', stderr='No matching distribution')
        with mock.patch.object(prepare.subprocess, 'run', side_effect=run):
            e = self.assertRaises(prepare.PrepareError,
                                  prepare.ensure_cvenv)
        self.assertIn('pip install (compute services) failed', str(e))
        self.assertIn('No matching distribution', str(e))

    def test_a_step_past_its_time_limit_is_an_error(self):
        def run(cmd, **kw):
            if 'pip' in os.path.basename(cmd[0]):
                raise prepare.subprocess.TimeoutExpired(cmd, kw['timeout'])
            return mock.Mock(returncode=0, stdout='', stderr='')
        with mock.patch.object(prepare.subprocess, 'run', side_effect=run):
            e = self.assertRaises(prepare.PrepareError,
                                  prepare.ensure_cvenv)
        self.assertIn('pip install (compute services): no end', str(e))

    def test_both_failures_are_reported(self):
        with mock.patch.object(prepare, 'ensure_cvenv', side_effect=(
                prepare.PrepareError('venv broke'))), \
                mock.patch.object(prepare, 'ensure_image', side_effect=(
                    image.ImageError('mirror gone'))):
            e = self.assertRaises(prepare.PrepareError, prepare.prepare)
        self.assertIn('venv broke', str(e))
        self.assertIn('mirror gone', str(e))
