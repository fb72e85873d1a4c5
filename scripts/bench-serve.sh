#!/usr/bin/env bash
# The server benchmark of scripts/bench.sh, also run on its own:
#
#   scripts/bench-serve.sh BIN
#
# In one data dir, a batch parks N tasks at approval (each an order of its
# own); then, on three disjoint sets of them, the same decision (approve
# version 1) is given three ways, one after the other:
#
#   - 64 concurrent API clients (scripts/loadgen) against `assistant
#     serve`, each posting its next approval once the last was answered,
#     which is only after the decision is durable in both stores (group
#     commit, docs/server.md): decisions/s, p50 and p99 latency, and the
#     mean group size from the server's /metrics;
#   - 64 concurrent `assistant resume TASK --action approve` processes
#     (xargs -P 64): decisions/s;
#   - one `assistant decide FILE` of the same number of approvals as the
#     API clients: decisions/s.
#
# and prints the API's rate as a ratio to each. Sizes: BENCH_SERVE_API
# (default 6,400; 2,000 with BENCH_QUICK), BENCH_SERVE_CLI (640; 128) and
# the decide file as large as the API's set. With BENCH_SERVE_PG (a
# PostgreSQL URL whose user may create databases), the API approvals
# again on a database of their own through two servers (see the end).
set -euo pipefail
A=$1
root=$(cd "$(dirname "$0")/.." && pwd)
quick=${BENCH_QUICK:-}
n=${BENCH_SERVE_API:-$([ -n "$quick" ] && echo 2000 || echo 6400)}
ncli=${BENCH_SERVE_CLI:-$([ -n "$quick" ] && echo 128 || echo 640)}
clients=64
work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2> /dev/null; rm -rf "$work"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -o "$work/loadgen" ./scripts/loadgen)
total=$((2 * n + ncli))
python3 -c "
import datetime
d = (datetime.date.today() - datetime.timedelta(days=2)).isoformat()
print('order_id,user,item,delivered_at,final_sale')
for i in range($total): print(f'Z{i},demo-user,Bench item {i},{d},false')" > "$work/orders.csv"
python3 -c "
print('task,order,reason')
for i in range($total): print(f'z{i},Z{i},reason {i}')" > "$work/rows.csv"
python3 -c "
n, c = $n, $ncli
with open('$work/api.txt', 'w') as f:
    for i in range(n): print(f'z{i}', file=f)
with open('$work/cli.txt', 'w') as f:
    for i in range(n, n + c): print(f'z{i}', file=f)
with open('$work/decide.csv', 'w') as f:
    print('task,action', file=f)
    for i in range(n + c, 2 * n + c): print(f'z{i},approve', file=f)"
data="$work/data"
"$A" --data "$data" orders import --timezone UTC "$work/orders.csv" > /dev/null
"$A" --data "$data" batch park "$work/rows.csv" --draft-ttl 86400s > /dev/null
token=$("$A" --data "$data" --output json approvers token demo-user | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')

# now_s: the wall clock, in seconds.
now_s() { date +%s.%N; }

"$A" --data "$data" serve --addr 127.0.0.1:0 > "$work/serve.out" 2> "$work/serve.log" &
server=$!
until grep -q '^serving on ' "$work/serve.out" 2> /dev/null; do sleep 0.05; done
url=$(sed -n 's/^serving on //p' "$work/serve.out")
until curl -sf "$url/readyz" > /dev/null; do sleep 0.05; done
"$work/loadgen" -url "$url" -token "$token" -clients "$clients" "$work/api.txt" > "$work/api.out"
cat "$work/api.out"
curl -s "$url/metrics" | python3 -c "
import sys
v = {l.split()[0]: float(l.split()[1]) for l in sys.stdin if l.startswith('assistant_group_commit_decisions_')}
print('serve_decisions_per_group %.1f decisions' % (v['assistant_group_commit_decisions_sum'] / v['assistant_group_commit_decisions_count']))"
kill -TERM "$server"
wait "$server"
server=""

# A resume refused busy (the data dir's write lock held past its busy
# timeout by the 63 others) is counted, not retried: the rate is of the
# decisions made.
start=$(now_s)
made=$(xargs -P "$clients" -I{} sh -c '"$0" --data "$1" resume "$2" --action approve > /dev/null 2>> "$3" && echo made' "$A" "$data" {} "$work/resume.err" < "$work/cli.txt" | wc -l || true)
end=$(now_s)
resume_rate=$(python3 -c "print(f'{$made / ($end - $start):.0f}')")
echo "resume_64_decisions_per_s $resume_rate decisions/s"
echo "resume_64_refused $((ncli - made)) of $ncli"

start=$(now_s)
"$A" --data "$data" decide "$work/decide.csv" > /dev/null
end=$(now_s)
decide_rate=$(python3 -c "print(f'{$n / ($end - $start):.0f}')")
echo "decide_file_decisions_per_s $decide_rate decisions/s"

api_rate=$(awk '$1 == "serve_decisions_per_s" {print $2}' "$work/api.out")
echo "serve_over_resume_64 $(python3 -c "print(f'{$api_rate / $resume_rate:.1f}')") x_resume_processes"
echo "serve_over_decide $(python3 -c "print(f'{$api_rate / $decide_rate:.2f}')") x_decide"

# With BENCH_SERVE_PG set to a PostgreSQL URL (of any database on the
# server: ASSISTANT_TEST_PG's form), the same API approvals again on a
# database of their own made there, through two servers over it, the
# clients split between them: decisions/s, p50 and p99.
if [ -n "${BENCH_SERVE_PG:-}" ]; then
  db="bench_serve_$$"
  store=$(python3 -c "
import sys, urllib.parse as u
p = u.urlsplit(sys.argv[1]); print(p.scheme + '://' + p.netloc + '/$db' + ('?' + p.query if p.query else ''))" "$BENCH_SERVE_PG")
  psql "$BENCH_SERVE_PG" -qc "CREATE DATABASE $db" > /dev/null
  pgserve=()
  trap '[ -n "$server" ] && kill "$server" 2> /dev/null; for p in "${pgserve[@]}"; do kill "$p" 2> /dev/null; done; psql "$BENCH_SERVE_PG" -qc "DROP DATABASE IF EXISTS $db" > /dev/null 2>&1; rm -rf "$work"' EXIT
  "$A" --store "$store" orders import --timezone UTC "$work/orders.csv" > /dev/null
  head -n $((n + 1)) "$work/rows.csv" > "$work/pgrows.csv"
  "$A" --store "$store" batch park "$work/pgrows.csv" --draft-ttl 86400s > /dev/null
  token=$("$A" --store "$store" --output json approvers token demo-user | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
  urls=""
  for i in 1 2; do
    "$A" --store "$store" serve --addr 127.0.0.1:0 > "$work/pg$i.out" 2> "$work/pg$i.log" &
    pgserve+=($!)
    until grep -q '^serving on ' "$work/pg$i.out" 2> /dev/null; do sleep 0.05; done
    u=$(sed -n 's/^serving on //p' "$work/pg$i.out")
    until curl -sf "$u/readyz" > /dev/null; do sleep 0.05; done
    urls="$urls${urls:+,}$u"
  done
  "$work/loadgen" -url "$urls" -token "$token" -clients "$clients" -prefix pg_serve_two "$work/api.txt"
  for p in "${pgserve[@]}"; do kill -TERM "$p"; wait "$p" || true; done
  pgserve=()
fi
