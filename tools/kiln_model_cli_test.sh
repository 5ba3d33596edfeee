#!/usr/bin/env bash
# End-to-end tests of the kiln binary on ONNX models: import, run, compile and
# conformance; their error contract (exit 2 and one "kiln: error: ..." line
# naming the file and what was expected); the promises CI relies on (exit 1
# on mismatches); --json against docs/cli_json.schema.json; the pictures,
# trace and stages of `kiln compile`; every subcommand's --help.
#
# Usage: kiln_model_cli_test.sh KILN FIXTURES_DIR MODELS_DIR SCHEMA CHECKER
#   FIXTURES_DIR: tools/testdata (made by make_models.py)
#   MODELS_DIR:   testdata/onnx_models (the bundled torchvision models)
#   SCHEMA:       docs/cli_json.schema.json
#   CHECKER:      tools/json_schema_check.py
set -u

KILN="$1"
FIXTURES="$2"
MODELS="$3"
SCHEMA="$4"
CHECKER="$5"
KILN_TEST_NAME=kiln_model_cli
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_lib.sh"
# Compiled programs go to a private cache.
export KILN_CACHE_DIR="$TMP/cache"
SQUEEZENET="$MODELS/squeezenet1_1"
add_one="$FIXTURES/tolerance/test_add_one"

# expect_no_control_bytes FILE DESCRIPTION: no ESC, BEL or C1 CSI in FILE.
expect_no_control_bytes() {
  if LC_ALL=C grep -q $'\x1b\|\x07\|\xc2\x9b' "$1"; then
    fail "$2: raw control bytes reached the output: $(cat -A "$1" | head -c 300)"
  else
    pass
  fi
}

# ---------------------------------------------------------------------------
# Tolerances: test_add_one's expected output is off by 0.01.

run conformance --root "$FIXTURES/tolerance"
expect_status 1 "conformance with the default tolerance"
expect_match '^FAIL test_add_one: .*output 0: 4/4 elements differ' "$TMP/out" \
  "conformance with the default tolerance"
expect_one_error_line "conformance with the default tolerance" "1 of 1 tests failed"
run conformance --root "$FIXTURES/tolerance" --atol 0.05
expect_status 0 "conformance --atol 0.05"
expect_match '^1 passed, 0 failed' "$TMP/out" "conformance --atol 0.05"
run conformance --root "$FIXTURES/tolerance" --rtol 0.01
expect_status 0 "conformance --rtol 0.01"
run conformance --root "$FIXTURES/tolerance" --atol=-1
expect_status 2 "conformance --atol=-1"
expect_one_error_line "conformance --atol=-1" "--rtol and --atol must be non-negative"
run run "$add_one/model.onnx" --rtol=-0.5
expect_status 2 "run --rtol=-0.5"
expect_one_error_line "run --rtol=-0.5" "--rtol and --atol must be non-negative"

# ---------------------------------------------------------------------------
# CI traps.

# A filter that matches nothing, a device that does not exist: usage errors.
run conformance --root "$FIXTURES/tolerance" --filter no_such_test
expect_status 2 "conformance --filter matching nothing"
expect_one_error_line "conformance --filter matching nothing" "no test under .* matches --filter 'no_such_test'"
run conformance --root "$FIXTURES/tolerance" --backend compiled --device tpu
expect_status 2 "conformance --device tpu"
expect_one_error_line "conformance --device tpu" "'tpu'.*registered: .*cpu"
[[ ! -s "$TMP/out" ]] && pass || fail "conformance --device tpu ran tests: $(head -3 "$TMP/out")"

# run --inputs DIR compares with DIR/output_K.pb: exit 1 on a mismatch.
for backend in interpreter compiled; do
  run run "$add_one/model.onnx" --inputs "$add_one/test_data_set_0" --backend $backend
  expect_status 1 "run --backend $backend against a wrong output_0.pb"
  expect_one_error_line "run --backend $backend against a wrong output_0.pb" \
    "model\.onnx: output 0 'y' differs from .*test_data_set_0/output_0\.pb \(rtol 0\.001, atol 1e-05\): 4/4 elements differ"
  run run "$add_one/model.onnx" --inputs "$add_one/test_data_set_0" --backend $backend --atol 0.05
  expect_status 0 "run --backend $backend --atol 0.05"
  expect_match "^check against .*output_K\.pb: 1 output match" "$TMP/out" "run --backend $backend --atol 0.05"
