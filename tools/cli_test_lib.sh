# Shared by kiln's CLI tests (sourced): a scratch directory, pass/fail
# counters, `run` (runs $KILN, leaving $rc, $TMP/out and $TMP/err) and the
# checks of the error contract. The sourcing script sets KILN first and ends
# with `finish NAME`.
TMP="${TEST_TMPDIR:-$(mktemp -d)}/${KILN_TEST_NAME:-kiln_cli}"
rm -rf "$TMP" && mkdir -p "$TMP"

checks=0
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
pass() { checks=$((checks + 1)); }

# run CMD... : runs kiln, leaving status in $rc, stdout in $TMP/out, stderr in
# $TMP/err.
run() {
  "$KILN" "$@" >"$TMP/out" 2>"$TMP/err"
  rc=$?
}

# expect_status WANT DESCRIPTION
expect_status() {
  if [[ "$rc" -eq "$1" ]]; then pass; else
    fail "$2: exit status $rc, want $1; stderr: $(head -c 500 "$TMP/err")"
  fi
}

# The error contract: exactly one line on stderr, "kiln: error: " first, and
# matching the extended regex $2 if given.
expect_one_error_line() {
  local lines
  lines=$(wc -l <"$TMP/err")
  if [[ "$lines" -ne 1 ]]; then
    fail "$1: want exactly one stderr line, got $lines: $(head -c 500 "$TMP/err")"
    return
  fi
  if ! grep -q '^kiln: error: ' "$TMP/err"; then
    fail "$1: stderr does not start with 'kiln: error: ': $(cat "$TMP/err")"
    return
  fi
  if [[ $# -ge 2 ]] && ! grep -Eq -- "$2" "$TMP/err"; then
    fail "$1: stderr does not match /$2/: $(cat "$TMP/err")"
    return
  fi
  pass
}

# expect_match REGEX FILE DESCRIPTION: FILE has a line matching the extended
# regex.
expect_match() {
  if grep -Eq -- "$1" "$2"; then pass; else
    fail "$3: $(basename "$2") does not match /$1/: $(head -c 500 "$2")"
  fi
}

# finish NAME: the summary line, and the exit status of the test.
finish() {
  echo "$1: $checks checks passed, $failures failed"
  [[ "$failures" -eq 0 ]]
}
