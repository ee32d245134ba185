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

# Stand-ins for the devstack functions the plugin calls, so it can be
# sourced and run without devstack. iniset/inicomment write a real ini file.

function iniset {
    local file=$1 section=$2 option=$3 value=$4
    python3 - "$file" "$section" "$option" "$value" <<'PY'
import configparser, os, sys
path, section, option, value = sys.argv[1:]
parser = configparser.RawConfigParser(strict=False)
parser.optionxform = str
if os.path.exists(path):
    parser.read(path)
if section != 'DEFAULT' and not parser.has_section(section):
    parser.add_section(section)
parser.set(section, option, value)
with open(path, 'w') as f:
    parser.write(f)
PY
}

function inicomment {
    local file=$1 section=$2 option=$3
    python3 - "$file" "$section" "$option" <<'PY'
import configparser, sys
path, section, option = sys.argv[1:]
parser = configparser.RawConfigParser(strict=False)
parser.optionxform = str
parser.read(path)
parser.remove_option(section, option)
with open(path, 'w') as f:
    parser.write(f)
PY
}

function die {
    echo "die: line $1: ${*:2}" >&2
    exit 1
}

function echo_summary {
    echo "summary: $*"
}

function is_service_enabled {
    return 0
}

function setup_develop {
    echo "setup_develop $*" >> "$STUB_LOG"
}

function define_plugin {
    echo "define_plugin $1" >> "$STUB_LOG"
}

function plugin_requires {
    echo "plugin_requires $*" >> "$STUB_LOG"
}