done
run run "$add_one/model.onnx" --inputs "$add_one/test_data_set_0" --atol abc
expect_status 2 "run --atol abc"
expect_one_error_line "run --atol abc" "--atol 'abc' is not a number"
# A NaN where a number is expected is a difference.
run run "$FIXTURES/nan_expected/model.onnx" --inputs "$FIXTURES/nan_expected/test_data_set_0" --atol 1
expect_status 1 "run against an expected NaN"
expect_one_error_line "run against an expected NaN" "1/4 elements differ; first at 2: 4 vs expected nan|first at 2"
# The compiled program against the interpreter: small_cnn's BLAS-backed
# convolutions sum in another order than the reference kernels, so with no
# tolerance at all they differ, and that must be exit 1.
run run "$MODELS/small_cnn/model.onnx" --backend compiled
expect_status 0 "run --backend compiled (default tolerance)"
expect_match "^check against the interpreter: 1 output match" "$TMP/out" "run --backend compiled"
run run "$MODELS/small_cnn/model.onnx" --backend compiled --rtol 0 --atol 0
expect_status 1 "run --backend compiled --rtol 0 --atol 0"
expect_one_error_line "run --backend compiled --rtol 0 --atol 0" "differs from the interpreter's \(rtol 0, atol 0\)"
run run "$MODELS/small_cnn/model.onnx" --backend compiled --rtol 0 --atol 0 --nocheck
expect_status 0 "run --backend compiled --nocheck"
# kiln compile --device cuda on a machine without a GPU (as here, unless
# the test runs on one): the kernels' sources are written all the same.
if ! [[ -e /dev/nvidiactl ]]; then
  run compile "$MODELS/ln_gelu_softmax/model.onnx" --device cuda -o "$TMP/cuda_sources"
  expect_status 0 "compile --device cuda without a GPU"
  expect_match "^kiln: note: cuda is unavailable .*wrote the kernels' sources \(kernels.cu\)" "$TMP/err" \
    "compile --device cuda without a GPU (note)"
  expect_match "^// kiln kernel kk_[0-9a-f]{16}$" "$TMP/cuda_sources/kernels.cu" "compile --device cuda: kernels.cu"
  expect_match "^KernelCallLine " "$TMP/cuda_sources/wrapper.txt" "compile --device cuda: wrapper.txt"
  # fp32 / tf32 set the type's matmul precision: no GPU needed either.
  for p in fp32 tf32; do
    run compile "$MODELS/ln_gelu_softmax/model.onnx" --device cuda --precision $p -o "$TMP/cuda_sources_$p"
    expect_status 0 "compile --device cuda --precision $p without a GPU"
  done
fi
# The CPU's step profile: one table row per line, the convolutions named by
# what oneDNN runs them with.
run run "$MODELS/small_cnn/model.onnx" --backend compiled --profile 2
expect_status 0 "run --backend compiled --profile 2"
expect_match "^profile over 2 calls \(each step timed by the host clock\):$" "$TMP/out" "run --profile 2 (header)"
expect_match "^step +kind +ms/call" "$TMP/out" "run --profile 2 (column line)"
expect_match "^conv \[.* onednn +[0-9.]+ " "$TMP/out" "run --profile 2 (a convolution row)"
expect_match "^total of the steps" "$TMP/out" "run --profile 2 (total line)"

# ---------------------------------------------------------------------------
# Crashes and hangs.

# A directory given as the model.
mkdir -p "$TMP/directory.onnx"
for cmd in "import $TMP/directory.onnx -o $TMP/x.txt" "run $TMP/directory.onnx" \
           "compile $TMP/directory.onnx -o $TMP/x_out" "run $TMP/directory.onnx --backend compiled"; do
  run $cmd
  expect_status 2 "$cmd"
  expect_one_error_line "$cmd" "directory\.onnx: Is a directory"
