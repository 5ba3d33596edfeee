#!/usr/bin/env bash
# wheel_install_test.sh WHEEL_DIR: pip installs the wheel offline into a
# temporary folder and uses it from there (Debian's Python, torch 1.13).
set -euo pipefail
wheel_dir="$1"
wheels=("${wheel_dir}"/kiln-*-py3-none-linux_x86_64.whl)
[[ ${#wheels[@]} -eq 1 && -f "${wheels[0]}" ]] || { echo "expected one wheel in ${wheel_dir}"; exit 1; }
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
target="${tmp}/site"
/usr/bin/python3 -m pip install --quiet --no-index --no-deps --no-cache-dir --target "${target}" "${wheels[0]}"
[[ -x "${target}/kiln/libkiln_c.so" ]] || { echo "libkiln_c.so missing from the installed package"; exit 1; }
grep -q '^kiln = kiln.dynamo:kiln_backend$' "${target}"/kiln-*.dist-info/entry_points.txt
unset KILN_C_LIBRARY
export KILN_CACHE_DIR="${tmp}/kiln-cache"
cd "${tmp}"
PYTHONPATH="${target}" /usr/bin/python3 - <<'PY'
import importlib.metadata as md
import os
import torch
import kiln
import kiln._capi
assert os.path.dirname(kiln._capi.library_path()) == os.path.dirname(kiln.__file__), kiln._capi.library_path()
eps = [e for e in md.entry_points(group="torch_dynamo_backends") if e.name == "kiln"]
assert eps and eps[0].load() is kiln.dynamo.kiln_backend, eps
m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).eval()
x = torch.randn(3, 4)
f = kiln.compile(torch.fx.symbolic_trace(m), [x], fallback=False)
with torch.no_grad():
    torch.testing.assert_close(f(x), m(x), rtol=1e-4, atol=1e-5)
print("kiln", kiln.version(), "installed and ran")
PY
