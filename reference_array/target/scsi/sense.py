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

"""Status, sense keys and the error a command handler raises."""

GOOD = 0x00
CHECK_CONDITION = 0x02
BUSY = 0x08

# Sense keys.
HARDWARE_ERROR = 0x04
ILLEGAL_REQUEST = 0x05
UNIT_ATTENTION = 0x06
DATA_PROTECT = 0x07

# (sense key, additional sense code, qualifier).
INVALID_OPCODE = (ILLEGAL_REQUEST, 0x20, 0x00)
INVALID_FIELD = (ILLEGAL_REQUEST, 0x24, 0x00)
LBA_OUT_OF_RANGE = (ILLEGAL_REQUEST, 0x21, 0x00)
LUN_NOT_SUPPORTED = (ILLEGAL_REQUEST, 0x25, 0x00)
WRITE_PROTECTED = (DATA_PROTECT, 0x27, 0x00)
# Thin provisioning: the pool has no room for the blocks.
SPACE_ALLOCATION_FAILED = (DATA_PROTECT, 0x27, 0x07)
PARAMETER_LIST_ERROR = (ILLEGAL_REQUEST, 0x1a, 0x00)
INTERNAL_FAILURE = (HARDWARE_ERROR, 0x44, 0x00)
INVALID_FIELD_IN_IU = (ILLEGAL_REQUEST, 0x0e, 0x03)


class SCSIError(Exception):
    """A command ends in CHECK CONDITION with this sense."""

    def __init__(self, key, asc, ascq=0):
        super().__init__(key, asc, ascq)
        self.key, self.asc, self.ascq = key, asc, ascq


def sense(key, asc, ascq=0):
    """Fixed-format sense data."""
    data = bytearray(18)
    data[0] = 0x70
    data[2] = key
    data[7] = 10
    data[12] = asc
    data[13] = ascq
    return bytes(data)
