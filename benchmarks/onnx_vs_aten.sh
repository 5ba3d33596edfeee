#!/bin/bash
# The ONNX-imported benchmarks (benchmarks/onnx/*.onnx) next to the same
# graphs built from aten ops, and PyTorch eager on the same machine, in one
# run (issue 12). Run from the repository root after
#   ./bazelw build -c opt //benchmarks:compiled_bench
# Usage: benchmarks/onnx_vs_aten.sh [PATH_TO_compiled_bench] [repetitions]
set -euo pipefail
bench="${1:-bazel-out/k8-opt/bin/benchmarks/compiled_bench}"
reps="${2:-5}"
export KILN_CACHE_DIR="${KILN_CACHE_DIR:-/tmp/kiln-onnx-vs-aten-cache}"
echo "== $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bench" --benchmark_filter='^BM_(Onnx)?(PointwiseChain|TranscendentalChain|Sum|Softmax|LayerNorm)' \
  --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true
echo "== $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 benchmarks/compiled_eager.py
echo "== $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"
