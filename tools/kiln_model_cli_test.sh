#!/usr/bin/env bash
# End-to-end tests of the kiln binary on ONNX models: import, run, compile and
# conformance, their error contract (exit 2 and one "kiln: error: ..." line
# naming the file) and the promises CI relies on (exit 1 on mismatches).
#
# Usage: kiln_model_cli_test.sh KILN FIXTURES_DIR MODELS_DIR
#   FIXTURES_DIR: tools/testdata (made by make_models.py)
#   MODELS_DIR:   testdata/onnx_models (the bundled torchvision models)
set -u

KILN="$1"
FIXTURES="$2"
MODELS="$3"
KILN_TEST_NAME=kiln_model_cli
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_lib.sh"
# Compiled programs go to a private cache.
export KILN_CACHE_DIR="$TMP/cache"

# ---------------------------------------------------------------------------
# Tolerances: test_add_one's expected output is off by 0.01.

run conformance --root "$FIXTURES/tolerance"
expect_status 1 "conformance with the default tolerance"
expect_match '^FAIL test_add_one: .*output 0: 4/4 elements differ' "$TMP/out" \
  "conformance with the default tolerance"
run conformance --root "$FIXTURES/tolerance" --atol 0.05
expect_status 0 "conformance --atol 0.05"
expect_match '^1 passed, 0 failed' "$TMP/out" "conformance --atol 0.05"
run conformance --root "$FIXTURES/tolerance" --rtol 0.01
expect_status 0 "conformance --rtol 0.01"
run conformance --root "$FIXTURES/tolerance" --atol=-1
expect_status 2 "conformance --atol=-1"
expect_one_error_line "conformance --atol=-1" "non-negative"

finish kiln_model_cli_test
