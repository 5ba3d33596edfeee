#!/usr/bin/env bash
# End-to-end tests of the kiln binary.
#
# Usage: kiln_cli_test.sh KILN GRAPH.txt...
# Runs every subcommand over every corpus graph (round trips through all three
# file formats must give back the same text) and checks the error contract:
# exit status 2 and exactly one "kiln: error: ..." line on stderr for bad
# input, 1 for a graph the verifier rejects, 0 for --help.
set -u

KILN="$1"
shift
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_lib.sh"

# ---------------------------------------------------------------------------
# Every corpus graph.

num_graphs=0
for graph in "$@"; do
  num_graphs=$((num_graphs + 1))
  name=$(basename "$graph" .graph.txt)
  work="$TMP/$name"
  mkdir -p "$work"

  run parse "$graph"
  expect_status 0 "parse $name"
  grep -Eq '^ok: [0-9]+ nodes, [0-9]+ values' "$TMP/out" && pass ||
    fail "parse $name: unexpected output: $(cat "$TMP/out")"

  run verify "$graph"
  expect_status 0 "verify $name"
  [[ "$(cat "$TMP/out")" == "ok" ]] && pass || fail "verify $name: output $(cat "$TMP/out")"

  run print "$graph" -o "$work/printed.txt"
  expect_status 0 "print $name"
  # Raw str(graph) dumps must come back byte for byte; the normalised
  # (.parseable) and synthetic files are not in canonical form, so for them
  # printing must merely be a fixed point.
  case "$name" in
    *.parseable | synth_*)
      run print "$work/printed.txt" -o "$work/printed2.txt"
      expect_status 0 "print (again) $name"
      cmp -s "$work/printed.txt" "$work/printed2.txt" && pass ||
        fail "print $name: printing the printed text changes it"
      ;;
    *)
      cmp -s "$graph" "$work/printed.txt" && pass ||
        fail "print $name: differs from the original: $(diff "$graph" "$work/printed.txt" | head -5)"
      ;;
  esac

  # Printing to stdout gives the same text as -o.
  run print "$graph"
  cmp -s "$TMP/out" "$work/printed.txt" && pass || fail "print $name: stdout differs from -o"

  # text -> binary proto -> text proto -> text, then back through pb again.
  run convert "$graph" -o "$work/g.pb"
  expect_status 0 "convert $name txt->pb"
  run convert "$work/g.pb" -o "$work/g.pbtxt"
  expect_status 0 "convert $name pb->pbtxt"
  run convert "$work/g.pbtxt" -o "$work/g.txt"
  expect_status 0 "convert $name pbtxt->txt"
  cmp -s "$work/printed.txt" "$work/g.txt" && pass ||
    fail "convert $name: txt->pb->pbtxt->txt changed the text: $(diff "$work/printed.txt" "$work/g.txt" | head -5)"
  run convert "$work/g.pbtxt" -o "$work/g2.pb"
  expect_status 0 "convert $name pbtxt->pb"
  cmp -s "$work/g.pb" "$work/g2.pb" && pass || fail "convert $name: pb->pbtxt->pb changed the bytes"
  run verify "$work/g.pb"
  expect_status 0 "verify $name (pb)"
  # --format / --to override the extensions.
  cp "$work/g.pb" "$work/g.bin"
  run convert "$work/g.bin" --format=pb -o "$work/g.out" --to text
  expect_status 0 "convert $name --format=pb --to text"
  cmp -s "$work/printed.txt" "$work/g.out" && pass || fail "convert $name: --format/--to round trip"

  # -O2: the output parses and verifies, and never has more nodes.
  run opt -O2 "$graph" -o "$work/opt.txt"
  expect_status 0 "opt -O2 $name"
  run verify "$work/opt.txt"
  expect_status 0 "verify (opt -O2 output) $name"
  run parse "$work/opt.txt"
  nodes_out=$(sed -n 's/^ok: \([0-9]*\) nodes.*/\1/p' "$TMP/out")
  run parse "$graph"
  nodes_in=$(sed -n 's/^ok: \([0-9]*\) nodes.*/\1/p' "$TMP/out")
  [[ -n "$nodes_out" && "$nodes_out" -le "$nodes_in" ]] && pass ||
    fail "opt -O2 $name: $nodes_in nodes in, '$nodes_out' out"
