#!/usr/bin/env bash
# The inbox benchmark of scripts/bench.sh (targets: the first page of an
# inbox with 10,000 waiting tasks served in <= 50 ms and <= 100 KB), also
# run on its own:
#
#   scripts/bench-inbox.sh BIN
#
# Imports N orders (BENCH_INBOX_TASKS, default 10,000) into a fresh data
# dir and parks a task at approval on each with one batch (one row per
# order), makes an access token, starts `serve` on a free port, signs in
# on POST /login, then GETs /inbox (the first page, filter waiting) and
# the page after it with curl, RUNS times each after 3 warm-up requests.
# Prints the median and the largest time to the last byte (curl's
# time_total, on loopback), the page's size in bytes and rows, and the
# server's peak RSS. Fails when a page does not list the 50 rows it
# should.
set -euo pipefail
bin=$1
n=${BENCH_INBOX_TASKS:-10000}
runs=${RUNS:-15}
work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2> /dev/null || true; wait "$pid" 2> /dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
python3 -c "
import datetime
d = (datetime.date.today() - datetime.timedelta(days=2)).isoformat()
print('order_id,user,item,delivered_at,final_sale')
for i in range($n): print(f'I{i},demo-user,运动鞋 42码 item {i},{d},false')" > "$work/orders.csv"
python3 -c "
print('task,order,reason')
for i in range($n): print(f'in{i},I{i},尺码偏小 size too small {i}')" > "$work/rows.csv"
data="$work/data"
"$bin" --data "$data" orders import --timezone UTC "$work/orders.csv" > /dev/null
start=$(date +%s.%N)
"$bin" --data "$data" batch in "$work/rows.csv" > /dev/null
end=$(date +%s.%N)
echo "inbox_setup_batch_s $(python3 -c "print(f'{$end-$start:.1f}')") s_for_$n"
token=$("$bin" --data "$data" approvers token demo-user | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
"$bin" --data "$data" serve --addr 127.0.0.1:0 > "$work/serve.out" 2> "$work/serve.log" &
pid=$!
for _ in $(seq 1 100); do
  url=$(sed -n 's/^serving on //p' "$work/serve.out")
  [ -n "$url" ] && curl -sf "$url/readyz" > /dev/null 2>&1 && break
  sleep 0.2
done
curl -sf "$url/readyz" > /dev/null || { echo "inbox: the server did not get ready: $(tail -3 "$work/serve.log")" >&2; exit 1; }
curl -sf -o /dev/null -c "$work/cookies" --data-urlencode "token=$token" "$url/login"
# page NAME PATH: times GET PATH RUNS times; prints the figures and leaves
# the page in $work/NAME.html.
page() {
  local name=$1 path=$2 i
  for i in 1 2 3; do curl -sf -o /dev/null -b "$work/cookies" "$url$path"; done
  : > "$work/$name.times"
  for i in $(seq 1 "$runs"); do
    curl -sf -o "$work/$name.html" -b "$work/cookies" -w '%{time_total} %{size_download}\n' "$url$path" >> "$work/$name.times"
  done
  python3 - "$name" "$work/$name.times" "$work/$name.html" <<'PY'
import re, statistics, sys
name, times, html = sys.argv[1], sys.argv[2], open(sys.argv[3], encoding="utf-8").read()
runs = [l.split() for l in open(times) if l.strip()]
ms = [float(t) * 1000 for t, _ in runs]
rows = len(re.findall(r'<td data-label="Task">', html))
if rows != 50:
    sys.exit(f"{name}: the page lists {rows} rows, want 50")
print(f"{name}_ms {statistics.median(ms):.1f} ms")
print(f"{name}_max_ms {max(ms):.1f} ms")
print(f"{name}_bytes {int(runs[-1][1])} bytes")
print(f"{name}_rows {rows} rows")
PY
}
page inbox_first_page "/inbox"
next=$(python3 -c "
import html, re, sys
m = re.search(r'<a href=\"([^\"]+)\" rel=\"next\">', open('$work/inbox_first_page.html', encoding='utf-8').read())
print(html.unescape(m.group(1)) if m else '')")
[ -n "$next" ] || { echo "inbox: the first page has no next page" >&2; exit 1; }
page inbox_second_page "$next"
echo "inbox_serve_rss $(awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$pid/status") MiB"
