#!/bin/bash
# kiln's compiled CPU path on every model of an export directory (ONNX
# backend-test layout: DIR/<model>/model.onnx + test_data_set_0/), one JSON
# line per (model, threads) from real_models_bench: run median, cold and warm
# compile, error against the exported outputs, memory, library stats.
#
#   benchmarks/cpu_scaling.sh BENCH_BINARY EXPORT_DIR [THREADS...]
#
# THREADS defaults to the machine's core count; list several for a scaling
# curve (e.g. `1 2 4 8 16`). Set ITERATIONS (default 20) and MODELS (a space-
# separated subset) in the environment. On the GPU machine's host (no Bazel;
# see backends/cpu/README.md, "Measuring on the GPU machine"):
#
#   LD_LIBRARY_PATH=/tmp/k/lib benchmarks/cpu_scaling.sh /tmp/k/bin/real_models_bench /tmp/rm 1 2 4 8 16
set -euo pipefail
bench=$1
dir=$2
shift 2
threads=("$@")
if [[ ${#threads[@]} -eq 0 ]]; then threads=("$(nproc)"); fi
iterations=${ITERATIONS:-20}
models=${MODELS:-$(cd "$dir" && ls -d */ | tr -d /)}
for m in $models; do
  [[ -f "$dir/$m/model.onnx" ]] || continue
  for t in "${threads[@]}"; do
    out=$("$bench" --model "$dir/$m/model.onnx" --inputs "$dir/$m/test_data_set_0" --threads "$t" \
          --iterations "$iterations" --warmup 3 2>&1 | grep '^{' || true)
    [[ -n "$out" ]] || out='{"error": "no result"}'
    echo "{\"model\": \"$m\", \"threads_requested\": $t, ${out#\{}"
  done
done
