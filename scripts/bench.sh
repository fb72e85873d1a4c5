#!/usr/bin/env bash
# Benchmarks of assistant. Prints `name value unit` lines: each figure of
# docs/performance.md's table as the ratio it names, measured in this run
# beside its floor or peer, and the figures behind it.
#
# Whole commands run in pairs with the floor program (scripts/floor: a Go
# binary that opens one SQLite file with our driver and pragmas and commits
# one row durably) or with the Eino peer's same command, alternating which
# goes first, so that the machine's drift falls on both; a ratio is the
# median of the per-pair ratios. In-process cycles alternate with the Eino
# peer's bench-loop. Compare ratios, not milliseconds, across machines.
#
#   scripts/bench.sh                # everything (the 100,000-task show takes minutes)
#   BENCH_QUICK=1 scripts/bench.sh  # the ratios of the table only, fewer runs: under 3 minutes on a quiet machine
#   BENCH_SKIP_100K=1 scripts/bench.sh
#   BENCH_PG=postgres://USER@HOST/postgres BENCH_PG_ONLY=1 scripts/bench.sh
#   PEERS_DIR=DIR scripts/bench.sh  # the peers (default ../shared/peers beside the repository)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
quick=${BENCH_QUICK:-}
RUNS=${RUNS:-$([ -n "$quick" ] && echo 7 || echo 15)}
# start+approve cycles a round in one process, and rounds (each ours, the
# Eino peer's and the floor's, alternating).
CYCLES=${CYCLES:-$([ -n "$quick" ] && echo 200 || echo 600)}
ROUNDS=${ROUNDS:-$([ -n "$quick" ] && echo 1 || echo 3)}
peers=${PEERS_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/shared/peers}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
# Everything printed is kept too, for the table at the end (summary).
exec > >(tee "$work/out.txt")
# summary: the figures of docs/performance.md's table, each as the ratio
# it names, beside its target, as comment lines.
summary() {
  sleep 0.5  # for tee to write what came before
  python3 - "$work/out.txt" <<'PY'
import sys
got = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 2 and not line.startswith("#"):
        got[f[0]] = f[1]
rows = [
    ("fsyncs of a resume --action approve process", "resume_approve_fsyncs", "floor " + got.get("floor_fsyncs", "-")),
    ("package init, bytes (assistant's own)", "init_bytes", "ours " + got.get("init_ours_bytes", "-")),
    ("show x the floor command", "show_ratio", "<= 1.3"),
    ("start x the floor command", "start_ratio", "<= 2.0"),
    ("resume --action approve x the floor command", "resume_approve_ratio", "<= 2.0"),
    ("show / the Eino peer's show", "show_over_eino", "<= 0.6"),
    ("cycles in one process / the Eino peer's bench-loop", "cycles_over_eino", ">= 1.2"),
    ("commits per start+approve cycle (6 durable)", "commits_per_cycle", "<= 10"),
    ("decide in process / BenchmarkDecideFloor", "decide_over_floor", ">= 0.6"),
    ("batch rows/s on PostgreSQL", "pg_batch_rows_per_s", ">= 4,000"),
    ("decide on PostgreSQL, decisions/s", "pg_decide_per_s", ">= 1,500"),
    ("decide on PostgreSQL, server CPU ms per 1,000", "pg_decide_server_cpu_ms_per_1000", "<= 500"),
    ("show on PostgreSQL / show on a data dir", "pg_show_over_sqlite_show", "<= 2"),
    ("decisions/s, 64 API clients (group commit)", "serve_decisions_per_s", ">= 2,000"),
    ("p99 ms of an API decision, 64 clients", "serve_p99_ms", "<= 100"),
    ("API decisions/s / 64 resume processes'", "serve_over_resume_64", ">= 20"),
    ("API decisions/s / decide's", "serve_over_decide", "-"),
    ("decisions/s, two servers on PostgreSQL, 64 API clients", "pg_serve_two_decisions_per_s", ">= 1,500"),
    ("p99 ms of an API decision, two servers on PostgreSQL", "pg_serve_two_p99_ms", "-"),
    ("fsyncs of a start process (the floor's)", "start_fsyncs", "floor " + got.get("floor_fsyncs", "-")),
    ("inbox's first page of 10,000 waiting tasks, ms", "inbox_first_page_ms", "<= 50"),
    ("inbox's first page of 10,000 waiting tasks, bytes", "inbox_first_page_bytes", "<= 100,000"),
]
print("# figure | this run | target")
print("# load average at the start (1/5/15 min) | " + got.get("load_average_start", "-") + " | -")
for name, key, target in rows:
    print(f"# {name} | {got.get(key, 'not measured')} | {target}")
PY
}
# Both built as README.md builds assistant: static, without cgo.
CGO_ENABLED=0 go build -o "$work/assistant" .
CGO_ENABLED=0 go build -o "$work/floor" ./scripts/floor
A="$work/assistant"
echo "load_average_start $(cut -d' ' -f1-3 /proc/loadavg | tr ' ' '/') (1/5/15 min)"
# What every command pays at package init (GODEBUG=inittrace=1 of
# --version): all packages, and assistant's own.
GODEBUG=inittrace=1 "$A" --version 2>&1 >/dev/null | awk '/^init /{b+=$8; a+=$10; if ($2 ~ /^assistant/) {ob+=$8; oa+=$10}}
  END {printf "init_bytes %d bytes\ninit_allocs %d allocs\ninit_ours_bytes %d bytes\ninit_ours_allocs %d allocs\n", b, a, ob, oa}'
