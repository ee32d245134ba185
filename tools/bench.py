"""Side-by-side benchmarks against one reference array, printed as ratios.

REST round-trip cost of our K2 client next to the vendor's krest 1.3.7
(what Cinder's in-tree Kaminario driver uses), for the same calls on the
same array in the same run. Results go to a JSON file.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from urllib import parse
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

from cinder_driver.k2 import client as k2_client  # noqa: E402


def start_array(data_dir):
    proc = subprocess.Popen(
        [sys.executable, '-m', 'reference_array', 'serve', '--data-dir',
         data_dir, '--log-file', os.path.join(data_dir, 'array.log')],
        stdout=subprocess.PIPE, text=True)
    return proc, json.loads(proc.stdout.readline())


def timed(fn, rounds):
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return samples


def summary(samples):
    ordered = sorted(samples)
    return {'calls': len(samples),
            'mean_ms': statistics.fmean(samples) * 1000,
            'p50_ms': ordered[len(ordered) // 2] * 1000,
            'p99_ms': ordered[min(len(ordered) - 1,
                                  int(len(ordered) * 0.99))] * 1000}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--rounds', type=int, default=300)
    parser.add_argument('--output', default=os.path.join(
        ROOT, 'bench-results.json'))
    args = parser.parse_args()
    import krest
    import urllib3
    # The in-tree driver runs krest unverified; its per-call warning is
    # not a benchmark result.
    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

    with tempfile.TemporaryDirectory() as data_dir:
        proc, info = start_array(data_dir)
        try:
            url = parse.urlsplit(info['k2'])
            ours = k2_client.K2Client(url.hostname, info['user'],
                                      info['password'], port=url.port,
                                      verify=info['ca_cert'])
            theirs = krest.EndPoint('%s:%s' % (url.hostname, url.port),
                                    info['user'], info['password'],
                                    ssl_validate=False)
            cases = {
                'system/state search': (
                    lambda: ours.system_state(),
                    lambda: theirs.search('system/state').hits[0]),
                'net_ips search': (
                    lambda: ours.search('system/net_ips'),
                    lambda: list(theirs.search('system/net_ips').hits)),
            }
            results = {}
            print('%-22s %12s %12s %8s' % ('operation', 'ours p50 ms',
                                           'krest p50 ms', 'ratio'))
            for name, (mine, vendor) in cases.items():
                a = summary(timed(mine, args.rounds))
                b = summary(timed(vendor, args.rounds))
                ratio = b['p50_ms'] / a['p50_ms'] if a['p50_ms'] else 0
                results[name] = {'ours': a, 'krest-1.3.7': b,
                                 'speedup_p50': ratio}
                print('%-22s %12.2f %12.2f %7.2fx' % (
                    name, a['p50_ms'], b['p50_ms'], ratio))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    with open(args.output, 'w') as f:
        json.dump({'machine': os.uname().nodename, 'cpus': os.cpu_count(),
                   'results': results}, f, indent=2)
    print('results written to %s' % args.output)
    return 0


if __name__ == '__main__':
    sys.exit(main())
