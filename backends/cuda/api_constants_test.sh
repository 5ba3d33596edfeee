#!/bin/bash
# cuda_api.h declares the enum values and structs of the libraries it loads
# with dlopen by hand (kiln includes none of their headers). This compiles
# one check file's static_asserts against the installed header:
#   api_constants_test.sh HEADER CHECK_FILE   (cudnn_graph.h, cublasLt.h)
# Skips (passes with a message) where the header or g++ is absent.
set -u
header="$1"
name="$2"
dir="$(dirname "$0")"
check="${TEST_SRCDIR:-$dir/..}/${TEST_WORKSPACE:-kiln}/backends/cuda/$name"
[ -f "$check" ] || check="$dir/$name"
root="$(cd "$(dirname "$check")/../.." && pwd)"
include=""
for d in "${KILN_CUDA_INCLUDE_DIR:-}" "${CUDA_HOME:-/nonexistent}/include" /usr/local/cuda/include /usr/include; do
  if [ -n "$d" ] && [ -f "$d/$header" ]; then include="$d"; break; fi
done
if [ -z "$include" ]; then echo "SKIP: no $header installed"; exit 0; fi
if ! command -v g++ >/dev/null; then echo "SKIP: no g++"; exit 0; fi
# The headers include cuda_runtime_api.h and library_types.h.
cuda_include="$include"
[ -f "$cuda_include/cuda_runtime_api.h" ] || cuda_include=/usr/local/cuda/include
echo "checking $name against $include/$header"
if ! g++ -std=c++17 -fsyntax-only -I"$root" -I"$include" -I"$cuda_include" "$check"; then
  echo "FAIL: a constant or struct in cuda_api.h differs from $include/$header"
  exit 1
fi
echo "PASS: $(grep -c static_assert "$check") checks hold"
