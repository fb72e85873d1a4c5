#!/usr/bin/env bash
# The fault-injection matrix and a chaos run (docs/recovery.md "The fault
# matrix", "Chaos test"). For every fault point of the return flow × every
# walkthrough command that reaches it, the process is SIGKILLed at the
# point (ASSISTANT_FAULT), the command is run again to recover, and seven
# checks are made:
#   1.head  the run went on from the last checkpoint before the kill
#   2.once  one application per approved draft, one draft per task, and the
#           idempotency keys are UNIQUE in the schema
#   3.same  the final JSON (ids, times, the reused flag masked) equals a run
#           with no fault
#   4.gate  a kill before the approval answer leaves the task waiting
#   5.exp   a draft that expires while the process is dead fails the
#           approval (draft_expired) with nothing submitted
#   6.redo  the recovery ran at most one superstep's work again
#   7.time  the recovery took at most the matrix's limit (its recovery_ms)
# Then CHAOS_KILLS (default 30) random SIGKILLs during a batch and during
# concurrent approvals, followed by recover, with the same invariants and
# PRAGMA integrity_check, and the kills of a decide run. Exit status is
# non-zero on any FAIL.
#
#   scripts/faults.sh
#   CHAOS_KILLS=1000 scripts/faults.sh
#   FAULT_HISTORY=/tmp/faults.tsv scripts/faults.sh
#
# The matrix's cases run one at a time, so that each recovery's time is
# its own. Each run adds one line to the figures history, FAULT_HISTORY
# (default: faults.tsv in ${XDG_DATA_HOME:-~/.local/share}/assistant, kept
# outside the repository): when, the revision, the cases, the failed
# checks, the median and longest recovery_ms, and the redo ratio. The last
# lines are printed after the matrix: a jump in recovery time or redo
# ratio between revisions shows there.
set -euo pipefail
cd "$(dirname "$0")/.."
report=$(mktemp)
trap 'rm -f "$report"' EXIT
status=0
history=${FAULT_HISTORY:-${XDG_DATA_HOME:-$HOME/.local/share}/assistant/faults.tsv}
mkdir -p "$(dirname "$history")"
history=$(cd "$(dirname "$history")" && pwd)/$(basename "$history")
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  rev="$rev+dirty"
fi
FAULT_FIGURES="$history" FAULT_REV="$rev" FAULT_REPORT="$report" go test -count=1 -timeout 60m -run 'TestFaultMatrix|TestChaos|TestDecideKilledAtFaultPoints' -v ./e2e/ > "$report.log" 2>&1 || status=$?
cat "$report"
if [ -s "$history" ]; then
  echo "figures history ($history), last runs:"
  table=cat
  command -v column >/dev/null && table=(column -t -s "$(printf '\t')")
  { head -n 1 "$history"; tail -n +2 "$history" | tail -n 5; } | "${table[@]}"
fi
grep -E '^(--- |ok|FAIL|PASS)|kills, seed' "$report.log" || true
if [ "$status" != 0 ]; then
  echo "faults: FAILED (full log: $report.log)" >&2
  trap - EXIT
  exit "$status"
fi
rm -f "$report.log"