done
[[ "$num_graphs" -gt 0 ]] && pass || fail "no corpus graphs given"

# ---------------------------------------------------------------------------
# Help and usage.

run --help
expect_status 0 "--help"
for cmd in parse print verify convert opt; do
  grep -q "^  $cmd " "$TMP/out" && pass || fail "--help does not list '$cmd'"
done
run help
expect_status 0 "help"
run print --help
expect_status 0 "print --help"
grep -q -- "-o VALUE" "$TMP/out" && pass || fail "print --help does not list -o: $(cat "$TMP/out")"
run help convert
expect_status 0 "help convert"
grep -q -- "--to=VALUE" "$TMP/out" && pass || fail "help convert does not list --to"

run
expect_status 2 "no arguments"
run frobnicate x.txt
expect_status 2 "unknown command"
expect_one_error_line "unknown command" "unknown command 'frobnicate'"
run print --bogus "$1"
expect_status 2 "unknown flag"
expect_one_error_line "unknown flag" "unknown flag '--bogus'"
run parse --to=pb "$1"
expect_status 2 "flag of another command"
expect_one_error_line "flag of another command" "unknown flag"
run print
expect_status 2 "print without a file"
expect_one_error_line "print without a file" "expected one graph file"
run convert "$1"
expect_status 2 "convert without -o"
expect_one_error_line "convert without -o" "missing -o"
run compile "$1" -o "$TMP/bad_precision" --precision bogus
expect_status 2 "bad --precision"
expect_one_error_line "bad --precision" "unknown precision 'bogus' .expected fp32, tf32, bf16 or fp16"
run print --format=xml "$1"
expect_status 2 "bad --format"
expect_one_error_line "bad --format" "unknown graph format 'xml'"

# ---------------------------------------------------------------------------
# Bad input files.

run print "$TMP/does_not_exist.txt"
expect_status 2 "missing file"
expect_one_error_line "missing file" "does_not_exist.txt: .*[Nn]o such file"
run verify "$TMP/does_not_exist.txt"
expect_status 2 "verify missing file"
run parse --format=text "$TMP"
expect_status 2 "directory as input"
expect_one_error_line "directory as input" "[Ii]s a directory"
echo "graph():" >"$TMP/model.onnx"
run parse "$TMP/model.onnx"
expect_status 2 "unknown extension"
expect_one_error_line "unknown extension" "cannot tell the graph format"

printf 'graph(%%x : Tensor):\n  %%y : Tensor = aten::relu(%%x)\n  %%z : Tensor = aten::relu(%%y\n  return (%%z)\n' \
  >"$TMP/malformed.txt"
for cmd in parse print verify; do
  run $cmd "$TMP/malformed.txt"
  expect_status 2 "$cmd malformed text"
  expect_one_error_line "$cmd malformed text" "malformed\.txt:[0-9]+:[0-9]+: "
done
run convert "$TMP/malformed.txt" -o "$TMP/malformed.pb"
expect_status 2 "convert malformed text"
[[ ! -e "$TMP/malformed.pb" ]] && pass || fail "convert of malformed text wrote an output file"

: >"$TMP/empty.txt"
run parse "$TMP/empty.txt"
expect_status 2 "empty text file"
expect_one_error_line "empty text file" "empty\.txt:"

printf 'graph(%%x : Tensor):\n  return (%%undefined)\n' >"$TMP/undefined.txt"
run verify "$TMP/undefined.txt"
expect_status 2 "undefined value"
expect_one_error_line "undefined value" "undefined\.txt:[0-9]+:[0-9]+: "

# Well-formed text that breaks IR invariants: verify exits 1 (not 2).
printf 'graph(%%x : Tensor):\n  %%y : Tensor = aten::relu(%%x, %%x)\n  return (%%y)\n' \
  >"$TMP/bad_schema.txt"
