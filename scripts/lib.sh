# scripts/lib.sh: what the scripts under scripts/ share (ports, waiting for
# a process, stopping it, a work directory), so that each of them only
# orchestrates. A script sources it right after `set -euo pipefail`:
#
#   . "$(dirname "$0")/lib.sh"
#
# It moves to the repository's root ($repo) and names the script ($prog)
# for messages. On exit (normal, error, Ctrl-C or SIGTERM) it stops every
# process the script recorded with `started PID`, by that PID and only if
# it is still the script's own child: never a process by name. Then it
# runs the script's `at_exit` function, if it defines one, and removes the
# directories made with `work_dir`.

prog=$(basename "$0")
script=$(cd "$(dirname "$0")" && pwd)/$prog
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

die() { echo "$prog: $*" >&2; exit 1; }
log() { echo "$prog: $*" >&2; }

# die_log LOG MESSAGE: die, with the end of LOG (a process's output)
# first, when there is one.
die_log() {
  local f=$1
  shift
  if [ -n "$f" ] && [ -s "$f" ]; then tail -n 20 "$f" >&2; fi
  die "$*${f:+ (log: $f)}"
}

# usage: the script's --help, its header comment (line 2 to `set -euo`).
usage() { sed -n '2,/^set -euo/p' "$script" | sed '$d; s/^# \{0,1\}//'; }