# The Eino peer (built into the temporary directory, never into its own
# folder), when its folder is there.
eino=""
if [ -d "$peers/eino" ]; then
  if (cd "$peers/eino" && go build -o "$work/einopeer" .) 2> "$work/eino.build"; then
    eino="$work/einopeer"
  else
    echo "eino_skipped the peer did not build: $(tail -1 "$work/eino.build")"
  fi
else
  echo "eino_skipped no peer at $peers/eino (set PEERS_DIR)"
fi

# timed NAME CMD...: runs CMD (with {} replaced by the run number) 3 times to
# warm up, then RUNS times, each run paired with a run of the floor program
# (FLOOR, when set): the floor first in even pairs, CMD first in odd ones, so
# that neither always runs on a cache the other warmed, and the machine's
# drift falls on both alike. Each process is timed from fork to exit as a
# whole-process timer (hyperfine) times it, with nothing in between (its
# peak RSS comes from wait4, not from a /usr/bin/time wrapper, whose own
# start-up would add the same milliseconds to both and pull every ratio
# towards 1). Prints the median wall ms of CMD, its peak RSS MiB, the median
# ms of the floor runs paired with it and the median of the per-pair ratios
# CMD/floor (both 0 without FLOOR).
timed() {
  local name=$1; shift
  python3 - "$name" "$RUNS" "${FLOOR:-}" "$@" <<'PY'
import os, statistics, subprocess, sys, tempfile, time
name, runs, floor, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
def once(args):
    with tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        ms = (time.perf_counter() - t) * 1000
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            sys.exit(f"{name}: {' '.join(args)} exited {p.returncode}: {err.read().decode(errors='replace')}")
    return ms, ru.ru_maxrss / 1024
def pair(i):
    args = [a.replace("{}", str(i)) for a in cmd]
    if not floor:
        return (*once(args), 0.0)
    if i % 2 == 0:
        f = once(floor)[0]
        ms, rss = once(args)
    else:
        ms, rss = once(args)
        f = once(floor)[0]
    return ms, rss, f
for i in range(3):
    pair(1000 + i)
res = [pair(i) for i in range(runs)]
ratio = statistics.median(r[0] / r[2] for r in res) if floor else 0.0
print(f"{statistics.median(r[0] for r in res):.2f} {max(r[1] for r in res):.1f} {statistics.median(r[2] for r in res):.2f} {ratio:.2f}")
PY
}

# ratios NAME MS FLOOR_MS PAIRED: prints NAME_ratio, the median of the
# per-pair ratios (the figure quoted), and NAME_ratio_of_medians, the median
# ms over the median floor ms, when the two differ (by 0.01 or more): a gap
# says the machine drifted during the runs, and neither figure is firm.
ratios() {
  echo "$1_ratio $4 x_floor"
  python3 -c "
r = $2 / $3
if abs(r - $4) >= 0.01: print(f'$1_ratio_of_medians {r:.2f} x_floor')"
}

