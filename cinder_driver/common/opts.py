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

"""oslo.config entry point: every option cinder-flash registers.

Backend options live in Cinder's ``backend_defaults`` group and are
grafted onto each backend section, which is where operators set them.
"""

import copy
import itertools

from cinder_driver.common import options as common_options
from cinder_driver.k2 import options as k2_options
from cinder_driver.linstor import options as linstor_options

BACKEND_GROUP = 'backend_defaults'


def backend_opts():
    return list(itertools.chain(common_options.rest_opts,
                                common_options.lock_opts,
                                k2_options.k2_opts,
                                linstor_options.linstor_opts))


def list_opts():
    return [(BACKEND_GROUP, copy.deepcopy(backend_opts()))]