run verify "$TMP/bad_schema.txt"
expect_status 1 "verify schema mismatch"
expect_one_error_line "verify schema mismatch" "bad_schema\.txt: verification failed: .*aten::relu"
run verify --nocheck_schemas "$TMP/bad_schema.txt"
expect_status 0 "verify --nocheck_schemas"
run parse "$TMP/bad_schema.txt"
expect_status 0 "parse does not verify"
# An operator no schema knows: verify says so (exit 1) unless told not to
# check schemas.
printf 'graph(%%x : Tensor):\n  %%y : Tensor = aten::frobnicate(%%x)\n  return (%%y)\n' \
  >"$TMP/unknown_op.txt"
run verify "$TMP/unknown_op.txt"
expect_status 1 "verify an unknown operator"
expect_one_error_line "verify an unknown operator" \
  "unknown_op\.txt: verification failed: unknown operator aten::frobnicate \(no schema is registered for it\)"
run verify --nocheck_schemas "$TMP/unknown_op.txt"
expect_status 0 "verify --nocheck_schemas with an unknown operator"
printf 'graph(%%c : bool):\n  %%x : int = prim::If(%%c)\n    block0():\n      -> ()\n    block1():\n      -> ()\n  return (%%x)\n' \
  >"$TMP/bad_if.txt"
run verify "$TMP/bad_if.txt"
expect_status 1 "verify prim::If output mismatch"
expect_one_error_line "verify prim::If output mismatch" "bad_if\.txt: verification failed: .*prim::If"