read floor_ms floor_rss _ _ < <(timed floor "$work/floor" "$work/floordir")
echo "floor_ms $floor_ms ms"
# From here on every command run is paired with a floor run, and each
# command's ratio is to the floor runs paired with it.
FLOOR="$work/floor $work/floordir"

# Orders of their own for every start/approve, so no run meets an open application.
data="$work/data"
{
  echo "order_id,user,item,delivered_at,final_sale"
  for i in $(seq 0 1100); do echo "P$i,demo-user,Bench item $i,$(date -u -d '2 days ago' +%F),false"; done
} > "$work/orders.csv"
"$A" --data "$data" orders import --timezone UTC "$work/orders.csv" > /dev/null
"$A" --data "$data" start shown P1100 --reason bench > /dev/null

read ms rss fl r < <(timed show "$A" --data "$data" show shown)
echo "show_ms $ms ms"; ratios show "$ms" "$fl" "$r"; echo "show_rss $rss MiB"
# show beside the Eino peer's show of a task parked at the same question:
# the peer's runs take the floor's place in the pairs.
if [ -n "$eino" ]; then
  "$eino" --data "$work/einodata" start shown A3003 --reason bench > /dev/null
  read ms _ fl r < <(FLOOR="$eino --data $work/einodata show shown" timed show_eino "$A" --data "$data" show shown)
  echo "eino_show_ms $fl ms"
  echo "show_over_eino $r x_eino"
fi
read ms rss fl r < <(timed start "$A" --data "$data" start t{} P{} --reason bench)
echo "start_ms $ms ms"; ratios start "$ms" "$fl" "$r"; echo "start_rss $rss MiB"
read ms rss fl r < <(timed resume "$A" --data "$data" resume t{} --action approve)
echo "resume_approve_ms $ms ms"; ratios resume_approve "$ms" "$fl" "$r"; echo "resume_approve_rss $rss MiB"

# The same commands with both stores on PostgreSQL, side by side with a
# data dir, and a batch and decide on the server: BENCH_PG, a
# server URL whose user may create databases, or a throw-away local
# cluster; skipped with one line when there is neither. BENCH_PG_ONLY=1
# stops after it. See scripts/bench-pg.sh.
if [ -n "$quick" ]; then
  BENCH_PG_ROWS=${BENCH_PG_ROWS:-2000} BENCH_PG_CYCLES=${BENCH_PG_CYCLES:-10} scripts/bench-pg.sh "$A"
else
  scripts/bench-pg.sh "$A"
fi
[ -n "${BENCH_PG_ONLY:-}" ] && exit 0
echo "langgraphjs_skipped its npm ci needs the network and a native build of better-sqlite3 here; $peers/langgraphjs/bench.sh measures it on its own"

# In one process: start+approve cycles (BenchmarkStartApprove, CYCLES a
# round), beside the Eino peer's bench-loop of as many cycles on a fresh
# data dir and the cycle's floor (BenchmarkCycleFloor: the six durable
# commits a cycle must make and nothing else, the most cycles/s any build
# of this design could reach here), the three alternating for ROUNDS
# rounds; the medians and their ratios are printed, with the commits per
# cycle beside the six durable ones. Then decide beside its floor
# (BenchmarkDecideFloor: the least SQL a decision must write, on a parked
# batch's own files), twice each, alternating (docs/performance.md
# "Floors").
go test -c -o "$work/returns.test" ./flow/returns/
bench() { (cd flow/returns && "$work/returns.test" -test.run '^$' -test.bench "$1" -test.benchtime "$2"); }
: > "$work/bench.txt"; : > "$work/eino.txt"
for round in $(seq 1 "$ROUNDS"); do
  bench 'BenchmarkStartApprove$' "${CYCLES}x" >> "$work/bench.txt"
  if [ -n "$eino" ]; then
    rm -rf "$work/einoloop"
    "$eino" --data "$work/einoloop" bench-loop --n "$CYCLES" >> "$work/eino.txt"
  fi
  bench 'BenchmarkCycleFloor$' "${CYCLES}x" >> "$work/bench.txt"
