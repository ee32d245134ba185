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

# Runs the plugin's phases as stack.sh/unstack.sh would, on stand-ins.
# Usage: run_plugin.sh PHASE... (stack:install, configure, stack:post-config,
# stack:test-config, unstack, clean); the environment gives the settings.
set -e
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=devstack/tests/stubs.sh
source "$here/tests/stubs.sh"
# shellcheck source=devstack/override-defaults
source "$here/override-defaults"
# shellcheck source=devstack/settings
source "$here/settings"
echo "CINDER_ENABLED_BACKENDS=$CINDER_ENABLED_BACKENDS" >> "$STUB_LOG"
for phase in "$@"; do
    case $phase in
        configure)
            # What lib/cinder's configure_cinder does for each backend.
            # shellcheck source=devstack/lib/cinder-flash
            source "$here/lib/cinder-flash"
            for entry in ${CINDER_ENABLED_BACKENDS//,/ }; do
                type=${entry%%:*}
                name=${entry#*:}
                if type "configure_cinder_backend_$type" > /dev/null 2>&1; then
                    "configure_cinder_backend_$type" "$name"
                fi
            done
            ;;
        *:*)
            # shellcheck source=devstack/plugin.sh
            source "$here/plugin.sh" "${phase%%:*}" "${phase#*:}"
            ;;
        *)
            # shellcheck source=devstack/plugin.sh
            source "$here/plugin.sh" "$phase"
            ;;
    esac
done
