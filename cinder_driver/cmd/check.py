"""The checks behind ``cinder-flash check``."""

import socket
import ssl
import time

from oslo_config import cfg

from cinder_driver.common import exception
from cinder_driver.common import options as common_options
from cinder_driver.common import tls
from cinder_driver.common import versions
from cinder_driver.k2 import client as k2_client
from cinder_driver.k2 import options as k2_options
from cinder_driver.k2 import rest as k2_rest
from cinder_driver.linstor import client as linstor_client
from cinder_driver.linstor import options as linstor_options

PASS, FAIL, WARN, SKIP = 'PASS', 'FAIL', 'WARN', 'SKIP'

DRIVERS = {
    'cinder_driver.k2.driver.K2ISCSIDriver': ('k2', 'iSCSI'),
    'cinder_driver.k2.driver.K2FCDriver': ('k2', 'FC'),
    'cinder_driver.linstor.driver.LinstorDrbdDriver': ('linstor', 'DRBD'),
    'cinder_driver.linstor.driver.LinstorISCSIDriver': ('linstor', 'iSCSI'),
}


class Report(object):

    def __init__(self, backend):
        self.backend = backend
        self.results = []

    def add(self, verdict, name, detail):
        self.results.append((verdict, name, detail))
        return verdict

    @property
    def ok(self):
        return bool(self.results) and all(
            v in (PASS, WARN) for v, _n, _d in self.results)

    def lines(self):
        for verdict, name, detail in self.results:
            yield '%-4s  %-12s %s' % (verdict, name, detail)
        failed = sum(1 for v, _n, _d in self.results if v == FAIL)
        if self.ok:
            yield 'backend %s: ready' % self.backend
        else:
            yield 'backend %s: NOT ready (%d check(s) failed)' % (
                self.backend, failed)


def _load(config_files, backend):
    """The backend's configuration as cinder-volume builds it."""
    from cinder.common import config as cinder_config  # noqa: F401
    from cinder import objects
    objects.register_all()
    from cinder.volume import configuration
    from cinder.volume import driver as volume_driver
    from cinder.volume.drivers.san import san
    from cinder.volume import manager

    conf = cfg.CONF
    conf(['--config-file=%s' % f for f in config_files], project='cinder',
         default_config_files=[], default_config_dirs=[])
    if backend not in conf.list_all_sections():
        return None
    backend_conf = configuration.Configuration(volume_driver.volume_opts,
                                               config_group=backend)
    for opts in (manager.volume_backend_opts, san.san_opts,
                 common_options.rest_opts,
                 k2_options.k2_opts, linstor_options.linstor_opts):
        backend_conf.append_config_values(opts)
    return backend_conf


def run(config_files, backend):
    report = Report(backend)
    try:
        conf = _load(config_files, backend)
    except (cfg.Error, OSError) as e:
        report.add(FAIL, 'config', 'cannot read configuration: %s' % e)
        return report
    if conf is None:
        report.add(FAIL, 'config', 'no section [%s] in %s' % (
            backend, ', '.join(config_files)))
        return report
    try:
        driver = conf.volume_driver
        family = DRIVERS.get(driver)
        if family is None:
            report.add(FAIL, 'config', 'volume_driver=%s is not a '
                       'cinder-flash driver (expected one of: %s)' % (
                           driver, ', '.join(sorted(DRIVERS))))
            return report
        verify = tls.verify(conf, family[0], log=None)
    except (cfg.Error, ValueError) as e:
        report.add(FAIL, 'config', str(e))
        return report
    try:
        if family[0] == 'linstor':
            _check_linstor(report, conf, family[1], verify)
        else:
            _check_k2(report, conf, family[1], verify)
    except (cfg.Error, ValueError) as e:
        # A bad value is only read when an option is first used.
        report.add(FAIL, 'config', str(e))
    return report


def _k2_endpoint(conf):
    host = conf.san_ip
    port = conf.safe_get('san_api_port') or k2_rest.DEFAULT_PORT
    return host, port


