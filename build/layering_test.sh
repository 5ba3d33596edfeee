#!/usr/bin/env bash
# //build:layering_test: runs layering_check.py on the real source tree, then
# on a synthetic tree that must fail (so the checker itself stays honest).
set -euo pipefail

checker="${TEST_SRCDIR}/${TEST_WORKSPACE}/build/layering_check.py"
checker="$(readlink -f "$checker")"
root="$(dirname "$(dirname "$checker")")"
python=/usr/bin/python3

echo "== layering of ${root}"
"$python" "$checker" --root "$root"

echo "== checker self-test"
t="${TEST_TMPDIR:-$(mktemp -d)}/layering_selftest"
rm -rf "$t"
mkdir -p "$t/build" "$t/ir" "$t/support" "$t/backends/cpu" "$t/backends/cuda" "$t/lowering"
touch "$t/WORKSPACE"
cp "$root/build/BUILD.bazel" "$t/build/BUILD.bazel"
cat > "$t/support/BUILD.bazel" <<'B'
cc_library(name = "s", deps = ["//ir:ir"])  # support -> ir: bad
B
cat > "$t/ir/BUILD.bazel" <<'B'
cc_library(name = "ir", deps = ["//support:s", "@system//:absl_status"])
B
cat > "$t/backends/cuda/BUILD.bazel" <<'B'
cc_library(name = "cuda", deps = ["//backends/cpu", "//lowering:l"])  # cpu: bad
B
cat > "$t/backends/cpu/BUILD.bazel" <<'B'
cc_library(name = "cpu", deps = select({"//conditions:default": ["//devices:registry"]}))
B
cat > "$t/lowering/BUILD.bazel" <<'B'
cc_library(name = "l", deps = ["//ir", "//devices:registry"] + ["//wrapper:w"])  # wrapper: bad
B
if out="$("$python" "$checker" --root "$t")"; then
  echo "$out"
  echo "FAIL: checker accepted a tree with layering violations"
  exit 1
fi
echo "$out"
for want in "//support:s (layer support) -> //ir:ir" \
            "//backends/cuda:cuda (layer backends_cuda) -> //backends/cpu" \
            "//lowering:l (layer lowering) -> //wrapper:w"; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: expected violation: $want"; exit 1; }
done
[[ "$(grep -c 'LAYERING VIOLATION' <<<"$out")" == 3 ]] || { echo "FAIL: expected exactly 3 violations"; exit 1; }
echo "PASS"
