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
