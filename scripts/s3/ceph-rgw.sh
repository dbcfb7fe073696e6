#!/usr/bin/env bash
# ceph-rgw.sh — a throwaway S3 server for tests, benchmarks and `npm start -- --s3`:
# a single-node Ceph (1 mon, 1 osd on memstore, no mgr) + RADOS Gateway on 127.0.0.1,
# run as plain background processes (no systemd, cephadm or containers).
#
#   ceph-rgw.sh start DIR       start a cluster in DIR (created; must be empty or made by this
#                               script); prints {"endpoint","accessKeyId","secretAccessKey",
#                               "region","pids",...} as JSON on stdout (also DIR/s3.json; mode 0600)
#   ceph-rgw.sh stop DIR        stop exactly the daemons recorded in DIR/pids, then remove DIR
#   ceph-rgw.sh start-rgw DIR [NAME]
#                               start radosgw again on its port; with NAME, one more gateway on
#                               the same cluster (same buckets and users) on a port of its own,
#                               printed on stdout: a test can stop it without disturbing others
#   ceph-rgw.sh stop-rgw DIR [NAME]
#                               kill radosgw (or gateway NAME) only: an outage of that S3
#                               endpoint; the cluster and the other gateways stay
#   ceph-rgw.sh install         install the Debian packages if missing (root), nothing else
#
# Installs ceph-mon ceph-osd radosgw ceph-common (Debian 12: Ceph Pacific 16.2) with apt-get
# when they are missing: that needs root. With the packages installed, any user can run it.
# Everything else goes to stderr or DIR/log/. Settings that matter and their pitfalls:
# see the README ("Testing against S3") and the comments in the config below.
#
# Env knobs:
#   S3_STORE_SIZE=bytes        memstore capacity (default 4 GiB; RAM is used only as data is stored)
#   S3_RGW_PORT, S3_MON_PORT   (default: free ports picked on 127.0.0.1)
#   S3_SKIP_INSTALL=1          never run apt-get
#   S3_TIMEOUT=seconds         readiness deadline per step (default 120)
set -euo pipefail

CMD=${1:-}
DIR=${2:-}
TIMEOUT=${S3_TIMEOUT:-120}
PACKAGES=(ceph-mon ceph-osd radosgw ceph-common python3)

