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

"""SCSI command sets (SPC-4, SBC-3 subset) over the array's devices.

The iSCSI session and the devices use what is named here; this package
knows nothing of iSCSI or of the K2 and LINSTOR models. ``execute``
returns ``(status, data_in, sense)`` for one CDB.
"""

from reference_array.target.scsi import sbc
from reference_array.target.scsi import sense
from reference_array.target.scsi import spc

BLOCK = sbc.BLOCK
# The most data one command moves either way.
MAX_TRANSFER = sbc.MAX_TRANSFER_BLOCKS * sbc.BLOCK
GOOD = sense.GOOD
CHECK_CONDITION = sense.CHECK_CONDITION
BUSY = sense.BUSY
SCSIError = sense.SCSIError
LUN_NOT_SUPPORTED = sense.LUN_NOT_SUPPORTED
SPACE_ALLOCATION_FAILED = sense.SPACE_ALLOCATION_FAILED
encode_lun = spc.encode_lun
decode_lun = spc.decode_lun

# Every LUN is a block device.
execute = sbc.BLOCK_DEVICE.execute
check = sbc.BLOCK_DEVICE.check
data_out_length = sbc.BLOCK_DEVICE.data_out_length
