#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"

expect_exit 2 dlprep dataset
expect_exit 2 dlprep dataset info
expect_exit 2 dlprep dataset verify
expect_exit 2 dlprep dataset merge a b
expect_exit 2 dlprep dataset frobnicate x
expect_exit 1 dlprep dataset info nowhere
mkdir notds
expect_exit 1 dlprep dataset verify notds
echo '{"schema": "dlprep.dataset/1"' >notds/dataset.json
expect_exit 1 dlprep dataset info notds
