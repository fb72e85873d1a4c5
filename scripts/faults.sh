#!/usr/bin/env bash
# The fault-injection matrix and a chaos run (issue 6). For every fault point
# of the return flow × every walkthrough command that reaches it, the process
# is SIGKILLed at the point (ASSISTANT_FAULT), the command is run again to
# recover, and five checks are made:
#   1.head  the run went on from the last checkpoint before the kill
#   2.once  one application per approved draft, one draft per task, and the
#           idempotency keys are UNIQUE in the schema
#   3.same  the final JSON (ids, times, the reused flag masked) equals a run
#           with no fault
#   4.gate  a kill before the approval answer leaves the task waiting
#   5.exp   a draft that expires while the process is dead fails the
#           approval (draft_expired) with nothing submitted
# Then CHAOS_KILLS (default 30) random SIGKILLs during a batch and during
# concurrent approvals, followed by recover, with the same invariants and
# PRAGMA integrity_check. Exit status is non-zero on any FAIL.
#
#   scripts/faults.sh
#   CHAOS_KILLS=1000 scripts/faults.sh
#
# Each run also appends, per fault point, the finished steps the recovery
# redid, the steps the kill cut and the recovery's wall time to
# testdata/faults/figures.tsv: compare a run with the ones before it (a jump
# in redone steps means the checkpoint policy changed). The fault matrix
# fails when a recovery runs more than one node's work again.
set -euo pipefail
cd "$(dirname "$0")/.."
report=$(mktemp)
trap 'rm -f "$report"' EXIT
status=0
mkdir -p testdata/faults
figures=testdata/faults/figures.tsv
[ -s "$figures" ] || printf 'at\trev\tscenario\tpoint @ command\tredone\tinterrupted\trecovery_ms\n' > "$figures"
FAULT_FIGURES="$PWD/$figures" FAULT_REV="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" FAULT_REPORT="$report" go test -count=1 -timeout 60m -run 'TestFaultMatrix|TestChaos|TestDecideKilledAtFaultPoints' -v ./e2e/ > "$report.log" 2>&1 || status=$?
cat "$report"
grep -E '^(--- |ok|FAIL|PASS)|kills, seed' "$report.log" || true
if [ "$status" != 0 ]; then
  echo "faults: FAILED (full log: $report.log)" >&2
  trap - EXIT
  exit "$status"
fi
rm -f "$report.log"