done
for round in 1 2; do
  bench 'BenchmarkDecide$' "$([ -n "$quick" ] && echo 1000 || echo 5000)x" >> "$work/bench.txt"
  bench 'BenchmarkDecideFloor$' "$([ -n "$quick" ] && echo 1000 || echo 5000)x" >> "$work/bench.txt"
done
python3 - "$work/bench.txt" "$work/eino.txt" <<'PY'
import json, statistics, sys
found = {}
for line in open(sys.argv[1]):
    f = line.split()
    if not f or not f[0].startswith("Benchmark"):
        continue
    name = f[0].split("-")[0]
    found.setdefault(name, []).append({f[i+1]: float(f[i]) for i in range(2, len(f)-1, 2)})
def med(name, key):
    if name not in found:
        sys.exit(f"{name}: no result in {sys.argv[1]}")
    return statistics.median(v[key] for v in found[name])
cycles, floor = 1e9 / med("BenchmarkStartApprove", "ns/op"), 1e9 / med("BenchmarkCycleFloor", "ns/op")
print("cycles_per_s %.0f cycles/s" % cycles)
print("cycle_floor_per_s %.0f cycles/s" % floor)
print("cycles_over_floor %.2f x_floor" % (cycles / floor))
peer = [json.loads(l)["tasks_per_second"] for l in open(sys.argv[2]) if l.strip()]
if peer:
    print("eino_cycles_per_s %.0f cycles/s" % statistics.median(peer))
    print("cycles_over_eino %.2f x_eino" % (cycles / statistics.median(peer)))
vals = found["BenchmarkStartApprove"][0]
for k, name in (("commits/task", "commits_per_cycle"), ("fsyncs/task", "durable_commits_per_cycle"), ("ckpt_bytes/task", "checkpoint_bytes_per_task"), ("ckpt_rows/task", "checkpoint_rows_per_task")):
    if k in vals:
        print("%s %.1f %s" % (name, vals[k], k.split("/")[0]))
# The floor of commits: the six durable ones a cycle must make.
print("commits_over_durable_floor %.2f x_6" % (vals["commits/task"] / 6))
decide, dfloor = med("BenchmarkDecide", "decisions/s"), med("BenchmarkDecideFloor", "decisions/s")
print("decide_in_process_per_s %.0f decisions/s" % decide)
print("decide_floor_per_s %.0f decisions/s" % dfloor)
print("decide_over_floor %.2f x_floor" % (decide / dfloor))
PY

# fsync system calls, counted by strace (when installed): of a whole
# start process beside the floor program's, and per start+approve cycle
# in one process (they include SQLite's own WAL checkpoints, which the
# benchmark's durable commits do not count; two runs of different length,
# so set-up costs cancel out).
if command -v strace > /dev/null; then
  count_fsyncs() {
    strace -f -qq -c -e trace=fsync,fdatasync -o "$work/strace.out" "$@" > /dev/null
    awk '$NF == "fsync" || $NF == "fdatasync" {n += $4} END {print n + 0}' "$work/strace.out"
  }
  echo "start_fsyncs $(count_fsyncs "$A" --data "$data" start fs1 P1099 --reason bench) fsyncs"
  echo "resume_approve_fsyncs $(count_fsyncs "$A" --data "$data" resume fs1 --action approve) fsyncs"
  echo "show_fsyncs $(count_fsyncs "$A" --data "$data" show fs1) fsyncs"
  echo "floor_fsyncs $(count_fsyncs "$work/floor" "$work/floordir") fsyncs"
  a=$(cd flow/returns && count_fsyncs "$work/returns.test" -test.run '^$' -test.bench 'BenchmarkStartApprove$' -test.benchtime 50x)
  b=$(cd flow/returns && count_fsyncs "$work/returns.test" -test.run '^$' -test.bench 'BenchmarkStartApprove$' -test.benchtime 200x)
  echo "fsync_syscalls_per_cycle $(python3 -c "print(f'{($b-$a)/150:.1f}')") fsyncs"
