#!/usr/bin/env bash
# The deployment artifact end to end (deploy/README.md): `kiln compile`
# writes DIR/libmodel.so and what it loads; the example (deploy/example,
# built against kiln_model.h only) runs it in a process of its own and its
# outputs match PyTorch's and kiln's interpreter's; models whose attention
# the CPU fuses into its generated kernel (which reaches oneDNN's sgemm
# through the host API, not through a symbol the runtime would have to
# export) load and run;
# several threads run one handle; a truncated, corrupt or incomplete DIR is
# an error with a message, never a crash. Here, not in deploy/, because it
# runs the kiln binary (tools/ is the layer above deploy/).
#
# Usage: deploy_test.sh KILN RUN_MODEL RUN_MODEL_SOURCE ONNX_TENSORS PT2_MODELS ONNX_MODELS API_TEST
#                       REAL_ONNX_MODELS
set -u

KILN="$1"
RUN_MODEL="$2"
RUN_MODEL_SOURCE="$3"
TENSORS="$4"
PT2_MODELS="$5"
ONNX_MODELS="$6"
API_TEST="$7"
REAL_ONNX="$8"
KILN_TEST_NAME=deploy
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_lib.sh"
export KILN_CACHE_DIR="$TMP/cache"
# Under --config=asan: LeakSanitizer's exit-time tracer crashes now and then
# ("Tracer caught signal 11", 2 runs in 15) walking the dynamic TLS that
# __tls_get_addr interception records for the dlopen'ed runtime's oneDNN and
# libgomp threads (`kiln run`, which dlopens no runtime, never does); without
# the interception it never did in 30 runs (leak checking stays on).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}intercept_tls_get_addr=0"

# run_example DESCRIPTION WANT_STATUS ARGS...: runs the example, leaving its
# stdout/stderr in $TMP/example.out / .err.
run_example() {
  local what="$1" want="$2"
  shift 2
  "$RUN_MODEL" "$@" >"$TMP/example.out" 2>"$TMP/example.err"
  local status=$?
  if [[ "$status" -eq "$want" ]]; then pass; else
    fail "$what: exit status $status, want $want; stderr: $(head -c 600 "$TMP/example.err")"
  fi
}

# deploy_and_compare NAME MODEL_FILE TEST_DATA_DIR: compile, run the example,
# compare each output with PyTorch's and with kiln's interpreter's.
deploy_and_compare() {
  local name="$1" model="$2" data="$3" dir="$TMP/$1"
  run compile "$model" -o "$dir"
  expect_status 0 "$name: compile"
  if grep -q "no deployment library" "$TMP/err"; then fail "$name: $(cat "$TMP/err")"; else pass; fi
  # The interpreter's outputs for the same inputs (only the inputs: run
  # would also compare with PyTorch's outputs, which is checked below).
  mkdir -p "$TMP/$name.inputs" "$TMP/$name.interpreter"
  cp "$data"/input_*.pb "$TMP/$name.inputs/"
  "$KILN" run "$model" --inputs "$TMP/$name.inputs" --backend interpreter \
    --save_outputs "$TMP/$name.interpreter" >"$TMP/interp.out" 2>&1 ||
    fail "$name: interpreter run: $(head -c 600 "$TMP/interp.out")"
  local f
  for f in libmodel.so model_kernels.so model_program.pb model.weights kiln_model.h; do
    if [[ -s "$dir/$f" ]]; then pass; else fail "$name: compile wrote no $f"; fi
  done
  # The program reaches oneDNN through the host API only: libmodel.so
  # exports none of its symbols (backends/cpu/host_api.h).
  if nm -D --undefined-only "$dir/model_kernels.so" | grep -q dnnl; then
    fail "$name: model_kernels.so needs oneDNN symbols: $(nm -D --undefined-only "$dir/model_kernels.so" | grep dnnl)"
  else
    pass
  fi
  local args=() i=0
  while [[ -f "$data/input_$i.pb" ]]; do
    python3 "$TENSORS" to-raw "$data/input_$i.pb" "$TMP/$name.in$i.bin" || fail "$name: input_$i.pb"
    args+=(--input "$TMP/$name.in$i.bin")
    i=$((i + 1))
  done
  i=0
  while [[ -f "$data/output_$i.pb" ]]; do
    args+=(--output "$TMP/$name.out$i.bin")
    i=$((i + 1))
  done
  run_example "$name: run" 0 "$dir" "${args[@]}"
  i=0
  while [[ -f "$data/output_$i.pb" ]]; do
    if python3 "$TENSORS" compare "$TMP/$name.out$i.bin" "$data/output_$i.pb" --atol 1e-5 --rtol 1e-3; then
      pass
    else
      fail "$name: output $i differs from PyTorch's"
    fi
    if python3 "$TENSORS" compare "$TMP/$name.out$i.bin" "$TMP/$name.interpreter/output_$i.pb" --atol 1e-5 --rtol 1e-3; then
      pass
    else
      fail "$name: output $i differs from the interpreter's"
    fi
    i=$((i + 1))
  done
  # Several threads on one handle, each result equal to the first run's.
  run_example "$name: 4 threads" 0 "$dir" "${args[@]}" --threads 4 --iterations 8
  expect_match "4 threads x 8 runs: every result equals" "$TMP/example.out" "$name: threads"
  LAST_ARGS=("${args[@]}")
}

