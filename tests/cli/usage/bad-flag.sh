#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
dlprep --frobnicate info x.png