fi
# The inbox of `serve` with 10,000 tasks waiting at approval: its first
# page and the next, timed with curl (scripts/bench-inbox.sh).
RUNS=$RUNS scripts/bench-inbox.sh "$A"
# The server: decisions/s and p50/p99 of 64 concurrent API clients
# (group commit), beside 64 concurrent resume processes and decide, in one
# data dir (scripts/bench-serve.sh); with BENCH_PG, the API clients
# again on two servers over one PostgreSQL database.
BENCH_SERVE_PG=${BENCH_PG:-} scripts/bench-serve.sh "$A"
if [ -n "$quick" ]; then
  echo "binary_size $(python3 -c "import os; print(f'{os.path.getsize(\"$A\")/1048576:.1f}')") MiB"
  summary
  exit 0
fi

# One superstep of the engine in one process (flow's BenchmarkSuperstep:
# node run, state encode, reducer, checkpoint Put) with each store.
go test -run '^$' -bench 'BenchmarkSuperstep' -benchmem ./flow/ > "$work/superstep.txt"
python3 - "$work/superstep.txt" <<'PY'
import re, sys
found = {}
for line in open(sys.argv[1]):
    f = line.split()
    # BenchmarkSuperstep/NAME-GOMAXPROCS (no suffix when GOMAXPROCS is 1).
    m = re.fullmatch(r"BenchmarkSuperstep/(memory|sqlite|parallel-3)(-\d+)?", f[0]) if f else None
    if m:
        found[m.group(1)] = {f[i+1]: float(f[i]) for i in range(2, len(f)-1, 2)}
for name in ("memory", "sqlite", "parallel-3"):
    if name not in found:
        sys.exit(f"BenchmarkSuperstep/{name}: no result in {sys.argv[1]}")
    vals, key = found[name], name.replace("-", "")
    print("superstep_%s_ns %.0f ns/op" % (key, vals["ns/op"]))
    print("superstep_%s_allocs %.0f allocs/op" % (key, vals["allocs/op"]))
    print("superstep_%s_bytes %.0f B/op" % (key, vals["B/op"]))
PY

# A 10,000-row batch, each row parked at approval, then decide of the
# 10,000 approvals (target: decide >= 5,000 decisions/s), from the same
# data dir of the same run, so the two rates stand side by side, with the
# CPU per 1,000 rows and decisions and the peak RSS of each: see
# scripts/bench-decide.sh, which also runs on its own. With
# BENCH_DECIDE_BASE=PATH (a binary built from an older commit) each run
# runs that binary and this one in turn, and both are printed.
scripts/bench-decide.sh "$A" "${BENCH_DECIDE_BASE:-}"

# orders import of 1,000,000 rows (targets >= 200,000 rows/s and
# <= 32 MiB peak RSS whatever the file's size), into a fresh data dir: the
# process, both passes over the file and the one transaction included; then
# the same file again (every order unchanged: the daily re-import). With
# BENCH_IMPORT_BASE=PATH (a binary built from an older commit) each run of
# the binary alternates with one of PATH on the same file, 3 pairs, and the
# medians and their ratio are printed (without it, 3 runs of this binary
# and their medians: the machine's speed moves by a third within minutes,
# and one run says little): the machine is shared and its load
# drifts, so before and after are only compared within one run. Beside the
# wall-time rates it prints the CPU (user + sys) seconds per 1,000,000 rows,
# less noisy on a shared machine, and the load average before and after. The
# file is made here, never kept.
python3 -c "
import datetime
d = (datetime.date.today() - datetime.timedelta(days=3)).isoformat()
print('order_id,user,item,delivered_at,final_sale')
for i in range(1000000): print(f'M{i:07d},demo-user,Bench item {i},{d},false')" > "$work/orders1m.csv"
# import_once BIN DIR: prints the wall seconds, peak RSS KiB and CPU
# seconds (user + sys) of one import.
import_once() {
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -f "%M %U %S" -o "$work/import.rss" "$1" --data "$2" orders import --timezone UTC "$work/orders1m.csv" > /dev/null
  end=$(date +%s.%N)
  echo "$(python3 -c "print($end-$start)") $(tail -1 "$work/import.rss" | awk '{print $1, $2 + $3}')"
}
import_pairs() {
  local bins=("$A") i b
  [ -n "${BENCH_IMPORT_BASE:-}" ] && bins+=("$BENCH_IMPORT_BASE")
  for i in 1 2 3; do
    for b in "${bins[@]}"; do
      rm -rf "$work/import"
      echo "$b fresh $(import_once "$b" "$work/import")"
      echo "$b again $(import_once "$b" "$work/import")"
    done
  done
}
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
import_pairs > "$work/import.runs"
echo "import_load_average $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after (1, 5, 15 min)"
python3 - "$A" "${BENCH_IMPORT_BASE:-}" "$work/import.runs" <<'PY'
import statistics, sys
new, base, path = sys.argv[1], sys.argv[2], sys.argv[3]
runs = {}
for line in open(path):
    b, kind, secs, rss, cpu = line.split()
    runs.setdefault((b, kind), []).append((float(secs), int(rss), float(cpu)))
