#!/usr/bin/env bash
# Sharded runs on a real Slurm cluster (README "Running on many machines"): starts a
# single-node cluster (munged, slurmctld and slurmd as root, with their own key, socket, ports
# and state under a temporary directory), nginx on loopback with generated files, and submits
#   sbatch --array=0-3 --wait  batchfetch run datasets.yaml --shard auto
# into one shared output_dir. Then merges the shard reports, checks every file byte for byte and
# the merged report against its schema, and submits the array again: every job must be up to
# date with nothing transferred. A cluster that cannot start is a failure, never a skip.
#
# usage: scripts/slurm-test.sh [BATCHFETCH_BINARY]   (default .build/debug/batchfetch; needs root)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
binary=$(realpath "${1:-.build/debug/batchfetch}")

fail() { echo "slurm-test: FAILED: $*" >&2; exit 1; }
[ -x "$binary" ] || fail "no batchfetch binary at $binary (build first)"
[ "$(id -u)" -eq 0 ] || fail "slurmd must run as root to start tasks; run as root (CI does)"
for tool in munged slurmctld slurmd sbatch nginx python3; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || fail "$tool is not installed (scripts/install-deps.sh installs slurm-wlm and nginx-light)"
done
export PATH="$PATH:/usr/sbin"

work=$(mktemp -d /tmp/batchfetch-slurm.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -f "$work/munge/munged.pid" ] && kill "$(cat "$work/munge/munged.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
  [ "${KEEP:-0}" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() { # seconds, command...: until the command succeeds, or fail after that long
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
}

# --- munge: its own key and socket, so no system service is needed or disturbed
mkdir -p "$work/munge" && chmod 700 "$work/munge"
head -c 1024 /dev/urandom > "$work/munge/munge.key" && chmod 600 "$work/munge/munge.key"
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/socket" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" --seed-file="$work/munge/seed" \
  || fail "munged did not start: $(cat "$work/munge/munged.log" 2>/dev/null)"
wait_for 10 sh -c "munge -S '$work/munge/socket' -n | unmunge -S '$work/munge/socket'" \
  || fail "munge does not answer on $work/munge/socket"

# --- Slurm: one node, this machine, four tasks at once
node=$(hostname -s)
mkdir -p "$work/state" "$work/spool"
cat > "$work/slurm.conf" <<EOF
ClusterName=batchfetch-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
NodeName=$node NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
export SLURM_CONF="$work/slurm.conf"
slurmctld -D -i > "$work/slurmctld.out" 2>&1 & pids+=($!)
slurmd -D > "$work/slurmd.out" 2>&1 & pids+=($!)
wait_for 60 sh -c "sinfo -h -o %t | grep -qx idle" \
  || fail "the Slurm cluster did not come up: $(sinfo 2>&1 | tail -2); slurmctld: $(tail -3 "$work/slurmctld.log" 2>/dev/null); slurmd: $(tail -3 "$work/slurmd.log" 2>/dev/null)"

# --- nginx on loopback serving 24 files; the manifest has dependency chains and a sum file
mkdir -p "$work/www" "$work/nginx" "$work/run"
port=$(free_port)
cat > "$work/nginx/nginx.conf" <<EOF
daemon off; master_process off; worker_processes 1;
error_log $work/nginx/error.log warn; pid $work/nginx/nginx.pid;
events { worker_connections 256; }
http {
  access_log $work/nginx/access.log;
  client_body_temp_path $work/nginx/body; proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi; uwsgi_temp_path $work/nginx/uwsgi; scgi_temp_path $work/nginx/scgi;
  server { listen 127.0.0.1:$port; root $work/www; }
}
EOF
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" & pids+=($!)
python3 - "$work" "$port" <<'EOF'
import hashlib, os, sys
work, port = sys.argv[1], sys.argv[2]
lines = ["version: 1", "output_dir: data", "concurrency: 4", "defaults: {retries: 2, backoff: 100ms}", "jobs:"]
sums = []
for i in range(24):
    data = os.urandom(20_000 + 37_000 * i)
    name = f"part-{i:02d}.bin"
    open(f"{work}/www/{name}", "wb").write(data)
    sums.append(f"{hashlib.sha256(data).hexdigest()}  {name}")
    if i < 20:
        after = f", depends_on: [part-{i - 1:02d}]" if i % 4 == 3 else ""
        lines.append(f"  - {{id: part-{i:02d}, url: 'http://127.0.0.1:{port}/{name}', size: {len(data)}, "
                     f"checksum: 'sha256:{hashlib.sha256(data).hexdigest()}'{after}}}")
open(f"{work}/www/SHA256SUMS", "w").write("\n".join(sums[20:]) + "\n")
lines.append(f"  - {{id: sums, url: 'http://127.0.0.1:{port}/SHA256SUMS'}}")
for i in range(20, 24):
    lines.append(f"  - {{id: part-{i:02d}, url: 'http://127.0.0.1:{port}/part-{i:02d}.bin', checksums_from: sums}}")
open(f"{work}/run/datasets.yaml", "w").write("\n".join(lines) + "\n")
EOF
wait_for 10 python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/SHA256SUMS')" || fail "nginx did not start on port $port"

# --- the array, as a user submits it
cat > "$work/run/fetch.sh" <<EOF
#!/bin/sh
exec "$binary" run datasets.yaml --shard auto --progress line
EOF
chmod +x "$work/run/fetch.sh"
submit() {
  rm -f "$work"/run/task-*.out
  (cd "$work/run" && sbatch --array=0-3 --wait --chdir="$work/run" --output="$work/run/task-%a.out" fetch.sh) \
    || { tail -n +1 "$work"/run/task-*.out >&2; fail "sbatch --array=0-3 --wait failed"; }
  for k in 0 1 2 3; do
    grep -q "batchfetch: shard $k/4 (from Slurm SLURM_ARRAY_TASK_ID=$k of 4 tasks)" "$work/run/task-$k.out" \
      || { cat "$work/run/task-$k.out" >&2; fail "task $k did not take shard $k/4 from Slurm"; }
  done
}
submit
"$binary" merge-reports "$work"/run/data/batchfetch-report.shard-*-of-4.json --report "$work/run/merged.json" \
  || fail "merge-reports exited $?"
for i in $(seq -w 0 23); do
  cmp -s "$work/www/part-$i.bin" "$work/run/data/part-$i.bin" || fail "data/part-$i.bin differs from the origin's file"
done
python3 - "$work/run/merged.json" "$repo/schemas/report.schema.json" 25 downloaded <<'EOF' || fail "the merged report is wrong"
import json, sys, jsonschema
report, schema, jobs, status = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3]), sys.argv[4]
jsonschema.validate(report, schema)
assert report["status"] == "succeeded", report["status"]
assert len(report["jobs"]) == jobs and len({j["id"] for j in report["jobs"]}) == jobs, len(report["jobs"])
assert all(j["status"] == status for j in report["jobs"]), [(j["id"], j["status"]) for j in report["jobs"] if j["status"] != status]
assert len(report["merged_from"]) == 4
EOF
echo "slurm-test: 4 array tasks fetched 25 jobs into one output_dir; merged report and every file verified"

# --- the nightly rerun: every shard finds its files up to date, nothing is transferred
submit
"$binary" merge-reports "$work"/run/data/batchfetch-report.shard-*-of-4.json --report "$work/run/merged.json" \
  || fail "merge-reports of the rerun exited $?"
python3 - "$work/run/merged.json" "$repo/schemas/report.schema.json" 25 up_to_date <<'EOF' || fail "the rerun's merged report is wrong"
import json, sys, jsonschema
report = json.load(open(sys.argv[1]))
jsonschema.validate(report, json.load(open(sys.argv[2])))
assert all(j["status"] == sys.argv[4] for j in report["jobs"]), [(j["id"], j["status"]) for j in report["jobs"]]
assert report["summary"]["bytes_transferred"] == 0, report["summary"]
EOF
echo "slurm-test: passed (the rerun found all 25 jobs up to date)"
