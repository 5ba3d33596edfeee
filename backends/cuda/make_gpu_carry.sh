#!/bin/bash
# Packs binaries built here (-c opt) for the GPU machine, which has no Bazel:
# the stripped binaries plus every shared library they need except the C
# runtime (libc, libm, libstdc++, libgcc_s: the machine's own are newer) and
# CUDA (loaded with dlopen from the machine's driver and toolkit), xz-packed
# into <repo>/.gpu_carry/bundle.tar.xz (ignored through .git/info/exclude).
# With --onnx-data, the ONNX backend-test data for `kiln conformance` too.
#
#   backends/cuda/make_gpu_carry.sh [--onnx-data] BINARY...
# On the GPU machine (run tool, carry [".gpu_carry"]):
#   benchmarks/cuda_realmodels.sh check|ops|models   # unpacks to /tmp/kiln_carry, sets the paths
# or by hand:
#   mkdir -p /tmp/k && tar -xJf .gpu_carry/bundle.tar.xz -C /tmp/k
#   LD_LIBRARY_PATH=/tmp/k/lib /tmp/k/bin/cuda_gpu_check
set -euo pipefail
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
data=0
if [[ "${1:-}" == "--onnx-data" ]]; then data=1; shift; fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for b in "$@"; do
  install -m 755 "$b" "$stage/bin/"
  strip "$stage/bin/$(basename "$b")"
  ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*|libcuda*|libnvrtc*|libcublas*|libcudnn*) ;;
      *) cp -L "$lib" "$stage/lib/" ;;
    esac
  done
done
strip --strip-unneeded "$stage"/lib/* 2>/dev/null || true
if [[ $data == 1 ]]; then
  mkdir -p "$stage/onnx"
  for d in node pytorch-converted pytorch-operator simple; do
    cp -r "/usr/share/libonnx-testdata/data/$d" "$stage/onnx/"
  done
fi
mkdir -p "$root/.gpu_carry"
grep -qxF '/.gpu_carry/' "$root/.git/info/exclude" 2>/dev/null || { mkdir -p "$root/.git/info"; echo '/.gpu_carry/' >> "$root/.git/info/exclude"; }
tar -C "$stage" -cf - . | xz -T2 -6 > "$root/.gpu_carry/bundle.tar.xz"
du -h "$root/.gpu_carry/bundle.tar.xz"