for kind, name in (("fresh", "import"), ("again", "reimport")):
    rate = lambda b: statistics.median(1_000_000 / s for s, _, _ in runs[(b, kind)])
    rss = lambda b: max(r for _, r, _ in runs[(b, kind)]) / 1024
    cpu = lambda b: statistics.median(c for _, _, c in runs[(b, kind)])
    print(f"{name}_rows_per_s {rate(new):.0f} rows/s")
    print(f"{name}_cpu_s_per_1m {cpu(new):.2f} s")
    print(f"{name}_rss {rss(new):.1f} MiB")
    if base:
        print(f"{name}_rows_per_s_base {rate(base):.0f} rows/s")
        print(f"{name}_cpu_s_per_1m_base {cpu(base):.2f} s")
        print(f"{name}_rss_base {rss(base):.1f} MiB")
        print(f"{name}_speedup {rate(new) / rate(base):.2f} x_base")
        print(f"{name}_cpu_cut {cpu(base) / cpu(new):.2f} x_base")
PY
rm -rf "$work/import" "$work/orders1m.csv"

# show with 10 tasks vs with 100,000 tasks in the data dir.
small="$work/small"
# One order per row (a batch runs one row per order), imported first.
python3 -c "
import datetime
d = (datetime.date.today() - datetime.timedelta(days=2)).isoformat()
print('order_id,user,item,delivered_at,final_sale')
for i in range(100000): print(f'S{i},demo-user,Show item {i},{d},false')" > "$work/orders100k.csv"
head -11 "$work/orders100k.csv" > "$work/orders10.csv"
python3 -c "
print('task,order,reason')
for i in range(10): print(f's{i},S{i},r')" > "$work/rows10.csv"
"$A" --data "$small" orders import --timezone UTC "$work/orders10.csv" > /dev/null
"$A" --data "$small" batch s10 "$work/rows10.csv" > /dev/null
read ms10 rss fl10 r10 < <(timed show10 "$A" --data "$small" show s5)
echo "show_ms_at_10 $ms10 ms"
if [ -z "${BENCH_SKIP_100K:-}" ]; then
  python3 -c "
print('task,order,reason')
for i in range(100000): print(f's{i},S{i},r')" > "$work/rows100k.csv"
  "$A" --data "$work/big" orders import --timezone UTC "$work/orders100k.csv" > /dev/null
  "$A" --data "$work/big" batch s100k "$work/rows100k.csv" > /dev/null
  read ms100k rss fl100k r100k < <(timed show100k "$A" --data "$work/big" show s5)
  # Each show as a ratio to the floor runs paired with it, so that the
  # machine's drift between the two measurements cancels out.
  echo "show_ms_at_100k $ms100k ms"
  echo "show_100k_ratio $(python3 -c "print(f'{$r100k/$r10:.2f}')") x_show_at_10"
fi

# recover of 100 tasks whose process died half-way.
rec="$work/rec"
for i in $(seq 1 100); do
  # In a subshell that outlives the killed command (`|| true` keeps bash
  # from exec'ing it, and set -e from ending the script), so that bash's
  # "Killed" notice goes to /dev/null.
  (ASSISTANT_FAULT=after:prepare "$A" --data "$rec" start r$i A3001 --reason x || true) > /dev/null 2>&1
done
start=$(date +%s.%N)
"$A" --data "$rec" recover > /dev/null
end=$(date +%s.%N)
echo "recover_ms $(python3 -c "print(f'{($end-$start)*1000:.0f}')") ms_for_100"

echo "binary_size $(python3 -c "import os; print(f'{os.path.getsize(\"$A\")/1048576:.1f}')") MiB"
summary
