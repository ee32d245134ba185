#!/bin/bash
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
