#!/bin/bash
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

# The plugin's phases on a devstack tree's own function library (not on
# tests/stubs.sh): what stack.sh sources, then override-defaults, settings,
# the configure_cinder_backend_<type> loop of lib/cinder, post-config with
# a reference array on free ports, test-config, a check of the written
# backend, unstack and clean.
#
#   devstack/tests/on_devstack.sh DEVSTACK_DIR PYTHON
#
# PYTHON has Cinder and cinder-flash[array] installed. Everything it
# writes goes to a temporary directory, removed at the end.
set -eu
devstack_dir=$(cd "$1" && pwd)
python=$2
plugin=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

export TOP_DIR=$devstack_dir DEST=$work/opt DATA_DIR=$work/data
export CINDER_CONF=$work/cinder.conf TEMPEST_CONFIG=$work/tempest.conf
export ENABLED_SERVICES=c-vol,c-api,tempest
mkdir -p "$DEST" "$DATA_DIR"
free_ports='import socket
socks = [socket.socket() for _ in range(3)]
[s.bind(("127.0.0.1", 0)) for s in socks]
print(*(s.getsockname()[1] for s in socks))'
read -r CINDER_FLASH_ARRAY_PORT CINDER_FLASH_ARRAY_ISCSI_PORT \
    CINDER_FLASH_ARRAY_LINSTOR_PORT < <("$python" -c "$free_ports")
export CINDER_FLASH_ARRAY_PORT CINDER_FLASH_ARRAY_ISCSI_PORT
export CINDER_FLASH_ARRAY_LINSTOR_PORT
PYTHON=$python

set +u
# shellcheck source=/dev/null
source "$devstack_dir/functions"
set -u
# stack.sh defines it; the plugin calls it.
function echo_summary {
    echo "summary: $*"
}

CINDER_ENABLED_BACKENDS=lvm:lvmdriver-1
# shellcheck source=devstack/override-defaults
source "$plugin/override-defaults"
# shellcheck source=devstack/settings
source "$plugin/settings"
# shellcheck source=devstack/plugin.sh
source "$plugin/plugin.sh" stack pre-install
for entry in ${CINDER_ENABLED_BACKENDS//,/ }; do
    if type "configure_cinder_backend_${entry%%:*}" > /dev/null 2>&1; then
        "configure_cinder_backend_${entry%%:*}" "${entry#*:}"
    fi
done
# shellcheck source=devstack/plugin.sh
source "$plugin/plugin.sh" stack post-config
# shellcheck source=devstack/plugin.sh
source "$plugin/plugin.sh" stack test-config
status=0
"$python" -m cinder_driver.cmd.cli check --config-file "$CINDER_CONF" \
    --backend "${CINDER_FLASH_BACKENDS#*:}" || status=$?
echo "== tempest.conf"
cat "$TEMPEST_CONFIG"
# shellcheck source=devstack/plugin.sh
source "$plugin/plugin.sh" unstack
# shellcheck source=devstack/plugin.sh
source "$plugin/plugin.sh" clean
exit $status
