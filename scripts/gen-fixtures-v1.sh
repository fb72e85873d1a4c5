#!/usr/bin/env bash
# Generates testdata/fixtures/v1/{checkpoints,business}.sqlite: the two files
# as the first schema version wrote them (commit e2f4e33: business and
# checkpoints both at schema version 1). main_storage_test.go opens them with
# the current binary and checks the parked task resumes and submits.
#
# Run it once, by hand, and commit the two files; it is not part of the
# tests. Needs git, go and the sqlite3 shell.
#
#   scripts/gen-fixtures-v1.sh
#
# What it does:
#  1. a git worktree of e2f4e33 in a temp dir; build that binary;
#  2. `start return-25 A3003 --reason "尺寸不合适"` in a fresh data dir: the
#     task parks at the approval question; the process exits, and its last
#     connection checkpoints the WAL into the main files (checked below);
#  3. moves the draft's expiry to 2099. Drafts expire on the wall clock and
#     that build allows at most 168h, so a fixture generated today would be
#     expired next week. The expiry lives in several places, all changed:
#       business.sqlite     drafts.expires_at
#       checkpoints.sqlite  checkpoints.values_json      $.draft.expires_at
#                           checkpoints.metadata_json    $.writes.prepare.draft.expires_at
#                           writes.value_json (interrupt) $.expires_at  (the approval question)
#     The edit uses sqlite3 with journal_mode=DELETE semantics left as they
#     were (WAL files are checkpointed and removed before copying).
set -euo pipefail

rev=e2f4e33
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/testdata/fixtures/v1"
work=$(mktemp -d)
cleanup() {
  git -C "$root" worktree remove --force "$work/src" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

command -v sqlite3 >/dev/null || { echo "gen-fixtures-v1: needs the sqlite3 shell" >&2; exit 2; }

git -C "$root" worktree add --detach "$work/src" "$rev" >/dev/null
(cd "$work/src" && go build -o "$work/assistant-v1" .)

data="$work/data"
"$work/assistant-v1" --data "$data" --output json start return-25 A3003 --reason "尺寸不合适" >"$work/start.json"
grep -q '"kind": "approval"' "$work/start.json" || { echo "gen-fixtures-v1: task did not park at approval:" >&2; cat "$work/start.json" >&2; exit 1; }

# The process has exited; its last connection checkpointed the WAL into the
# main file and removed it. Refuse to copy if any WAL content is left.
for f in checkpoints business; do
  if [ -s "$data/$f.sqlite-wal" ]; then
    echo "gen-fixtures-v1: $data/$f.sqlite-wal is not empty; not copying a file without its WAL" >&2
    exit 1
  fi
done

far="2099-01-01T00:00:00Z"
sqlite3 "$data/business.sqlite" \
  "UPDATE drafts SET expires_at = '2099-01-01T00:00:00.000000000Z' WHERE task_id = 'return-25';"
sqlite3 "$data/checkpoints.sqlite" "
UPDATE checkpoints SET values_json = json_set(values_json, '\$.draft.expires_at', '$far')
  WHERE thread_id = 'return-25' AND json_extract(values_json, '\$.draft') IS NOT NULL;
UPDATE checkpoints SET metadata_json = json_set(metadata_json, '\$.writes.prepare.draft.expires_at', '$far')
  WHERE thread_id = 'return-25' AND json_extract(metadata_json, '\$.writes.prepare.draft') IS NOT NULL;
UPDATE writes SET value_json = json_set(value_json, '\$.expires_at', '$far')
  WHERE thread_id = 'return-25' AND kind = 'interrupt' AND json_extract(value_json, '\$.expires_at') IS NOT NULL;
"
# sqlite3 opened the WAL files again; a clean close removes them. Check.
for f in checkpoints business; do
  if [ -s "$data/$f.sqlite-wal" ]; then
    echo "gen-fixtures-v1: $data/$f.sqlite-wal left after the edit" >&2
    exit 1
  fi
  echo "$f: user_version $(sqlite3 "$data/$f.sqlite" 'PRAGMA user_version') integrity $(sqlite3 "$data/$f.sqlite" 'PRAGMA integrity_check')"
done
left=$(sqlite3 "$data/checkpoints.sqlite" "SELECT count(*) FROM checkpoints WHERE values_json LIKE '%expires_at%' AND values_json NOT LIKE '%2099-%'")
[ "$left" = 0 ] || { echo "gen-fixtures-v1: $left checkpoints still hold the old expiry" >&2; exit 1; }

mkdir -p "$out"
cp "$data/checkpoints.sqlite" "$data/business.sqlite" "$out/"
chmod 0600 "$out"/*.sqlite
echo "wrote $out/checkpoints.sqlite and $out/business.sqlite (from $rev)"
