"""Quick start: a reference array and a checked cinder.conf backend.

Starts the embedded reference array, writes the cinder.conf section an
operator would write for it, validates it with ``cinder-flash check``,
prints the generated option reference, and stops the array again.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from urllib import parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)


def step(text):
    print('\n== %s' % text, flush=True)


def start_array(data_dir):
    proc = subprocess.Popen(
        [sys.executable, '-m', 'reference_array', 'serve', '--data-dir',
         data_dir, '--log-file', os.path.join(data_dir, 'array.log')],
        stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line:
        raise SystemExit('the reference array did not start; see %s' %
                         os.path.join(data_dir, 'array.log'))
    return proc, json.loads(line)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--state-dir', default=os.path.join(ROOT, '.demo'))
    args = parser.parse_args()
    data_dir = os.path.join(args.state_dir, 'array')
    os.makedirs(data_dir, exist_ok=True)

    step('starting the reference array (state in %s)' % data_dir)
    proc, info = start_array(data_dir)
    try:
        url = parse.urlsplit(info['k2'])
        print('K2 REST API: %s  (CA certificate %s)' % (
            info['k2'], info['ca_cert']))
        conf = os.path.join(args.state_dir, 'cinder.conf')
        section = '\n'.join([
            '[DEFAULT]', 'enabled_backends = k2-iscsi', '',
            '[k2-iscsi]',
            'volume_driver = cinder_driver.k2.driver.K2ISCSIDriver',
            'volume_backend_name = k2-iscsi',
            'san_ip = %s' % url.hostname,
            'san_api_port = %s' % url.port,
            'san_login = %s' % info['user'],
            'san_password = %s' % info['password'],
            'driver_ssl_cert_path = %s' % info['ca_cert'], ''])
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write(section)
        step('cinder.conf backend section (%s)' % conf)
        print(section.replace(info['password'], '********'))

        step('cinder-flash check --config-file %s --backend k2-iscsi' % conf)
        started = time.monotonic()
        check = subprocess.run([os.path.join(BIN, 'cinder-flash'), 'check',
                                '--config-file', conf, '--backend',
                                'k2-iscsi'])
        print('(%.1f s)' % (time.monotonic() - started))

        step('oslo-config-generator --namespace cinder_flash')
        gen = subprocess.run([os.path.join(BIN, 'oslo-config-generator'),
                              '--namespace', 'cinder_flash'],
                             capture_output=True, text=True)
        options = re.findall(r'(?m)^#(\w+) =', gen.stdout)
        print('%d options: %s' % (len(options), ', '.join(options)))
    finally:
        step('stopping the reference array')
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        print('array exited with %d' % code)
    ok = check.returncode == 0 and gen.returncode == 0 and code == 0
    step('quick start %s' % ('OK' if ok else 'FAILED'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
