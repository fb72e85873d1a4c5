#!/usr/bin/env bash
# The seed walkthrough: builds assistant and runs the return flow on the
# teaching orders in a fresh data dir, one process per step, printing each
# step's command, exit code and JSON. It stops at the first surprise.
#
#   scripts/demo.sh            # fresh temporary data dir, removed at the end
#   DATA=./demo-data scripts/demo.sh   # keep the data dir to look at it
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin="$work/assistant"
# As README.md builds it; -buildvcs=auto stamps the git revision even where
# GOFLAGS says -buildvcs=false (docs/cli.md "Conventions").
echo "demo: building assistant (about a minute on a fresh clone, seconds once Go's build cache is warm): CGO_ENABLED=0 go build -buildvcs=auto -o $bin ."
(cd "$root" && CGO_ENABLED=0 go build -buildvcs=auto -o "$bin" .)
echo "demo: built $("$bin" --version)"
data=${DATA:-$work/data}
if [ -e "$data" ] && [ -n "${DATA:-}" ]; then
  echo "demo: $data exists; choose a new DATA dir" >&2
  exit 2
fi

# say WORDS...: prints a command line as it can be pasted: "$ " and each
# word quoted for bash (printf %q).
say() {
  printf '$'
  printf ' %q' "$@"
  echo
}

# step WANT_EXIT ARGS...: runs one command as a new process and prints it
# first, with the flags it adds (--data, --output json).
step() {
  local want=$1; shift
  local cmd=("$bin" --data "$data" --output json "$@")
  echo
  say "${cmd[@]}"
  set +e
  out=$("${cmd[@]}" 2>"$work/stderr")
  rc=$?
  set -e
  echo "$out"
  [ -s "$work/stderr" ] && sed 's/^/stderr: /' "$work/stderr"
  echo "exit $rc"
  if [ "$rc" != "$want" ]; then
    echo "demo: expected exit $want, got $rc" >&2
    exit 1
  fi
}

# expect TEXT: the last step's output contains TEXT.
expect() {
  if ! grep -qF -- "$1" <<<"$out"; then
    echo "demo: expected $1 in the output above" >&2
    exit 1
  fi
}

echo "== 1. start with a reason: parks at the approval question, then the process exits"
step 0 start return-25 A3003 --reason "尺寸不合适"; expect '"kind": "approval"'
echo "== a new process shows the same draft"
step 0 show return-25; expect '"stage": "draft_ready"'
echo "== approve: submits the application"
step 0 resume return-25 --action approve; expect '"stage": "submitted"'
echo "== approve again: the same application, reused"
step 0 resume return-25 --action approve; expect '"reused": true'

echo "== 2. start without a reason: asks for one"
step 0 start return-25b A3004; expect '"kind": "need_reason"'
echo "== an answer of the wrong kind is refused and changes nothing"
step 2 resume return-25b --action approve
echo "== a blank reason is asked again"
step 0 resume return-25b --reason "   "; expect 'must not be blank'
step 0 resume return-25b --reason "尺寸不合适"; expect '"kind": "approval"'
echo "== cancel: no application"
step 0 resume return-25b --action cancel; expect '"stage": "cancelled"'

echo "== 3. a draft that expires before approval fails and submits nothing"
step 0 start return-27 A3001 --reason "wrong colour" --draft-ttl 1s
sleep 1.5
step 0 resume return-27 --action approve; expect '"code": "draft_expired"'

echo "== 4. other users' tasks look unknown; ineligible orders fail with a reason code"
step 4 --user other show return-25
step 4 start return-28 NOPE --reason x
step 0 start return-29 A3007 --reason x; expect '"code": "final_sale"'
step 2 start "bad id" A3003

echo "== 5. killed after the application committed: the next approve finishes with that one application"
step 0 start return-30 A3002 --reason "too small"
echo
say ASSISTANT_FAULT=submit:after-business-commit "$bin" --data "$data" resume return-30 --action approve
set +e
# In a subshell whose stderr is dropped, so bash's own "Killed" note stays quiet.
rc=$( (ASSISTANT_FAULT=submit:after-business-commit "$bin" --data "$data" resume return-30 --action approve >/dev/null 2>&1; echo $?) 2>/dev/null)
set -e
echo "exit $rc (killed)"
[ "$rc" = 137 ] || { echo "demo: expected exit 137" >&2; exit 1; }
step 0 resume return-30 --action approve; expect '"reused": true'

echo
echo "== 6. the two files agree: verify reads both and writes nothing; backup copies them while processes may run"
step 0 verify; expect '"clean": true'
step 0 backup "$work/backup"; expect '"clean": true'

echo
echo "== the tasks in $data"
say "$bin" --data "$data" --output text list
"$bin" --data "$data" --output text list
echo
echo "demo: all steps behaved as expected"
