#!/bin/bash
# cuda_api.h declares cuDNN's graph-API enum values by hand (kiln includes no
# cuDNN header); compile cudnn_api_constants_check.cc's static_asserts
# against the installed cudnn_graph.h. Skips (passes with a message) where
# the header or g++ is absent.
set -u
dir="$(dirname "$0")"
check="${TEST_SRCDIR:-$dir/..}/${TEST_WORKSPACE:-kiln}/backends/cuda/cudnn_api_constants_check.cc"
[ -f "$check" ] || check="$dir/cudnn_api_constants_check.cc"
root="$(cd "$(dirname "$check")/../.." && pwd)"
include=""
for d in "${KILN_CUDNN_INCLUDE_DIR:-}" "${CUDA_HOME:-/nonexistent}/include" /usr/local/cuda/include /usr/include; do
  if [ -n "$d" ] && [ -f "$d/cudnn_graph.h" ]; then include="$d"; break; fi
done
if [ -z "$include" ]; then echo "SKIP: no cudnn_graph.h installed"; exit 0; fi
if ! command -v g++ >/dev/null; then echo "SKIP: no g++"; exit 0; fi
# cudnn_graph.h includes cuda_runtime_api.h and library_types.h.
cuda_include="$include"
[ -f "$cuda_include/cuda_runtime_api.h" ] || cuda_include=/usr/local/cuda/include
echo "checking against $include/cudnn_graph.h ($(grep -m1 'define CUDNN_MINOR' "$include/cudnn_version.h" 2>/dev/null))"
if ! g++ -std=c++17 -fsyntax-only -I"$root" -I"$include" -I"$cuda_include" "$check"; then
  echo "FAIL: a cuDNN constant in cuda_api.h differs from $include/cudnn_graph.h"
  exit 1
fi
echo "PASS: $(grep -c static_assert "$check") constants match"