# Binary proto garbage and truncation.
printf '\xff\xff\xff\xff\x0f garbage' >"$TMP/garbage.pb"
run parse "$TMP/garbage.pb"
expect_status 2 "garbage .pb"
expect_one_error_line "garbage .pb" "garbage\.pb: "
first_pb=$(ls "$TMP"/*/g.pb | head -1)
head -c $(($(stat -c %s "$first_pb") / 2)) "$first_pb" >"$TMP/truncated.pb"
run verify "$TMP/truncated.pb"
expect_status 2 "truncated .pb"
expect_one_error_line "truncated .pb" "truncated\.pb: "
printf 'this is { not a graph proto\n' >"$TMP/bad.pbtxt"
run parse "$TMP/bad.pbtxt"
expect_status 2 "bad .pbtxt"
expect_one_error_line "bad .pbtxt" "bad\.pbtxt: "

# ---------------------------------------------------------------------------
# kiln opt: pipelines, statistics, dumps, logging, bisecting, errors.

# The synthetic graph has work for every -O2 pass; fall back to the first file.
opt_in="$1"
for graph in "$@"; do
  case "$(basename "$graph")" in synth_1e3.graph.txt) opt_in="$graph" ;; esac
done
opt_dir="$TMP/opt"
mkdir -p "$opt_dir"
O2_PASSES="constant_propagation peephole dead_code_elimination common_subexpression_elimination constant_pooling canonicalize"

# Default pipeline (-O2) to stdout, same as an explicit -O2 / --opt_level=2.
run opt "$opt_in"
expect_status 0 "opt (default pipeline)"
cp "$TMP/out" "$opt_dir/default.txt"
run opt -O2 "$opt_in" -o "$opt_dir/o2.txt"
expect_status 0 "opt -O2 -o"
cmp -s "$opt_dir/default.txt" "$opt_dir/o2.txt" && pass || fail "opt: default pipeline differs from -O2"
run opt --opt_level=2 "$opt_in" -o "$opt_dir/level2.txt"
cmp -s "$opt_dir/level2.txt" "$opt_dir/o2.txt" && pass || fail "opt: --opt_level=2 differs from -O2"
# -O0 changes nothing but the printing.
run opt -O0 "$opt_in" -o "$opt_dir/o0.txt"
expect_status 0 "opt -O0"
run print "$opt_in"
cmp -s "$TMP/out" "$opt_dir/o0.txt" && pass || fail "opt -O0 is not the printed input"
cmp -s "$opt_dir/o0.txt" "$opt_dir/o2.txt" && fail "opt -O2 did not change $opt_in" || pass

# --stats: every pass of -O2 has a row, on stderr; stdout stays the graph.
run opt -O2 --stats "$opt_in" -o "$opt_dir/stats.txt"
expect_status 0 "opt --stats"
for p in $O2_PASSES; do
  grep -Eq "^$p +[0-9]+ " "$TMP/err" && pass || fail "opt --stats: no row for $p: $(cat "$TMP/err")"
done
grep -q "fixpoint(" "$TMP/err" && pass || fail "opt --stats: no fixpoint line"
cmp -s "$opt_dir/stats.txt" "$opt_dir/o2.txt" && pass || fail "opt --stats changed the output"
runs_of() { sed -n "s/^$1 *\([0-9]*\) .*/\1/p" "$TMP/err"; }
[[ "$(runs_of dead_code_elimination)" -ge 1 ]] && pass || fail "opt --stats: dce did not run"

# --passes with aliases and a fixpoint group; only those passes appear.
run opt --passes='constprop,fixpoint(dce,cse)' --stats "$opt_in" -o "$opt_dir/p.txt"
expect_status 0 "opt --passes"
grep -Eq '^common_subexpression_elimination +[1-9]' "$TMP/err" && pass || fail "opt --passes: cse did not run"
grep -q '^peephole' "$TMP/err" && fail "opt --passes: peephole ran: $(cat "$TMP/err")" || pass
run verify "$opt_dir/p.txt"
expect_status 0 "verify (opt --passes output)"

# --disable-pass (dashes or underscores, repeated or a comma list).
run opt -O2 --stats --disable-pass=cse --disable-pass peephole "$opt_in" -o "$opt_dir/d.txt"
expect_status 0 "opt --disable-pass"
grep -Eq '^common_subexpression_elimination +0 .*disabled' "$TMP/err" && pass ||
  fail "opt --disable-pass=cse: cse still ran: $(cat "$TMP/err")"
grep -Eq '^peephole +0 .*disabled' "$TMP/err" && pass ||
  fail "opt --disable-pass peephole (repeated flag): peephole still ran: $(cat "$TMP/err")"
grep -Eq '^dead_code_elimination +[1-9]' "$TMP/err" && pass || fail "opt --disable-pass: dce no longer ran"
run opt -O2 --stats --disable_pass=dce,pool "$opt_in" -o "$opt_dir/d2.txt"
grep -Eq '^dead_code_elimination +0 .*disabled' "$TMP/err" && pass || fail "opt --disable_pass=dce,pool: dce ran"
grep -Eq '^constant_pooling +0 .*disabled' "$TMP/err" && pass || fail "opt --disable_pass=dce,pool: pooling ran"
cmp -s "$opt_dir/d.txt" "$opt_dir/o2.txt" && fail "opt --disable-pass did not change the output" || pass

# --stop-after=N runs exactly N pass executions.
run opt -O2 --stats --stop-after=2 "$opt_in" -o "$opt_dir/s.txt"
expect_status 0 "opt --stop-after"
grep -q "2 pass executions" "$TMP/err" && pass || fail "opt --stop-after=2: $(head -3 "$TMP/err")"
grep -q "stopped after 2 pass executions" "$TMP/err" && pass || fail "opt --stop-after=2: no 'stopped after' line"
grep -Eq '^dead_code_elimination +0 ' "$TMP/err" && pass || fail "opt --stop-after=2: dce ran"
run opt -O2 --stop_after=0 "$opt_in" -o "$opt_dir/s0.txt"
cmp -s "$opt_dir/s0.txt" "$opt_dir/o0.txt" && pass || fail "opt --stop_after=0 changed the graph"

# --dump-dir: the input and every changed pass, numbered, as .txt and .pb.
run opt -O2 --dump-dir="$opt_dir/dumps" "$opt_in" -o "$opt_dir/dumped.txt"
expect_status 0 "opt --dump-dir"
[[ -f "$opt_dir/dumps/000_input.txt" && -f "$opt_dir/dumps/000_input.pb" ]] && pass ||
  fail "opt --dump-dir: no 000_input.{txt,pb}: $(ls "$opt_dir/dumps" 2>&1)"
num_txt=$(ls "$opt_dir/dumps" | grep -Ec '^[0-9]{3}_[a-z_]+\.txt$')
num_pb=$(ls "$opt_dir/dumps" | grep -Ec '^[0-9]{3}_[a-z_]+\.pb$')
[[ "$num_txt" -ge 3 && "$num_txt" -eq "$num_pb" ]] && pass ||
  fail "opt --dump-dir: $num_txt .txt and $num_pb .pb dumps: $(ls "$opt_dir/dumps")"
ls "$opt_dir/dumps" | grep -q '^001_constant_propagation\.txt$' && pass ||
  fail "opt --dump-dir: no 001_constant_propagation.txt: $(ls "$opt_dir/dumps")"
last_dump=$(ls "$opt_dir/dumps"/*.txt | sort | tail -1)
cmp -s "$last_dump" "$opt_dir/dumped.txt" && pass || fail "opt --dump-dir: last dump is not the output"
last_pb="${last_dump%.txt}.pb"
run print "$last_pb"
cmp -s "$TMP/out" "$opt_dir/dumped.txt" && pass || fail "opt --dump-dir: .pb dump differs from .txt"

# KILN_LOG_LEVEL: per-pass log lines on stderr, aliases work.
KILN_LOG_LEVEL=">>dead_code_elimination" "$KILN" opt -O2 "$opt_in" -o "$opt_dir/log.txt" \
  >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_status 0 "opt with KILN_LOG_LEVEL"
grep -Eq '^\[(DUMP|UPDATE|DEBUG) dead_code_elimination\] ' "$TMP/err" && pass ||
  fail "KILN_LOG_LEVEL=>>dead_code_elimination: no log lines: $(head -c 300 "$TMP/err")"
grep -Ev '^\[(DUMP|UPDATE|DEBUG) dead_code_elimination\] ' "$TMP/err" | grep -q . &&
  fail "KILN_LOG_LEVEL: lines of other passes: $(grep -Ev 'dead_code_elimination' "$TMP/err" | head -3)" ||
  pass
KILN_LOG_LEVEL=">>pipeline" "$KILN" opt --passes=cse "$opt_in" -o "$opt_dir/log.txt" \
  >"$TMP/out" 2>"$TMP/err"
grep -q 'common_subexpression_elimination: changed=' "$TMP/err" && pass ||
  fail "KILN_LOG_LEVEL=>>pipeline: no per-execution line: $(head -c 300 "$TMP/err")"
KILN_LOG_LEVEL="dce" "$KILN" opt -O0 "$opt_in" -o "$opt_dir/log.txt" >"$TMP/out" 2>"$TMP/err"
[[ ! -s "$TMP/err" ]] && pass || fail "KILN_LOG_LEVEL: logs although dce did not run: $(head -3 "$TMP/err")"
KILN_LOG_LEVEL=">>>(" "$KILN" opt "$opt_in" -o "$opt_dir/log.txt" >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_status 2 "opt with a malformed KILN_LOG_LEVEL"
expect_one_error_line "opt with a malformed KILN_LOG_LEVEL" "KILN_LOG_LEVEL"

# Formats: text -> opt -> pb -> print is the same as opt to text.
run opt -O2 "$opt_in" -o "$opt_dir/o2.pb"
expect_status 0 "opt -o .pb"
run print "$opt_dir/o2.pb"
cmp -s "$TMP/out" "$opt_dir/o2.txt" && pass || fail "opt: text->opt->pb->print differs from opt to text"
run opt -O2 "$opt_dir/o2.pb" -o "$opt_dir/o2again.pbtxt"
expect_status 0 "opt .pb -> .pbtxt"
run print "$opt_dir/o2again.pbtxt"
cmp -s "$TMP/out" "$opt_dir/o2.txt" && pass || fail "opt: -O2 is not idempotent through pb/pbtxt"

# --list-passes names every pass and preset.
run opt --list-passes
expect_status 0 "opt --list-passes"
for p in $O2_PASSES shape_propagation decompose -O0 -O1 -O2; do
  grep -q -- "  $p" "$TMP/out" && pass || fail "opt --list-passes does not list $p"
done

# Errors: exit 2 and one line, before anything is written.
run opt --passes='dce,,cse' "$opt_in" -o "$opt_dir/bad.txt"
expect_status 2 "opt with a malformed --passes"
expect_one_error_line "opt with a malformed --passes" "pipeline 'dce,,cse': column 5"
run opt --passes='fixpoint(dce' "$opt_in" -o "$opt_dir/bad.txt"
expect_status 2 "opt with an unclosed fixpoint"
expect_one_error_line "opt with an unclosed fixpoint" "pipeline 'fixpoint\(dce'"
run opt --passes=dce,frobnicate "$opt_in" -o "$opt_dir/bad.txt"
expect_status 2 "opt with an unknown pass"
expect_one_error_line "opt with an unknown pass" \
  "unknown pass 'frobnicate'; known passes: .*dead_code_elimination \(dce\)"
run opt --disable-pass=frobnicate "$opt_in" -o "$opt_dir/bad.txt"
expect_status 2 "opt --disable-pass with an unknown pass"
expect_one_error_line "opt --disable-pass with an unknown pass" "unknown pass 'frobnicate'; known passes: "
run opt -O7 "$opt_in" -o "$opt_dir/bad.txt"
expect_status 2 "opt -O7"
expect_one_error_line "opt -O7" "unknown preset .-O7."
run opt -O1 --passes=dce "$opt_in" -o "$opt_dir/bad.txt"
expect_status 2 "opt -O1 --passes"
expect_one_error_line "opt -O1 --passes" "not both"
run opt --stop-after=-3 "$opt_in" -o "$opt_dir/bad.txt"
expect_status 2 "opt --stop-after=-3"
expect_one_error_line "opt --stop-after=-3"
run opt "$opt_in" -o "$opt_dir/bad.onnx"
expect_status 2 "opt to an unknown extension"
expect_one_error_line "opt to an unknown extension" "cannot tell the graph format"
run opt "$TMP/malformed.txt" -o "$opt_dir/bad.txt"
expect_status 2 "opt malformed text"
expect_one_error_line "opt malformed text" "malformed\.txt:[0-9]+:[0-9]+: "
[[ ! -e "$opt_dir/bad.txt" ]] && pass || fail "opt wrote an output after an error"
# An input the verifier rejects: exit 1, named, no output.
run opt "$TMP/bad_schema.txt" -o "$opt_dir/bad.txt"
expect_status 1 "opt of an invalid graph"
expect_one_error_line "opt of an invalid graph" "bad_schema\.txt: the input graph is invalid .*aten::relu"
[[ ! -e "$opt_dir/bad.txt" ]] && pass || fail "opt wrote an output for an invalid graph"
# --noverify skips verification between passes, never of the input.
for bad in bad_schema bad_if; do
  run opt --noverify "$TMP/$bad.txt" -o "$opt_dir/bad.txt"
  expect_status 1 "opt --noverify of an invalid graph ($bad)"
  expect_one_error_line "opt --noverify of an invalid graph ($bad)" "the input graph is invalid"
done

# ---------------------------------------------------------------------------
# Output handling.

run print "$1" -o "$TMP/no/such/dir/out.txt"
expect_status 2 "output in a missing directory"
expect_one_error_line "output in a missing directory" "out\.txt: "
# An existing output is replaced, and no temporary files are left behind.
echo "old contents" >"$TMP/replace.txt"
run print "$1" -o "$TMP/replace.txt"
expect_status 0 "print over an existing file"
run print "$1"
cmp -s "$TMP/out" "$TMP/replace.txt" && pass || fail "print -o did not replace the old file"
ls "$TMP" | grep -q '\.tmp\.' && fail "temporary files left behind: $(ls "$TMP")" || pass

# Relative paths are relative to BUILD_WORKING_DIRECTORY (set by `bazel run`).
mkdir -p "$TMP/wd"
cp "$1" "$TMP/wd/rel.txt"
BUILD_WORKING_DIRECTORY="$TMP/wd" "$KILN" print rel.txt -o rel_out.txt >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_status 0 "relative paths with BUILD_WORKING_DIRECTORY"
cmp -s "$TMP/wd/rel.txt" "$TMP/wd/rel_out.txt" 2>/dev/null && pass ||
  fail "relative -o was not written under BUILD_WORKING_DIRECTORY"

# stdin.
"$KILN" print - <"$1" >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_status 0 "print from stdin"
cmp -s "$TMP/out" "$TMP/replace.txt" && pass || fail "print - (stdin) differs"

finish "kiln_cli_test ($num_graphs graphs)"