log() { echo "[ceph-rgw $(date +%T)] $*" >&2; }
# alive PID: running and not a zombie
alive() { local st; st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) && [ "$st" != Z ]; }
# ours PID: still a daemon this script started in DIR (they all run with CEPH_CONF=DIR/ceph.conf
# in their environment), so a PID since reused by an unrelated process is never signalled
ours() { { tr '\0' '\n' < "/proc/$1/environ"; } 2>/dev/null | grep -qxF "CEPH_CONF=$DIR/ceph.conf"; }
die() {
  log "ERROR: $*"
  [ -d "$DIR/log" ] && tail -n 30 "$DIR"/log/*.log >&2 2>/dev/null || true
  # never leave half a cluster behind: kill what was started (by recorded PID); keep DIR/log
  if [ -n "${STARTED_PIDS:-}" ]; then
    for pid in $STARTED_PIDS; do alive "$pid" && kill -KILL "$pid" 2>/dev/null && log "killed pid=$pid"; done
    [ "$CMD" = start ] && rm -f "$DIR/pids"
  fi
  exit 1
}
usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

install_packages() {
  [ "${S3_SKIP_INSTALL:-0}" = 1 ] && return 0
  local need=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
  done
  [ ${#need[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || die "the packages ${need[*]} are missing; install them as root (sudo $0 install, or sudo apt-get install --no-install-recommends ${need[*]})"
  log "installing ${need[*]} (once; about a minute)"
  export DEBIAN_FRONTEND=noninteractive
  # a fresh machine has no package lists yet: update only when the first try fails
  if ! apt-get install -y --no-install-recommends "${need[@]}" >&2; then
    apt-get update >&2
    apt-get install -y --no-install-recommends "${need[@]}" >&2
  fi
}

free_port() {
  python3 - <<'PY'
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

rgw_ready() {
  python3 - "$1" <<'PY'
import sys, urllib.request
urllib.request.urlopen("http://127.0.0.1:%s/" % sys.argv[1], timeout=2).read()
PY
}

# launch NAME DAEMON ARGS... : foreground mode (-f) as a detached background process; PID recorded
launch() {
  local name=$1; shift
  setsid "$@" -f < /dev/null > "$DIR/log/$name.out" 2>&1 &
  local pid=$!
  echo "$pid $name" >> "$DIR/pids"
  STARTED_PIDS="${STARTED_PIDS:-} $pid"
  log "started $name pid=$pid"
}

wait_for() { # wait_for DESC CMD...
  local desc=$1; shift
  local deadline=$(( $(date +%s) + TIMEOUT ))
  until "$@" > /dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || die "timeout waiting for $desc"
    while read -r pid name; do alive "$pid" || die "$name (pid $pid) died, see $DIR/log/"; done < "$DIR/pids"
    sleep 0.2
  done
}

CEPH() { timeout 20 ceph --connect-timeout 15 "$@"; }

# start_rgw NAME PORT: radosgw `client.NAME` (NAME rgw, or rgw.<x> for an extra gateway) on
# 127.0.0.1:PORT; returns once it answers HTTP (3: the port was taken). The frontend is given on
# the command line, so any number of gateways share the one config. tcp_nodelay=1: beast writes
# headers and body separately, and with Nagle on, every small GET waits ~40 ms for a delayed ACK.
start_rgw() {
  local name=$1 port=$2
  : > "$DIR/log/$name.out"
  launch "$name" radosgw -n "client.$name" --rgw-frontends "beast endpoint=127.0.0.1:$port tcp_nodelay=1" \
    --rgw-data "$DIR/rgw" --log-file "$DIR/log/$name.log"
  local pid; pid=$(awk -v n="$name" '$2==n{p=$1} END{print p}' "$DIR/pids")
  local deadline=$(( $(date +%s) + TIMEOUT ))
  until rgw_ready "$port" > /dev/null 2>&1; do
    if ! alive "$pid"; then
      if grep -qs 'failed to bind' "$DIR/log/$name.out" "$DIR/log/$name.log"; then return 3; fi
      die "radosgw $name (pid $pid) died, see $DIR/log/$name.log"
    fi
    [ "$(date +%s)" -lt "$deadline" ] || die "timeout waiting for radosgw $name on port $port"
    sleep 0.2
  done
  echo "$port" > "$DIR/$name.port"
  log "radosgw $name up on 127.0.0.1:$port (pid $pid)"
}

# kill_pids GRACE_TENTHS PID...: TERM, wait, then KILL what is left (ours only)
kill_pids() {
  local grace=$1; shift
  local sent=()
  for pid in "$@"; do ours "$pid" && kill -TERM "$pid" 2>/dev/null && sent+=("$pid"); done
  local n=$grace
  while [ ${#sent[@]} -gt 0 ] && [ "$n" -gt 0 ]; do
    local still=()
    for pid in "${sent[@]}"; do ours "$pid" && still+=("$pid"); done
    sent=("${still[@]+"${still[@]}"}"); [ ${#sent[@]} -gt 0 ] && sleep 0.1; n=$((n-1))
  done
  for pid in "${sent[@]+"${sent[@]}"}"; do log "KILL pid=$pid"; kill -KILL "$pid" 2>/dev/null || true; done
  n=50
  while [ ${#sent[@]} -gt 0 ] && [ "$n" -gt 0 ]; do
    local still=()
    for pid in "${sent[@]}"; do ours "$pid" && still+=("$pid"); done
    sent=("${still[@]+"${still[@]}"}"); [ ${#sent[@]} -gt 0 ] && sleep 0.1; n=$((n-1))
  done
  [ ${#sent[@]} -eq 0 ] || log "WARNING: still alive after SIGKILL: ${sent[*]}"
}

cmd_start() {
  install_packages
  if [ -e "$DIR/pids" ]; then die "$DIR/pids exists: a cluster may still be running there (run: $0 stop $DIR)"; fi
  if [ -e "$DIR" ]; then
    # only ever wipe a directory that is empty or was made by this script
    if [ -n "$(ls -A "$DIR")" ] && [ ! -e "$DIR/.ceph-rgw" ]; then die "$DIR exists, is not empty and was not made by $0"; fi
    rm -rf "$DIR"
  fi
  mkdir -p "$DIR"/{run,log,mon.a,osd.0,rgw}
  chmod 700 "$DIR"
  : > "$DIR/.ceph-rgw"
  DIR=$(cd "$DIR" && pwd)
  local conf=$DIR/ceph.conf
  # admin sockets are AF_UNIX paths (max 107 bytes): only when DIR is short enough
  local asok='' rgw_asok=''
  if [ ${#DIR} -le 70 ]; then asok="$DIR/run/\$name.asok"; rgw_asok="$DIR/run/rgw.asok"; fi
  export CEPH_CONF=$conf
  local t0; t0=$(date +%s.%N)
  local mon_port=${S3_MON_PORT:-$(free_port)}
  local rgw_port=${S3_RGW_PORT:-$(free_port)}
  [ "$mon_port" != "$rgw_port" ] || rgw_port=$(free_port)
  local fsid osd_uuid
  fsid=$(cat /proc/sys/kernel/random/uuid)
  osd_uuid=$(cat /proc/sys/kernel/random/uuid)
  local store_size=${S3_STORE_SIZE:-4294967296}

  cat > "$conf" <<CONF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$mon_port]
mon initial members = a
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
ms bind msgr2 = true
ms bind ipv6 = false
# throwaway cluster: no cephx at all, so no keyrings to manage
auth cluster required = none
auth service required = none
auth client required = none
auth supported = none
# radosgw defaults ms_mon_client_mode to "secure", impossible with auth=none
# (symptom: endless "get_initial_auth_request returned -13"): allow crc everywhere
ms mon client mode = crc secure
ms client mode = crc secure
# everything under DIR: nothing in /var/lib/ceph, /var/run/ceph, /var/log/ceph
run dir = $DIR/run
admin socket = $asok
log file = $DIR/log/\$name.log
mon cluster log file = $DIR/log/cluster.log
crash dir = $DIR/crash
keyring = $DIR/keyring
log to stderr = false
err to stderr = true
# one replica, small PG counts, no autoscaler (there is no mgr)
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
# do not let a nearly full CI disk shut the mon down
mon data avail crit = 0
mon data avail warn = 0
mon warn on insecure global id reclaim = false
mon warn on insecure global id reclaim allowed = false
# commit map changes (pool creation, osd boot) at once instead of batching for 1 s: start 18 s -> 2 s
paxos propose interval = 0.05
paxos min wait = 0.01

[mon]
mon data = $DIR/\$name

[osd]
osd data = $DIR/\$name
# RAM-backed object store: fastest start; capacity is used as data arrives
osd objectstore = memstore
memstore device bytes = $store_size
osd memory target = 939524096
osd crush update on start = true
osd op num shards = 1
osd op num threads per shard = 2
# a gateway killed for an outage leaves its watches on the notify objects; every metadata change
# (a new bucket) then waits for them to time out (default 30 s) before it completes
osd client watch timeout = 3

[client]
admin socket =
log file = $DIR/log/client.log

[client.rgw]
rgw data = $DIR/rgw
rgw thread pool size = 64
rgw dns name =
rgw enable usage log = false
# a bucket index in 16 shards (over the pool's PGs) instead of 1: small PUTs and DELETEs of
# one bucket no longer queue on a single index object
rgw override bucket index max shards = 16
# deleted objects' space comes back after minutes, not the default 2 h (memstore is RAM)
rgw gc obj min wait = 60
rgw gc processor period = 60
admin socket = $rgw_asok
log file = $DIR/log/rgw.log
CONF
  : > "$DIR/pids"

  monmaptool --create --clobber --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$DIR/monmap" > /dev/null
  ceph-mon --mkfs -i a --monmap "$DIR/monmap" 2> "$DIR/log/mon-mkfs.out"
  launch mon.a ceph-mon -i a
  wait_for "mon quorum" CEPH mon stat
  log "mon up"

  local osd_id; osd_id=$(CEPH osd new "$osd_uuid")
  [ "$osd_id" = 0 ] || die "unexpected osd id '$osd_id'"
  ceph-osd -i 0 --mkfs --osd-uuid "$osd_uuid" > "$DIR/log/osd-mkfs.out" 2>&1 || die "osd mkfs failed: $(tail -5 "$DIR/log/osd-mkfs.out")"
  launch osd.0 ceph-osd -i 0
  osd_up() { CEPH osd dump -f json | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if any(o["up"] for o in d["osds"]) else 1)'; }
  wait_for "osd up" osd_up
  log "osd up"

  local attempt rc
  for attempt in 1 2 3; do
    rc=0; start_rgw rgw "$rgw_port" || rc=$?
    [ "$rc" = 0 ] && break
    # the picked port was taken between picking and binding: pick another one
    [ -z "${S3_RGW_PORT:-}" ] && [ "$attempt" -lt 3 ] || die "radosgw could not bind 127.0.0.1:$rgw_port"
    log "port $rgw_port was taken, retrying"; sed -i '/ rgw$/d' "$DIR/pids"; rgw_port=$(free_port)
  done

  timeout 60 radosgw-admin user create --uid=test --display-name="test user" --gen-access-key --gen-secret > "$DIR/user.json" 2> "$DIR/log/user-create.out" \
    || die "radosgw-admin user create failed: $(tail -5 "$DIR/log/user-create.out")"
  chmod 600 "$DIR/user.json"
  local t1; t1=$(date +%s.%N)
  umask 077
  python3 - "$DIR" "$rgw_port" "$mon_port" "$t0" "$t1" <<'PY' | tee "$DIR/s3.json"
import json, sys
d, rgw, mon, t0, t1 = sys.argv[1:]
k = json.load(open(d + "/user.json"))["keys"][0]
pids = {}
for line in open(d + "/pids"):
    pid, name = line.split()
    pids[name] = int(pid)
print(json.dumps({
    "endpoint": "http://127.0.0.1:%s" % rgw,
    "accessKeyId": k["access_key"],
    "secretAccessKey": k["secret_key"],
    "region": "us-east-1",
    "forcePathStyle": True,
    "dir": d,
    "monPort": int(mon),
    "rgwPort": int(rgw),
    "pids": pids,
    "startSeconds": round(float(t1) - float(t0), 2),
}, indent=2))
PY
}

need_cluster() {
  [ -d "$DIR" ] || die "$DIR does not exist"
  DIR=$(cd "$DIR" && pwd)
  [ -e "$DIR/.ceph-rgw" ] || die "$DIR was not made by $0; not touching it"
  [ -f "$DIR/pids" ] || die "no cluster is running in $DIR"
  export CEPH_CONF=$DIR/ceph.conf
}

gateway_name() { # gateway_name [NAME]: rgw, or rgw.NAME
  if [ -z "${1:-}" ]; then echo rgw; return; fi
  [[ "$1" =~ ^[a-z0-9]{1,20}$ ]] || die "a gateway name is 1-20 lowercase letters or digits"
  echo "rgw.$1"
}

cmd_stop_rgw() {
  need_cluster
  local name; name=$(gateway_name "${1:-}")
  local pids; pids=$(awk -v n="$name" '$2==n{print $1}' "$DIR/pids")
  [ -n "$pids" ] || die "radosgw $name is not running in $DIR"
  for pid in $pids; do ours "$pid" && kill -KILL "$pid" 2>/dev/null && log "killed $name pid=$pid"; done
  for pid in $pids; do
    local n=50; while ours "$pid" && [ "$n" -gt 0 ]; do sleep 0.05; n=$((n-1)); done
  done
  awk -v n="$name" '$2!=n' "$DIR/pids" > "$DIR/pids.new" && mv "$DIR/pids.new" "$DIR/pids"
}

cmd_start_rgw() {
  need_cluster
  local name; name=$(gateway_name "${1:-}")
  if awk -v n="$name" '$2==n' "$DIR/pids" | grep -q .; then die "radosgw $name is already running in $DIR"; fi
  local port
  if [ -f "$DIR/$name.port" ]; then port=$(cat "$DIR/$name.port"); else port=$(free_port); fi
  local deadline=$(( $(date +%s) + 30 )) rc
  # a port that was ours a moment ago: retry a bind that races the old socket's release
  while :; do
    rc=0; start_rgw "$name" "$port" || rc=$?
    [ "$rc" = 0 ] && break
    awk -v n="$name" '$2!=n' "$DIR/pids" > "$DIR/pids.new" && mv "$DIR/pids.new" "$DIR/pids"
    [ "$(date +%s)" -lt "$deadline" ] || die "radosgw $name could not bind 127.0.0.1:$port"
    sleep 0.2
  done
  local pid; pid=$(awk -v n="$name" '$2==n{p=$1} END{print p}' "$DIR/pids")
  echo "{\"name\":\"$name\",\"endpoint\":\"http://127.0.0.1:$port\",\"port\":$port,\"pid\":$pid}"
}

cmd_stop() {
  [ -d "$DIR" ] || { log "$DIR does not exist"; exit 0; }
  DIR=$(cd "$DIR" && pwd)
  [ -e "$DIR/.ceph-rgw" ] || die "$DIR was not made by $0; not touching it"
  if [ -f "$DIR/pids" ]; then
    # reverse start order: rgw, osd, mon. The data is thrown away: radosgw 16.2 often needs
    # 5-10 s to exit on SIGTERM, so it gets little grace before SIGKILL
    kill_pids "$(( ${S3_STOP_GRACE:-1} * 10 ))" $(tac "$DIR/pids" | awk '{print $1}')
  fi
  rm -rf "$DIR"
  log "stopped and removed $DIR"
}

case "$CMD" in
  install) install_packages ;;
  start) [ -n "$DIR" ] || usage; cmd_start ;;
  stop) [ -n "$DIR" ] || usage; cmd_stop ;;
  stop-rgw) [ -n "$DIR" ] || usage; cmd_stop_rgw "${3:-}" ;;
  start-rgw) [ -n "$DIR" ] || usage; cmd_start_rgw "${3:-}" ;;
  *) usage ;;
esac
