#!/usr/bin/env bash
# Runs a Python test of the kiln package with Debian's Python (it has torch,
# torchvision and onnx): run_python_test.sh LIBKILN_C TEST_PY
# The package comes from the runfiles' python/ folder, the library from $1,
# fixtures from the runfiles' testdata/. The CPU backend's compile cache
# goes to the test's temporary directory.
set -euo pipefail
lib="$(realpath "$1")"
test_py="$2"
root="$(pwd)"
export PYTHONPATH="${root}/python"
export KILN_C_LIBRARY="${lib}"
export KILN_TESTDATA="${root}/testdata"
export KILN_CACHE_DIR="${TEST_TMPDIR:-$(mktemp -d)}/kiln-cache"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
exec /usr/bin/python3 -m unittest -v "${test_py}"
