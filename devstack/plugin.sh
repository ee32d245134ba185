#!/bin/bash
# cinder-flash devstack plugin:
#   enable_plugin cinder-flash <git url of this repository>
# See devstack/README.rst.

# shellcheck source=devstack/lib/cinder-flash
source "$(dirname "${BASH_SOURCE[0]}")/lib/cinder-flash"

if [[ "$1" == "stack" ]]; then
    case "$2" in
        install)
            echo_summary "Installing cinder-flash"
            install_cinder_flash
            ;;
        post-config)
            echo_summary "Starting the cinder-flash reference array"
            start_cinder_flash_array
            ;;
        test-config)
            if is_service_enabled tempest; then
                echo_summary "Configuring Tempest for cinder-flash"
                configure_tempest_for_cinder_flash
            fi
            ;;
    esac
fi

if [[ "$1" == "unstack" ]]; then
    stop_cinder_flash_array
fi

if [[ "$1" == "clean" ]]; then
    stop_cinder_flash_array
    rm -rf "$CINDER_FLASH_ARRAY_DIR"
fi