done

# An input of 4 TiB: refused with its size, before allocating.
run run "$FIXTURES/huge_input.onnx"
expect_status 2 "run huge_input"
expect_one_error_line "run huge_input" "input 'x' \(Float\[1048576, 1048576\]\) needs 4\.00 TiB, more than --max_memory"
run compile "$FIXTURES/huge_input.onnx" -o "$TMP/huge"
expect_status 2 "compile huge_input"
expect_one_error_line "compile huge_input" \
  "huge_input\.onnx: the compiled program's planned peak memory is 4398046511104 bytes .*--max_memory"
[[ ! -e "$TMP/huge/program.cpp" ]] && pass || fail "compile huge_input wrote program.cpp"
run run "$FIXTURES/huge_input.onnx" --backend compiled
expect_status 2 "run --backend compiled huge_input"
expect_one_error_line "run --backend compiled huge_input" "input 'x' \(Float\[1048576, 1048576\]\) needs 4\.00 TiB, more than --max_memory"
# The limit is a flag: small models pass the default and fail a tiny limit.
run run "$add_one/model.onnx" --max_memory 8
expect_status 2 "run --max_memory 8"
expect_one_error_line "run --max_memory 8" "input 'x' \(Float\[4\]\) needs 16 B, more than --max_memory \(8 B\)"
run compile "$MODELS/mlp/model.onnx" -o "$TMP/mlp_small" --max-memory=1KiB
expect_status 2 "compile --max-memory=1KiB"
expect_one_error_line "compile --max-memory=1KiB" "planned peak memory is 8192 bytes"
run run "$add_one/model.onnx" --max_memory lots
expect_status 2 "run --max_memory lots"
expect_one_error_line "run --max_memory lots" "--max_memory: 'lots' is not a size"

# A [2^24, 2^16] broadcast: summaries and comparisons read its 2^16 values,
# not 2^40 (before the fix this ran for hours).
for backend in interpreter compiled; do
  timeout 120 "$KILN" run "$FIXTURES/expand_huge.onnx" --backend $backend >"$TMP/out" 2>"$TMP/err"
  rc=$?
  expect_status 0 "run expand_huge --backend $backend (in 120 s)"
  expect_match "^output 0 'y': Float\[16777216, 65536\] min -0\.99" "$TMP/out" "run expand_huge --backend $backend"
done
expect_match "^check against the interpreter: 1 output match" "$TMP/out" "run expand_huge --backend compiled"

# ---------------------------------------------------------------------------
# Errors that name the file and the model's node; names never reach the
# terminal raw.

run import "$FIXTURES/opset_99.onnx" -o "$TMP/opset.txt"
expect_status 2 "import opset 99"
expect_one_error_line "import opset 99" "opset_99\.onnx: the model imports opset 99 of domain ai\.onnx; kiln knows opsets up to [0-9]+"
run run "$FIXTURES/opset_99.onnx"
expect_status 2 "run opset 99"
gather="$FIXTURES/gather_out_of_range"
run run "$gather/model.onnx" --inputs "$gather/test_data_set_0"
expect_status 2 "run gather_out_of_range"
expect_one_error_line "run gather_out_of_range" \
  "gather_out_of_range/model\.onnx: node '/encoder/Gather_7' \(.*\): .*index 7 is out of bounds"
evil="$FIXTURES/control_bytes"
run run "$evil/model.onnx"
expect_status 0 "run control_bytes"
expect_match "^output 0 'y\\\\x1b\[2J\\\\x07" "$TMP/out" "run control_bytes escapes the output name"
expect_no_control_bytes "$TMP/out" "run control_bytes (stdout)"
run run "$evil/model.onnx" --inputs "$evil/test_data_set_0"
expect_status 2 "run control_bytes (bad index)"
expect_no_control_bytes "$TMP/err" "run control_bytes (stderr)"
run run "$evil/model.onnx" --json
expect_no_control_bytes "$TMP/out" "run control_bytes --json"
run compile "$evil/model.onnx" -o "$TMP/evil" --dot
expect_status 0 "compile control_bytes --dot"
expect_no_control_bytes "$TMP/evil/graph.dot" "compile control_bytes: graph.dot"
run import "$evil/model.onnx" -o "$TMP/evil.txt"
expect_no_control_bytes "$TMP/evil.txt" "import control_bytes: the IR's scopes"