# require TOOL[:PACKAGE]...: die naming every TOOL that is not installed,
# with the Debian package that has it.
require() {
  local t missing=()
  for t in "$@"; do
    command -v "${t%%:*}" >/dev/null 2>&1 && continue
    if [ "${t#*:}" != "$t" ]; then missing+=("${t%%:*} (Debian package: ${t#*:})"); else missing+=("$t"); fi
  done
  [ ${#missing[@]} -eq 0 ] || die "missing: $(printf '%s, ' "${missing[@]}" | sed 's/, $//')"
}

# ---- processes -------------------------------------------------------------
lib_pids=() # started, not yet stopped
lib_dirs=() # removed on exit

# started PID: a process this script started in the background, stopped
# on exit.
started() { lib_pids+=("$1"); }

# ours PID: whether PID still runs as a child of this script (and is not
# a process that took over the number of one that ended).
ours() {
  local s a
  if s=$(cat "/proc/$1/stat" 2>/dev/null); then
    s=${s##*) } # past the command name, which may hold spaces
    read -r -a a <<<"$s"
    # (a bare return would give, in the exit trap, the status of the
    # command before the trap)
    [ "${a[0]}" != Z ] && [ "${a[1]}" = "$$" ]
    return $?
  fi
  [ "$(ps -o ppid= -p "$1" 2>/dev/null | tr -d ' ')" = "$$" ]
}

# stop PID [SECONDS]: SIGTERM to a process this script started, SIGKILL
# if it still runs after SECONDS (default 15: pollproxy drains its
# connections for up to 10), then reap it.
stop() {
  local pid=$1 tries=$(( ${2:-15} * 10 )) i p kept=()
  for p in "${lib_pids[@]}"; do [ "$p" = "$pid" ] || kept+=("$p"); done
  lib_pids=("${kept[@]}")
  if ours "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < tries; i++)); do ours "$pid" || break; sleep 0.1; done
    if ours "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  wait "$pid" 2>/dev/null || true
}

# kill_now PID: SIGKILL a process this script started (a crash, for a
# fault), then reap it.
kill_now() {
  local p kept=()
  for p in "${lib_pids[@]}"; do [ "$p" = "$1" ] || kept+=("$p"); done
  lib_pids=("${kept[@]}")
  if ours "$1"; then kill -KILL "$1" 2>/dev/null || true; fi
  wait "$1" 2>/dev/null || true
}

lib_exit() {
  local pid
  # all at once first, so that their drains overlap
  for pid in "${lib_pids[@]}"; do
    if ours "$pid"; then kill -TERM "$pid" 2>/dev/null || true; fi
  done
  for pid in "${lib_pids[@]}"; do stop "$pid"; done
  if declare -F at_exit >/dev/null; then at_exit || true; fi
  if [ ${#lib_dirs[@]} -gt 0 ]; then rm -rf "${lib_dirs[@]}"; fi
}
trap lib_exit EXIT
trap 'exit 130' INT TERM

# work_dir VAR: make a temporary directory, removed on exit, and set VAR
# to its path.
work_dir() {
  local d
  d=$(mktemp -d "${TMPDIR:-/tmp}/pollproxy-$prog.XXXXXX")
  lib_dirs+=("$d")
  printf -v "$1" %s "$d"
}

# ---- waiting ---------------------------------------------------------------
# wait_for SECONDS PID NAME LOG COMMAND...: run COMMAND every 0.1 s until
# it prints something, and print that; die, with LOG's end, if PID (the
# process NAME being waited for) exits first or SECONDS pass.
wait_for() {
  local secs=$1 pid=$2 name=$3 logf=$4 out i
  shift 4
  for ((i = 0; i < secs * 10; i++)); do
    out=$("$@" 2>/dev/null) || true
    if [ -n "$out" ]; then echo "$out"; return 0; fi
    kill -0 "$pid" 2>/dev/null || die_log "$logf" "$name exited"
    sleep 0.1
  done
  die_log "$logf" "$name: still waiting after ${secs}s for $*"
}

# accepts PORT: prints PORT if something accepts connections on
# 127.0.0.1:PORT.
accepts() { if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then echo "$1"; fi; }

# wait_port PORT PID NAME [LOG [SECONDS]]: wait until 127.0.0.1:PORT
# accepts (10 s at most), while PID lives.
# (Its output is taken, not sent to /dev/null: a die inside a redirection
# would leave the exit trap's stdout there.)
wait_port() {
  local up
  up=$(wait_for "${5:-10}" "$2" "$3" "${4:-}" accepts "$1")
}

# pollproxy_port OUT: the port in the address a pollproxy listening on
# port 0 prints ("pollproxy: https://127.0.0.1:PORT/ -> ...", or
# "pollproxy static: ..."), once it is in the file OUT.
pollproxy_port() { sed -n 's|^pollproxy[a-z ]*: https://127\.0\.0\.1:\([0-9][0-9]*\)/.*|\1|p' "$1" 2>/dev/null | head -n1; }

# listen_port PID OUT NAME [LOG]: wait (10 s at most) for the pollproxy PID
# started on 127.0.0.1:0 to print its address to OUT; prints the port.
listen_port() { wait_for 10 "$1" "$3" "${4:-$2}" pollproxy_port "$2"; }

# first_line FILE PID NAME [LOG]: wait (10 s at most) for the first line a
# starting process prints to FILE (an address, say); prints it.
first_line() { wait_for 10 "$2" "$3" "${4:-}" head -n1 "$1"; }

# free_port: a TCP port on 127.0.0.1 that nothing listens on right now,
# below the kernel's ephemeral range when there is room: a port that an
# outgoing connection holds accepts nothing but cannot be bound either, and
# a neighbour's thousands of loopback connections hold many of them.
free_port() {
  local p i lo=20000 span=30000 eph
  read -r eph _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || eph=0
  if [ "$eph" -gt 11000 ]; then lo=10000 span=$(( eph - 10000 )); fi
  for i in $(seq 100); do
    p=$((lo + RANDOM % span))
    if [ -z "$(accepts "$p")" ]; then echo "$p"; return 0; fi
  done
  die "no free port found"
}

# ---- what the scripts measure ------------------------------------------------
# cpu_ticks PID: user + system CPU time of PID (all threads) in clock
# ticks, 0 where /proc is not there.
cpu_ticks() {
  local s a
  s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return 0; }
  s=${s##*) } # past the command name, which may hold spaces
  read -r -a a <<<"$s"
  echo $((a[11] + a[12]))
}

# vm_kib PID FIELD: a memory figure of PID in KiB, FIELD of
# /proc/PID/status (VmRSS: resident now, VmHWM: the peak).
vm_kib() { sed -n "s/^$2:[[:space:]]*\([0-9]*\).*/\1/p" "/proc/$1/status"; }

# fd_count PID: the descriptors PID holds.
fd_count() { ls "/proc/$1/fd" | wc -l; }

# median: the median of the numbers on stdin, one a line ("-" for none).
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# ---- building --------------------------------------------------------------
# make_cert DIR: a self-signed ECDSA P-256 certificate for 127.0.0.1,
# DIR/cert.pem and DIR/key.pem.
make_cert() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$1/key.pem" -out "$1/cert.pem" -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 || die "openssl could not make a certificate"
}

# build_baseline REF BIN: build pollproxy from git commit REF to BIN (the
# source goes to BIN.src): a change's before, to run beside its after.
build_baseline() {
  local rev
  rev=$(git rev-parse --verify --quiet "$1^{commit}") || die "--baseline $1: no such commit"
  log "building the baseline pollproxy from $1 (${rev:0:12})"
  mkdir -p "$2.src"
  git archive "$rev" | tar -x -C "$2.src"
  (cd "$2.src" && go build -o "$2" ./cmd/pollproxy) || die "--baseline $1 does not build"
}