# expect_fused_attention NAME: the compile fused the model's attention and
# generated its kernel (not the reference kernel's extern call), so the
# deployed run above went through it.
expect_fused_attention() {
  expect_match "^extern kiln::attention" "$TMP/$1/report.md" "$1: attention fused"
  expect_match "^static void cpp_attention_[0-9]+\(" "$TMP/$1/program.cpp" "$1: attention kernel generated"
}

# torch.export's bert: its bmm-form attention fused too.
BERT="$PT2_MODELS/bert_mask"
deploy_and_compare bert "$BERT/model.pt2" "$BERT/test_data_set_0"
expect_fused_attention bert
expect_match "^input 0 ids: int64 \[2, 32\]" "$TMP/example.out" "bert: input names and shapes"
expect_match "^input 1 mask: int64 \[2, 32\]" "$TMP/example.out" "bert: second input"
BERT_ARGS=("${LAST_ARGS[@]}")
deploy_and_compare mlp "$ONNX_MODELS/mlp/model.onnx" "$ONNX_MODELS/mlp/test_data_set_0"

# The exporters' matmul form: bert with a mask, vit with q's scale folded in.
deploy_and_compare bert_onnx "$REAL_ONNX/bert_mask/model.onnx" "$REAL_ONNX/bert_mask/test_data_set_0"
expect_fused_attention bert_onnx
deploy_and_compare vit_onnx "$REAL_ONNX/vit/model.onnx" "$REAL_ONNX/vit/test_data_set_0"
expect_fused_attention vit_onnx

# The example needs nothing of kiln's build: g++ with DIR's header alone.
# (Not under sanitizers: their runtime must come first in the process.)
if command -v g++ >/dev/null && ! ldd "$TMP/bert/libmodel.so" | grep -q 'libasan\|libtsan\|libubsan'; then
  if g++ -std=c++17 -O1 -I "$TMP/bert" "$RUN_MODEL_SOURCE" -o "$TMP/run_model_gxx" -ldl -pthread; then
    pass
    "$TMP/run_model_gxx" "$TMP/bert" "${BERT_ARGS[@]}" >"$TMP/gxx.out" 2>&1 || fail "g++-built example: $(cat "$TMP/gxx.out")"
    python3 "$TENSORS" compare "$TMP/bert.out0.bin" "$BERT/test_data_set_0/output_0.pb" || fail "g++-built example's output"
  else
    fail "the example does not build against DIR/kiln_model.h alone"
  fi
fi

# Damaged artifacts: exit 2 and a message naming the file.
damaged() {
  rm -rf "$TMP/damaged" && cp -r "$TMP/bert" "$TMP/damaged"
}
damaged
truncate -s 1000 "$TMP/damaged/model.weights"
run_example "truncated weights" 2 "$TMP/damaged" "${BERT_ARGS[@]}"
expect_match "model.weights.*(truncated|bytes)" "$TMP/example.err" "truncated weights: message"

damaged
printf '\x7f' | dd of="$TMP/damaged/model.weights" bs=1 seek=100 conv=notrunc 2>/dev/null
run_example "corrupt weights table" 2 "$TMP/damaged" "${BERT_ARGS[@]}"
expect_match "model.weights.*checksum" "$TMP/example.err" "corrupt weights: message"

damaged
rm "$TMP/damaged/model_kernels.so"
run_example "missing kernels" 2 "$TMP/damaged" "${BERT_ARGS[@]}"
expect_match "model_kernels.so" "$TMP/example.err" "missing kernels: message"

damaged
cp "$TMP/mlp/model_program.pb" "$TMP/damaged/model_program.pb"
run_example "another model's program" 2 "$TMP/damaged" "${BERT_ARGS[@]}"
expect_match "kiln_model_create" "$TMP/example.err" "another model's program: message"

run_example "missing directory" 2 "$TMP/nowhere" "${BERT_ARGS[@]}"

# The example refuses input files that do not fit the model's info.
run_example "wrong input count" 2 "$TMP/mlp" "${BERT_ARGS[@]}"

# The C API's contract from C: bad arguments, wrong dtypes, shapes and
# devices are statuses with messages; strided outputs and unaligned inputs
# give the same results.
if "$API_TEST" "$TMP/bert" >"$TMP/api.out" 2>"$TMP/api.err"; then pass; else
  fail "api_contract_test: $(cat "$TMP/api.out" "$TMP/api.err")"
fi

# A compile that stops before the C++ compiler writes no library, and a
# recompile into DIR removes the one an earlier compile left.
run compile "$BERT/model.pt2" -o "$TMP/bert" --compile-to=source
expect_status 0 "compile-to=source"
if [[ ! -e "$TMP/bert/libmodel.so" && ! -e "$TMP/bert/model.weights" ]]; then pass; else
  fail "compile-to=source left the deployment files of the earlier compile"
fi

finish deploy
