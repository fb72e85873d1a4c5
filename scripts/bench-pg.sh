#!/usr/bin/env bash
# The PostgreSQL benchmark of scripts/bench.sh, also run on its
# own:
#
#   scripts/bench-pg.sh BIN
#
# The server: BENCH_PG, a URL whose user may create databases (a fresh
# database is made for the run and dropped after it); else a throw-away
# cluster made here as .ci/run makes one (initdb and pg_ctl on PATH or in
# /usr/lib/postgresql/*/bin; as root, run as postgres), listening on a
# Unix socket only, with fsync ON (unlike CI's), so the figures include
# the server's durable commits. Without either it prints one line and
# exits 0.
#
# Printed side by side for a data dir (sqlite_) and the server (pg_): the
# median wall ms of show, start and resume --action approve, each a
# process of its own (RUNS runs after 3 warm-up ones), and start+approve
# cycles/s run as processes one after the other (BENCH_PG_CYCLES, default
# 100). Then on the server: a batch of BENCH_PG_ROWS rows (default
# 10,000; target >= 5,000 rows/s) and the decide of their approvals,
# each with its process's CPU per 1,000 rows and, on the throw-away
# cluster, the server's.
set -euo pipefail
shopt -s inherit_errexit  # a failed command in $(…) ends the script too
A=$1
RUNS=${RUNS:-15}
cycles=${BENCH_PG_CYCLES:-100}
rows=${BENCH_PG_ROWS:-10000}
work=$(mktemp -d)
pgdir=""
cleanup() {
  if [ -n "${dropdb_url:-}" ]; then
    "$psql" "$admin_url" -qAtc "DROP DATABASE IF EXISTS $dbname WITH (FORCE)" > /dev/null 2>&1 || true
  fi
  if [ -n "$pgdir" ] && [ -f "$pgdir/data/postmaster.pid" ]; then
    (cd "$pgdir" && as_pguser "$pgbin/pg_ctl" stop -s -w -m fast -D "$pgdir/data") > /dev/null 2>&1 || true
  fi
  [ -n "$pgdir" ] && rm -rf "$pgdir"
  rm -rf "$work"
}
trap cleanup EXIT

# initdb and pg_ctl: on PATH, else Debian's /usr/lib/postgresql/N/bin (newest).
pg_bin() {
  local p d
  if p=$(command -v initdb) && d=$(dirname "$(readlink -f "$p")") && [ -x "$d/pg_ctl" ]; then echo "$d"; return 0; fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return 0; fi
  done
  return 1
}
pguser=$(id -un)
if [ "$(id -u)" = 0 ]; then
  pguser=nobody
  if id postgres > /dev/null 2>&1; then pguser=postgres; fi
fi
as_pguser() { if [ "$(id -u)" = 0 ]; then runuser -u "$pguser" -- "$@"; else "$@"; fi; }

psql=$(command -v psql || true)
if pgbin=$(pg_bin); then psql="$pgbin/psql"; fi
if [ -z "$psql" ]; then
  echo "pg_skipped no psql (install postgresql, or set BENCH_PG)"; exit 0
fi
if [ -n "${BENCH_PG:-}" ]; then
  admin_url=$BENCH_PG
  server="BENCH_PG"
elif [ -n "${pgbin:-}" ]; then
  pgdir=$(mktemp -d /tmp/assistant-bench-pg-XXXXXX)
  chown "$pguser" "$pgdir"
  (cd "$pgdir" && as_pguser "$pgbin/initdb" -D "$pgdir/data" -A trust -U postgres -E UTF8 --locale=C -N > "$pgdir/initdb.log")
  {
    echo "listen_addresses = ''"
    echo "unix_socket_directories = '$pgdir'"
    echo "max_connections = 100"
  } >> "$pgdir/data/postgresql.conf"
  (cd "$pgdir" && as_pguser "$pgbin/pg_ctl" start -s -w -t 60 -D "$pgdir/data" -l "$pgdir/server.log") ||
    { cat "$pgdir/server.log"; exit 1; }
  admin_url="postgres:///postgres?host=$pgdir&user=postgres"
  server="local (fsync on, Unix socket)"
else
  echo "pg_skipped no PostgreSQL server programs (install postgresql, or set BENCH_PG)"; exit 0
fi
dbname="assistant_bench_$$"
"$psql" "$admin_url" -qAtc "CREATE DATABASE $dbname TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'" > /dev/null
dropdb_url=1
url=$(python3 - "$admin_url" "$dbname" <<'PY'
import sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
# By hand: urlunsplit drops the // of an empty host (a Unix socket's URL).
print(f"{u.scheme}://{u.netloc}/{sys.argv[2]}" + (f"?{u.query}" if u.query else ""))
PY
)
echo "pg_server $server $("$psql" "$url" -qAtc 'SHOW server_version') fsync=$("$psql" "$url" -qAtc 'SHOW fsync')"

# med NAME CMD...: the median wall ms of CMD ({} replaced by the run
# number), RUNS runs after 3 warm-up ones, each a process of its own.
med() {
  python3 - "$RUNS" "$@" <<'PY'
import statistics, subprocess, sys, time
runs, name, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
def once(i):
    args = [a.replace("{}", str(i)) for a in cmd]
    t = time.perf_counter()
    p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit(f"{name}: {' '.join(args)} exited {p.returncode}: {p.stderr.decode(errors='replace')}")
    return (time.perf_counter() - t) * 1000
for i in range(3):
    once(runs + i)  # warm-up on its own tasks (orders P{runs}…)
print(f"{statistics.median(once(i) for i in range(runs)):.2f}")
PY
}