# ---------------------------------------------------------------------------
# Help and flags that used to be wrong.

# import: the output format is --to (as for convert); --format is gone.
run import "$add_one/model.onnx" -o - --to text
expect_status 0 "import -o - --to text"
expect_match "= aten::add\(.*scope: add_node" "$TMP/out" "import -o - --to text"
run import "$add_one/model.onnx" -o "$TMP/a.pb" --format=text
expect_status 2 "import --format"
expect_one_error_line "import --format" "unknown flag '--format=text'"
run import --help
expect_match "--to=VALUE" "$TMP/out" "import --help lists --to"
# compile -o - is not a directory.
run compile "$add_one/model.onnx" -o -
expect_status 2 "compile -o -"
expect_one_error_line "compile -o -" "-o names a directory"
[[ ! -e ./- ]] && pass || fail "compile -o - created a directory named '-'"
# conformance --help names every device.
run conformance --help
expect_match "cuda" "$TMP/out" "conformance --help lists cuda"

# Every subcommand's --help: exit 0, the usage line, no error.
run --help
commands=$(sed -n 's/^  \([a-z]\+\)  .*/\1/p' "$TMP/out")
[[ $(wc -w <<<"$commands") -ge 9 ]] && pass || fail "kiln --help lists too few commands: $commands"
for cmd in $commands; do
  run $cmd --help
  expect_status 0 "$cmd --help"
  expect_match "^usage: kiln $cmd " "$TMP/out" "$cmd --help"
  [[ ! -s "$TMP/err" ]] && pass || fail "$cmd --help wrote to stderr: $(cat "$TMP/err")"
  run help $cmd
  expect_status 0 "help $cmd"
done
run --version
expect_status 0 "--version"
expect_match '^kiln [0-9]+\.[0-9]+\.[0-9]+ \((gcc|clang) ' "$TMP/out" "--version"
version=$(sed -n 's/^kiln \([0-9.]*\) .*/\1/p' "$TMP/out")
run run --version
expect_match "^kiln $version " "$TMP/out" "run --version"

# ---------------------------------------------------------------------------
# compile: outputs, the version stamp, the debug printer, a reused directory.

run compile "$MODELS/mlp/model.onnx" -o "$TMP/reuse"
expect_status 0 "compile mlp"
for f in program.cpp wrapper.py wrapper.pb report.md; do
  [[ -s "$TMP/reuse/$f" ]] && pass || fail "compile mlp did not write $f"
done
for f in program.cpp wrapper.py report.md; do
  grep -q "kiln $version" "$TMP/reuse/$f" && pass || fail "compile: $f has no version stamp"
done
ls "$TMP/reuse/constants/"*.bin >/dev/null 2>&1 && pass || fail "compile mlp wrote no constants"
# Into the same directory, a model without large constants: the old ones go.
run compile "$add_one/model.onnx" -o "$TMP/reuse"
expect_status 0 "compile add_one into a used directory"
[[ ! -e "$TMP/reuse/constants" ]] && pass ||
  fail "compile into a used directory left the old model's constants: $(ls "$TMP/reuse/constants")"
[[ -s "$TMP/reuse/program.cpp" ]] && pass || fail "compile add_one: no program.cpp"
# A file of the user's own is never removed.
echo mine >"$TMP/reuse/notes.txt"
run compile "$MODELS/mlp/model.onnx" -o "$TMP/reuse"
[[ -f "$TMP/reuse/notes.txt" ]] && pass || fail "compile removed a file it did not write"
# KILN_DEBUG_PRINTER reaches wrapper.py.
KILN_DEBUG_PRINTER=PRINT_KERNEL_NAMES_ONLY "$KILN" compile "$add_one/model.onnx" -o "$TMP/debug" \
  >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_status 0 "compile with KILN_DEBUG_PRINTER"
