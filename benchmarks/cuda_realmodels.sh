#!/bin/bash
# kiln's CUDA backend on the GPU machine (issue 15), from the repository
# root, with the binaries carried in .gpu_carry. Each PART fits one `run`
# call (well under 9 minutes):
#
#   benchmarks/cuda_realmodels.sh check          # GPU gtests + correctness of graphs and ONNX models
#   benchmarks/cuda_realmodels.sh ops            # single-op benchmarks: kiln (cuda_bench) then PyTorch
#   benchmarks/cuda_realmodels.sh models [FLAGS] # real models: kiln vs PyTorch, one table
#                                                # (FLAGS: benchmarks/cuda_realmodels.py --help)
#
# Build and pack here (no GPU needed):
#   ./bazelw build -c opt //tools:kiln //testing:cuda_gpu_check //benchmarks:cuda_bench
#   backends/cuda/make_gpu_carry.sh bazel-bin/tools/kiln bazel-bin/testing/cuda_gpu_check bazel-bin/benchmarks/cuda_bench
#
# Logs and per-cell JSON go to $OUT (the run tool's folder, fetched back)
# or /tmp/kiln_gpu_out.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
part=${1:-}
[[ $# -gt 0 ]] && shift
out=${OUT:-/tmp/kiln_gpu_out}
mkdir -p "$out"
k=/tmp/kiln_carry
if [[ ! -x $k/bin/kiln ]]; then
  mkdir -p "$k" && tar -xJf .gpu_carry/bundle.tar.xz -C "$k" || { echo "no .gpu_carry/bundle.tar.xz: build and pack it first"; exit 2; }
fi
export LD_LIBRARY_PATH="$k/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# cuDNN 9 from PyTorch's nvidia-cudnn wheel (kiln also searches the usual places).
if [[ -z "${KILN_CUDNN_LIB_DIR:-}" ]]; then
  cudnn=$(python3 -c 'import os, nvidia.cudnn as c; print(os.path.join(list(c.__path__)[0], "lib"))' 2>/dev/null)
  [[ -n "$cudnn" && -d "$cudnn" ]] && export KILN_CUDNN_LIB_DIR="$cudnn"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
echo "cudnn dir: ${KILN_CUDNN_LIB_DIR:-(searched)}"
case "$part" in
  check)
    "$k/bin/cuda_gpu_check" --models=testdata/onnx_models "$@" 2>&1 | tee "$out/check.log" | grep -v '^\[ *\(RUN\|OK\) '
    ;;
  ops)
    "$k/bin/cuda_bench" --models=testdata/onnx_models "$@" 2>&1 | tee "$out/bench.log"
    python3 benchmarks/cuda_torch_compile.py 2>&1 | tee "$out/torch_ops.log" | tail -30
    ;;
  models)
    python3 benchmarks/cuda_realmodels.py --kiln "$k/bin/kiln" --out "$out/realmodels" "$@"
    ;;
  *)
    sed -n '2,17p' "$0"
    exit 2
    ;;
esac
