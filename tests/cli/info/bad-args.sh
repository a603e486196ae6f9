#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
dlprep info