def _check_k2(report, conf, protocol, verify):
    host, port = _k2_endpoint(conf)
    missing = [name for name in ('san_ip', 'san_login', 'san_password')
               if not conf.safe_get(name)]
    if missing:
        report.add(FAIL, 'config', 'not set in [%s]: %s' % (
            conf.config_group, ', '.join(missing)))
        return
    report.add(PASS, 'config', 'K2 %s driver, array %s:%s, user %s' % (
        protocol, host, port, conf.san_login))

    timeout = conf.flash_rest_connect_timeout
    if not _reachable(report, host, port, timeout):
        for name in ('tls', 'credentials', 'api', 'ports', 'capacity'):
            report.add(SKIP, name, 'array not reachable')
        return
    if not _tls(report, host, port, verify, timeout):
        for name in ('credentials', 'api', 'ports', 'capacity'):
            report.add(SKIP, name, 'TLS failed')
        return

    client = k2_rest.K2Rest(
        host, conf.san_login, conf.san_password, port=port, verify=verify,
        connect_timeout=timeout, read_timeout=conf.flash_rest_read_timeout,
        retries=0)
    try:
        client.discover()
        state = client.system_state()
    except exception.ArrayAuthError:
        report.add(FAIL, 'credentials', 'user %s was refused (HTTP 401): '
                   'check san_login and san_password' % conf.san_login)
        for name in ('api', 'ports', 'capacity'):
            report.add(SKIP, name, 'not logged in')
        return
    except exception.ArrayAPIError as e:
        report.add(FAIL, 'credentials', 'the array REST service did not '
                   'answer as a K2 does: %s' % e.msg)
        return
    report.add(PASS, 'credentials', 'user %s accepted' % conf.san_login)
    _api(report, state)
    if protocol == 'iSCSI':
        _iscsi_ports(report, client, conf, state)
    else:
        _fc_ports(report, client)
    _capacity(report, client)


def _check_linstor(report, conf, protocol, verify):
    from urllib import parse

    try:
        urls = [linstor_client.base_url(u) for u in conf.linstor_uris]
    except exception.InvalidBackendConfig as e:
        report.add(FAIL, 'config', e.msg)
        return
    if not urls:
        report.add(FAIL, 'config', 'linstor_uris is empty')
        return
    node = conf.linstor_local_node or socket.gethostname()
    report.add(PASS, 'config', 'LINSTOR %s driver, controllers %s, pool %s, '
               '%d replicas' % (protocol, ', '.join(urls),
                                conf.linstor_storage_pool,
                                conf.linstor_placement_count))
    timeout = conf.flash_rest_connect_timeout
    answering = None
    for url in urls:
        parsed = parse.urlsplit(url)
        if _connect(parsed.hostname, parsed.port, timeout) is None:
            answering = url
            break
    if answering is None:
        report.add(FAIL, 'reachable', 'no controller answered: %s' %
                   ', '.join(urls))
        for name in ('tls', 'credentials', 'api', 'ports', 'capacity'):
            report.add(SKIP, name, 'controller not reachable')
        return
    report.add(PASS, 'reachable', '%s answered' % answering)
    parsed = parse.urlsplit(answering)
    if parsed.scheme == 'https':
        if not _tls(report, parsed.hostname, parsed.port, verify, timeout):
            for name in ('credentials', 'api', 'ports', 'capacity'):
                report.add(SKIP, name, 'TLS failed')
            return
    else:
        report.add(WARN, 'tls', 'plain HTTP to %s: use linstor+ssl:// or '
                   'https:// outside a trusted network' % answering)
    cert = conf.linstor_client_cert
    if cert and conf.linstor_client_key:
        cert = (cert, conf.linstor_client_key)
    client = linstor_client.LinstorClient(
        [answering], username=conf.linstor_username,
        password=conf.linstor_password, verify=verify, client_cert=cert,
        connect_timeout=timeout, read_timeout=conf.flash_rest_read_timeout,
        retries=0)
    try:
        version = client.version()
    except exception.ArrayAuthError:
        report.add(FAIL, 'credentials', 'the controller refused user %s' %
                   conf.linstor_username)
        for name in ('api', 'ports', 'capacity'):
            report.add(SKIP, name, 'not logged in')
        return
    except exception.ArrayAPIError as e:
        report.add(FAIL, 'credentials', 'the controller did not answer as '
                   'LINSTOR does: %s' % e.msg)
        return
    report.add(PASS, 'credentials', 'controller %s accepted the client' %
               version.get('version', '?'))
    if not versions.at_least(version['rest_api_version'],
                             linstor_client.MIN_API_VERSION):
        report.add(FAIL, 'api', 'REST API %s; at least %s is needed' % (
            version['rest_api_version'],
            versions.dotted(linstor_client.MIN_API_VERSION)))
    else:
        report.add(PASS, 'api', 'REST API %s' % version['rest_api_version'])
    nodes = {n.get('name'): n for n in client.nodes()}
    online = sorted(n for n, v in nodes.items()
                    if v.get('connection_status') == 'ONLINE')
    if protocol == 'iSCSI' and node not in nodes:
        report.add(FAIL, 'ports', 'this host (linstor_local_node=%s) is '
                   'not a LINSTOR node; it exports volumes over iSCSI' %
                   node)
    elif not online:
        report.add(FAIL, 'ports', 'no LINSTOR node is ONLINE')
    else:
        report.add(PASS, 'ports', '%d of %d nodes ONLINE' % (
            len(online), len(nodes)))
    pools = [p for p in client.storage_pools()
             if p.get('storage_pool_name') == conf.linstor_storage_pool]
    free = sum(p.get('free_capacity') or 0 for p in pools)
    if len(pools) < conf.linstor_placement_count:
        report.add(FAIL, 'capacity', 'storage pool %s is on %d node(s); '
                   'linstor_placement_count=%d needs more' % (
                       conf.linstor_storage_pool, len(pools),
                       conf.linstor_placement_count))
    elif free <= 0:
        report.add(FAIL, 'capacity', 'storage pool %s is full' %
                   conf.linstor_storage_pool)
    else:
        report.add(PASS, 'capacity', 'storage pool %s: %.1f GiB free on %d '
                   'nodes' % (conf.linstor_storage_pool, free / 2.0 ** 20,
                              len(pools)))


