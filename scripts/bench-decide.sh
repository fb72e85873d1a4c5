#!/usr/bin/env bash
# The decide benchmark of scripts/bench.sh (target: decide >= 5,000
# decisions/s), also run on its own:
#
#   scripts/bench-decide.sh BIN [BASE]
#
# Each run imports N orders (BENCH_DECIDE_ROWS, default 10,000) into a
# fresh data dir, runs a batch of N rows (each row an order of its own,
# parked at approval), then `list --status waiting --output csv | sed
# 's/,,/,approve,/'` into a file and `decide` of the N approvals in the
# same data dir, so that batch rows/s and decisions/s come from the same
# run. Three runs (BENCH_DECIDE_RUNS); with BASE, a binary built from an
# older commit, each run runs BASE and BIN in turn on the same files
# (alternating which goes first), and both are printed, BASE's lines
# prefixed base_: only figures of one run compare, the machine being
# shared. Printed per binary: the median rows/s and decisions/s (wall),
# the CPU (user+sys) per 1,000 rows and per 1,000 decisions and their
# ratio (which vary less with the machine's load than wall time), the
# largest peak RSS of each command, and the load average at the end.
set -euo pipefail
bin=$1 base=${2:-}
n=${BENCH_DECIDE_ROWS:-10000}
runs=${BENCH_DECIDE_RUNS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -c "
import datetime
d = (datetime.date.today() - datetime.timedelta(days=2)).isoformat()
print('order_id,user,item,delivered_at,final_sale')
for i in range($n): print(f'Q{i},demo-user,Bench item {i},{d},false')" > "$work/orders.csv"
python3 -c "
print('task,order,reason')
for i in range($n): print(f'b{i},Q{i},reason {i}')" > "$work/rows.csv"

# once BIN LABEL: one run of BIN; appends "rows_per_s decisions_per_s
# batch_cpu_ms decide_cpu_ms batch_kib decide_kib" to $work/LABEL.
once() {
  local A=$1 label=$2 dir="$work/data"
  rm -rf "$dir"
  "$A" --data "$dir" orders import --timezone UTC "$work/orders.csv" > /dev/null
  local start end bu bs bk du ds dk rate drate
  start=$(date +%s.%N)
  /usr/bin/time -f "%U %S %M" -o "$work/batch.time" "$A" --data "$dir" batch b "$work/rows.csv" > /dev/null
  end=$(date +%s.%N)
  rate=$(python3 -c "print(f'{$n/($end-$start):.0f}')")
  read -r bu bs bk < <(tail -1 "$work/batch.time")
  "$A" --data "$dir" list --status waiting --output csv | sed 's/,,/,approve,/' > "$work/decide.csv"
  [ "$(wc -l < "$work/decide.csv")" = $((n + 1)) ] || { echo "decide: $(wc -l < "$work/decide.csv") lines, want $((n + 1))" >&2; exit 1; }
  start=$(date +%s.%N)
  /usr/bin/time -f "%U %S %M" -o "$work/decide.time" "$A" --data "$dir" decide "$work/decide.csv" > "$work/decide.json"
  end=$(date +%s.%N)
  python3 -c "
import json, sys
c = json.load(open('$work/decide.json'))['batch']['counts']
if c != {'submitted': $n}: sys.exit(f'decide: counts {c}, want $n submitted')"
  drate=$(python3 -c "print(f'{$n/($end-$start):.0f}')")
  read -r du ds dk < <(tail -1 "$work/decide.time")
  echo "$rate $drate $(python3 -c "print(f'{($bu+$bs)*1e6/$n:.0f} {($du+$ds)*1e6/$n:.0f}')") $bk $dk" >> "$work/$label"
}

for i in $(seq 1 "$runs"); do
  if [ -z "$base" ]; then
    once "$bin" new
  elif [ $((i % 2)) = 1 ]; then
    once "$base" base; once "$bin" new
  else
    once "$bin" new; once "$base" base
  fi
done

# report LABEL PREFIX: the medians of LABEL's runs.
report() {
  python3 - "$work/$1" "$2" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
p = sys.argv[2]
col = lambda i: [r[i] for r in rows]
med = lambda i: statistics.median(col(i))
print(f"{p}batch_rows_per_s {med(0):.0f} rows/s ({min(col(0)):.0f}-{max(col(0)):.0f})")
print(f"{p}decide_per_s {med(1):.0f} decisions/s ({min(col(1)):.0f}-{max(col(1)):.0f})")
print(f"{p}batch_cpu_ms_per_1000 {med(2):.0f} ms")
print(f"{p}decide_cpu_ms_per_1000 {med(3):.0f} ms")
r = [x[3] / x[2] for x in rows]
print(f"{p}decide_over_batch_cpu {statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})")
print(f"{p}batch_rss {max(col(4))/1024:.1f} MiB")
print(f"{p}decide_rss {max(col(5))/1024:.1f} MiB")
PY
}
[ -n "$base" ] && report base base_
report new ""
echo "load_average $(cut -d' ' -f1-3 /proc/loadavg)"