grep -q "before_launch" "$TMP/debug/wrapper.py" && pass ||
  fail "KILN_DEBUG_PRINTER=PRINT_KERNEL_NAMES_ONLY: wrapper.py prints no kernel names"
run compile "$add_one/model.onnx" -o "$TMP/nodebug"
grep -q "before_launch" "$TMP/nodebug/wrapper.py" && fail "wrapper.py has debug calls without KILN_DEBUG_PRINTER" || pass
KILN_DEBUG_PRINTER=loud "$KILN" compile "$add_one/model.onnx" -o "$TMP/debug" >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_status 2 "compile with a bad KILN_DEBUG_PRINTER"
expect_one_error_line "compile with a bad KILN_DEBUG_PRINTER" "KILN_DEBUG_PRINTER"

# --compile-to: each stage writes its own output and stops there.
for stage_file in graph:graph.txt optimized:optimized.txt loops:loops.txt wrapper:wrapper.txt \
                  source:program.cpp; do
  stage=${stage_file%%:*}
  file=${stage_file#*:}
  run compile "$MODELS/mlp/model.onnx" -o "$TMP/stage_$stage" --compile-to=$stage
  expect_status 0 "compile --compile-to=$stage"
  [[ -s "$TMP/stage_$stage/$file" ]] && pass || fail "compile --compile-to=$stage: no $file: $(ls "$TMP/stage_$stage")"
  expect_match "^$stage: " "$TMP/out" "compile --compile-to=$stage"
done
# The MLP's linears and ReLUs become library calls with fused epilogues.
expect_match "^buf0 : Float\[8, 128\] = extern kiln::linear_post_ops" "$TMP/stage_loops/loops.txt" "compile --compile-to=loops"
[[ ! -e "$TMP/stage_graph/program.cpp" ]] && pass || fail "compile --compile-to=graph wrote program.cpp"
run compile "$MODELS/mlp/model.onnx" -o "$TMP/stage_bad" --compile-to=assembly
expect_status 2 "compile --compile-to=assembly"
expect_one_error_line "compile --compile-to=assembly" "unknown stage 'assembly' \(expected graph, optimized, loops, wrapper, source, program\)"

# ---------------------------------------------------------------------------
# Pictures, stages and a timeline of squeezenet.

run compile "$SQUEEZENET/model.onnx" -o "$TMP/squeezenet" --dot --trace "$TMP/squeezenet.trace.json" \
  --dump-dir "$TMP/squeezenet_stages"
expect_status 0 "compile squeezenet --dot --trace --dump-dir"
for f in graph.dot kernels.dot graph.svg kernels.svg; do
  [[ -s "$TMP/squeezenet/$f" ]] && pass || fail "compile squeezenet --dot: no $f"
done
expect_match '^digraph kiln_ir \{' "$TMP/squeezenet/graph.dot" "graph.dot"
expect_match 'kiln::conv_post_ops' "$TMP/squeezenet/graph.dot" "graph.dot"  # convolution + ReLU
expect_match 'label="cpp_fused_' "$TMP/squeezenet/kernels.dot" "kernels.dot"
expect_match '<svg' "$TMP/squeezenet/kernels.svg" "kernels.svg"
for f in 1_graph.txt 2_optimized.txt 3_loops.txt 4_wrapper.txt 5_program.cpp; do
  [[ -s "$TMP/squeezenet_stages/$f" ]] && pass || fail "compile squeezenet --dump-dir: no $f"
done
# The trace: Chrome's event format, with every stage and each pass.
/usr/bin/python3 - "$TMP/squeezenet.trace.json" >"$TMP/trace_check" 2>&1 <<'PY'
import json, sys
trace = json.load(open(sys.argv[1]))
events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
names = {e["name"] for e in events}
want = {"import", "passes", "constant_propagation", "dead_code_elimination", "shape propagation",
        "lowering", "scheduling", "wrapper", "memory planning", "device compile",
        "C++ compile (g++)", "dlopen"}
missing = want - names
assert not missing, f"missing events: {sorted(missing)}"
for e in events:
    assert e["dur"] >= 0 and e["ts"] >= 0 and isinstance(e["pid"], int), e
passes = [e for e in events if e["cat"] == "pass"]
outer = next(e for e in events if e["name"] == "passes")
for p in passes:  # each pass lies inside "passes"
    assert outer["ts"] <= p["ts"] and p["ts"] + p["dur"] <= outer["ts"] + outer["dur"] + 1, p
print("trace ok:", len(events), "events")
PY
[[ $? -eq 0 ]] && pass || fail "squeezenet trace: $(cat "$TMP/trace_check")"

# ---------------------------------------------------------------------------
# --json: every command's document matches docs/cli_json.schema.json.

json_dir="$TMP/json"
mkdir -p "$json_dir"
json_run() {  # json_run NAME WANT_STATUS ARGS...
  local name=$1 want=$2
  shift 2
  "$KILN" "$@" --json >"$json_dir/$name.json" 2>"$TMP/err"
  rc=$?
  expect_status "$want" "$name --json"
}
json_run run_interpreter 0 run "$MODELS/mlp/model.onnx"
json_run run_compiled 0 run "$SQUEEZENET/model.onnx" --backend compiled --inputs "$SQUEEZENET/test_data_set_0"
json_run run_mismatch 1 run "$add_one/model.onnx" --inputs "$add_one/test_data_set_0"
json_run run_expand 0 run "$FIXTURES/expand_huge.onnx"
json_run compile_program 0 compile "$MODELS/mlp/model.onnx" -o "$TMP/json_compile"
json_run compile_optimized 0 compile "$MODELS/mlp/model.onnx" -o "$TMP/json_compile2" --compile-to=optimized
json_run conformance_pass 0 conformance --root "$FIXTURES/tolerance" --atol 0.05
json_run conformance_fail 1 conformance --root "$FIXTURES/tolerance"
json_run opt_stats 0 opt "$FIXTURES/../../testdata/torchscript/mlp.frozen.graph.txt" -O2 --stats -o "$TMP/opt.txt"
/usr/bin/python3 "$CHECKER" "$SCHEMA" "$json_dir"/*.json >"$TMP/schema_check" 2>&1
[[ $? -eq 0 ]] && pass || fail "--json output does not match the schema: $(head -c 1000 "$TMP/schema_check")"
expect_match '"passed": false' "$json_dir/run_mismatch.json" "run --json reports the failed check"
expect_match '"command": "opt"' "$json_dir/opt_stats.json" "opt --stats --json"
# The checker itself rejects what the schema does not allow.
sed 's/"command": "run"/"command": "walk"/' "$json_dir/run_interpreter.json" >"$TMP/bad.json"
/usr/bin/python3 "$CHECKER" "$SCHEMA" "$TMP/bad.json" >/dev/null 2>&1
[[ $? -eq 1 ]] && pass || fail "the schema check accepts a document with an unknown command"
run opt "$FIXTURES/../../testdata/torchscript/mlp.frozen.graph.txt" --stats --json
expect_status 2 "opt --json without -o"
expect_one_error_line "opt --json without -o" "write the graph with -o FILE"

# ---------------------------------------------------------------------------
# Progress on a terminal (util-linux `script` gives the command one).

if command -v script >/dev/null && script -qec true /dev/null >/dev/null 2>&1; then
  script -qec "'$KILN' conformance --root '$FIXTURES/tolerance' --atol 0.05" /dev/null >"$TMP/tty" 2>&1
  grep -q 'conformance \[1/1\] test_add_one' "$TMP/tty" && pass ||
    fail "conformance on a terminal shows no progress: $(cat -A "$TMP/tty" | head -c 300)"
  run conformance --root "$FIXTURES/tolerance" --atol 0.05
  grep -q '\[1/1\]' "$TMP/err" && fail "progress written when stderr is not a terminal" || pass
else
  echo "note: no pseudo-terminal here (util-linux script); progress not checked"
fi

finish kiln_model_cli_test
