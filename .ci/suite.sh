# Sourced by .ci/run: run_suite runs one test command and adds its closing "N passed, N failed"
# line to the totals ($passed, $failed) and its verdict to $rc. A suite that exits non-zero
# without a failed test (its start failed, a dependency did not come up, it crashed after its
# tests) counts as one failure, so the last line never reads "0 failed" for a red run.
passed=${passed:-0}
failed=${failed:-0}
rc=${rc:-0}

run_suite() {
  local log
  log=$(mktemp)
  "$@" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  local summary
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1 || true)
  rm -f "$log"
  [ -n "$summary" ] || summary="0 passed, 1 failed"
  local p f
  p=$(echo "$summary" | cut -d' ' -f1)
  f=$(echo "$summary" | cut -d' ' -f3)
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "run_suite: \`$*\` exited with status $status and no failed test: counted as one failure"
    f=1
  fi
  passed=$((passed + p))
  failed=$((failed + f))
  [ "$status" -eq 0 ] && [ "$f" -eq 0 ] || rc=1
}
