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
                                k2_options.k2_opts,
                                linstor_options.linstor_opts))


def list_opts():
    return [(BACKEND_GROUP, copy.deepcopy(backend_opts()))]