def _connect(host, port, timeout):
    """None if a TCP connection opens, else why not."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as e:
        return e.strerror or str(e)


def _reachable(report, host, port, timeout):
    started = time.monotonic()
    error = _connect(host, port, timeout)
    if error:
        report.add(FAIL, 'reachable', '%s:%s: %s' % (host, port, error))
        return False
    report.add(PASS, 'reachable', '%s:%s answered in %.0f ms' % (
        host, port, (time.monotonic() - started) * 1000))
    return True


def _tls(report, host, port, verify, timeout):
    if verify is False:
        report.add(WARN, 'tls', 'certificate NOT verified: '
                   'driver_ssl_cert_verify=False in this section')
        return True
    ctx = ssl.create_default_context()
    source = 'system CA store'
    if isinstance(verify, str):
        source = verify
        try:
            ctx = ssl.create_default_context(cafile=verify)
        except (OSError, ssl.SSLError) as e:
            report.add(FAIL, 'tls', 'driver_ssl_cert_path=%s cannot be '
                       'read: %s' % (verify, e))
            return False
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            with ctx.wrap_socket(s, server_hostname=host) as tls:
                version = tls.version()
    except ssl.SSLCertVerificationError as e:
        report.add(FAIL, 'tls', 'certificate not trusted (%s) against %s; '
                   'set driver_ssl_cert_path to the array CA' % (
                       e.verify_message, source))
        return False
    except (OSError, ssl.SSLError) as e:
        report.add(FAIL, 'tls', 'TLS handshake failed: %s' % e)
        return False
    report.add(PASS, 'tls', '%s, certificate verified against %s' % (
        version, source))
    return True


def _api(report, state):
    version = state.get('rest_api_version')
    name = state.get('system_name', '?')
    if not versions.at_least(version, k2_client.MIN_API_VERSION):
        report.add(FAIL, 'api', 'array %s has REST API %s; at least %s '
                   'is needed' % (name, version, versions.dotted(
                       k2_client.MIN_API_VERSION)))
    elif str(state.get('state', '')).upper() != 'ONLINE':
        report.add(FAIL, 'api', 'array %s is %s, not ONLINE' % (
            name, state.get('state')))
    else:
        report.add(PASS, 'api', 'array %s, REST API %s, ONLINE' % (
            name, version))


def _iscsi_ports(report, client, conf, state):
    if not state.get('iscsi_qualified_target_name'):
        report.add(FAIL, 'ports', 'the array reports no iSCSI target IQN')
        return
    portals = sorted(set(client.iscsi_addresses()))
    wanted = [p.rsplit(':', 1)[0] if p.count(':') == 1 else p
              for p in conf.k2_iscsi_portals]
    unknown = [p for p in wanted if p not in portals]
    if not portals:
        report.add(FAIL, 'ports', 'the array has no iSCSI data address')
    elif unknown:
        report.add(FAIL, 'ports', 'k2_iscsi_portals lists %s, not iSCSI '
                   'addresses of the array (it has: %s)' % (
                       ', '.join(unknown), ', '.join(portals)))
    else:
        report.add(PASS, 'ports', 'iSCSI target %s on %s' % (
            state['iscsi_qualified_target_name'],
            ', '.join(wanted or portals)))


def _fc_ports(report, client):
    ports = [p.get('pwwn') for p in client.search('system/fc_ports')
             if p.get('pwwn')]
    if ports:
        report.add(PASS, 'ports', 'FC target ports %s' % ', '.join(ports))
    else:
        report.add(FAIL, 'ports', 'the array reports no FC target port')


def _capacity(report, client):
    cap = client.find('system/capacity') or {}
    total, free = cap.get('total'), cap.get('free')
    if not isinstance(total, int) or not isinstance(free, int):
        report.add(FAIL, 'capacity', 'system/capacity has no total/free')
    elif free <= 0:
        report.add(FAIL, 'capacity', 'the array is full (%d KiB total)' %
                   total)
    else:
        report.add(PASS, 'capacity', '%.1f GiB free of %.1f GiB' % (
            free / 2.0 ** 20, total / 2.0 ** 20))
