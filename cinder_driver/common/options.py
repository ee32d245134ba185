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

"""Options every cinder-flash backend reads, whatever the array family."""

from oslo_config import cfg

rest_opts = [
    cfg.FloatOpt('flash_rest_connect_timeout',
                 default=10.0, min=0.1, max=300.0,
                 help='Seconds to wait for a TCP/TLS connection to the '
                      'array management endpoint before the call fails.'),
    cfg.FloatOpt('flash_rest_read_timeout',
                 default=60.0, min=1.0, max=3600.0,
                 help='Seconds to wait for the array to answer one REST '
                      'request. A call never blocks cinder-volume longer '
                      'than (retries + 1) times this value.'),
    cfg.IntOpt('flash_rest_retries',
               default=4, min=0, max=20,
               help='How many times a REST call is retried when the array '
                    'answers busy (HTTP 503, 5xx or an array busy code) or '
                    'the connection could not be opened.'),
    cfg.FloatOpt('flash_rest_retry_backoff',
                 default=1.0, min=0.0, max=60.0,
                 help='Seconds before the first retry; each further retry '
                      'waits twice as long, capped at 30 seconds.'),
]

lock_opts = [
    cfg.FloatOpt('flash_lock_wait',
                 default=30.0, min=1.0, max=3600.0,
                 help='Seconds an attach or a detach waits for its host\'s '
                      'lock, shared through [coordination] by the services '
                      'of a cluster, before it fails without changing '
                      'anything on the array. Keep it below cinder-api\'s '
                      'rpc_response_timeout less the slowest attach, and '
                      'above the coordinator\'s lock lease (a lock held by '
                      'a service that died frees itself after it).'),
]