# cycles_per_s FLAGS...: start+approve pairs, one process each, one after
# the other, on tasks c0… of orders C0…
cycles_per_s() {
  local i start end
  start=$(date +%s.%N)
  for i in $(seq 0 $((cycles - 1))); do
    "$A" "$@" start "c$i" "C$i" --reason bench > /dev/null
    "$A" "$@" resume "c$i" --action approve > /dev/null
  done
  end=$(date +%s.%N)
  python3 -c "print(f'{$cycles/($end-$start):.1f}')"
}

python3 -c "
import datetime
d = (datetime.date.today() - datetime.timedelta(days=2)).isoformat()
print('order_id,user,item,delivered_at,final_sale')
for i in range(1101): print(f'P{i},demo-user,Bench item {i},{d},false')
for i in range($cycles): print(f'C{i},demo-user,Cycle item {i},{d},false')" > "$work/orders.csv"
for store in sqlite pg; do
  if [ "$store" = sqlite ]; then flags=(--data "$work/data"); else flags=(--store "$url"); fi
  "$A" "${flags[@]}" orders import --timezone UTC "$work/orders.csv" > /dev/null
  "$A" "${flags[@]}" start shown P1100 --reason bench > /dev/null
  echo "${store}_show_ms $(med show "$A" "${flags[@]}" show shown) ms"
  echo "${store}_start_ms $(med start "$A" "${flags[@]}" start t{} P{} --reason bench) ms"
  echo "${store}_resume_approve_ms $(med resume "$A" "${flags[@]}" resume t{} --action approve) ms"
  echo "${store}_cli_cycles_per_s $(cycles_per_s "${flags[@]}") cycles/s"
done
# show on the server beside show on a data dir, in pairs that alternate
# which runs first: the median of the per-pair ratios.
python3 - "$RUNS" "$A" "$work/data" "$url" <<'PY'
import statistics, subprocess, sys, time
runs, a, data, url = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
def once(flags):
    t = time.perf_counter()
    subprocess.run([a, *flags, "show", "shown"], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t
pairs = []
for i in range(runs + 3):
    order = [["--store", url], ["--data", data]]
    if i % 2:
        order.reverse()
    t = {tuple(f): once(f) for f in order}
    if i >= 3:
        pairs.append(t[("--store", url)] / t[("--data", data)])
print(f"pg_show_over_sqlite_show {statistics.median(pairs):.2f} x_data_dir")
PY

# A batch of $rows rows on the server, each row an order of its own parked
# at approval, then the decide of their approvals.
python3 -c "
import datetime
d = (datetime.date.today() - datetime.timedelta(days=2)).isoformat()
print('order_id,user,item,delivered_at,final_sale')
for i in range($rows): print(f'Q{i},demo-user,Bench item {i},{d},false')" > "$work/rows-orders.csv"
python3 -c "
print('task,order,reason')
for i in range($rows): print(f'b{i},Q{i},reason {i}')" > "$work/rows.csv"
python3 -c "
print('task,action')
for i in range($rows): print(f'b{i},approve')" > "$work/decide.csv"
"$A" --store "$url" orders import --timezone UTC "$work/rows-orders.csv" > /dev/null
# server_ticks: the CPU clock ticks of the throw-away cluster's postmaster
# and its reaped children (backends, WAL writer, autovacuum), 0 without
# one (BENCH_PG). A second after the last command, for its backends to
# exit.
server_ticks() {
  if [ -z "$pgdir" ]; then echo 0; return; fi
  sleep 1
  awk '{print $14+$15+$16+$17}' "/proc/$(head -1 "$pgdir/data/postmaster.pid")/stat"
}
# rate NAME UNIT N CMD...: N over CMD's wall seconds, then CMD's CPU
# (user+sys) per 1,000 of N, and the server's when it is the throw-away
# cluster.
rate() {
  local name=$1 unit=$2 n=$3 s0 s1 out; shift 3
  s0=$(server_ticks)
  out=$(python3 - "$n" "$@" <<'PY'
import resource, subprocess, sys, time
n, cmd = int(sys.argv[1]), sys.argv[2:]
t = time.perf_counter()
subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{n/wall:.0f} {(ru.ru_utime+ru.ru_stime)*1000/n*1000:.0f}")
PY
)
  s1=$(server_ticks)
  echo "pg_${name}_per_s ${out% *} $unit/s"
  echo "pg_${name}_client_cpu_ms_per_1000 ${out#* } ms"
  if [ -n "$pgdir" ]; then
    echo "pg_${name}_server_cpu_ms_per_1000 $(python3 -c "print(f'{($s1-$s0)*1000/$(getconf CLK_TCK)/$n*1000:.0f}')") ms"
  fi
}
rate batch_rows rows "$rows" "$A" --store "$url" batch bench "$work/rows.csv"
rate decide decisions "$rows" "$A" --store "$url" decide "$work/decide.csv"
# The batch's floor on the server (set-based writes of exactly a parked
# row's rows, two chunks in flight) is not a program of this repository.
echo "pg_batch_floor_skipped no floor program here (docs/performance.md gives the figures it measured)"
