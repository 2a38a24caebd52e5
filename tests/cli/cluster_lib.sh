# shellcheck shell=bash disable=SC2034  # sourced: its variables are used by the tests
# Shared set-up of the cluster tests (cluster_slurm_test.sh, cluster_pdsh_test.sh, cluster_kubectl_test.sh;
# sourced, not run): skip rules, a scratch directory under the build (mode 755: munged
# wants its socket's ancestors searchable), an `ncclscope` wrapper for the nodes, fixture
# ranks of one job (comm_fixture --rank R --nranks N), bounded waits, check NAME COMMAND...
build=${NCCLSCOPE_BUILD:?} src=${NCCLSCOPE_SRC:?}
cli=$build/bin/ncclscope
comm_fixture=$build/fixtures/comm_fixture
fake_lib=$build/fixtures/fakelib/libnccl.so.2
profile=$src/native/profiles/9fcf74d93a8c3605bf7718f594d0a24366e38536.json
collect=$src/scripts/cluster-collect.sh

skip() { echo "SKIP: $*"; exit 77; }
need_root() { [ "$(id -u)" = 0 ] || skip "not root (the daemons run as root here)"; }
# The node named "localhost" must resolve as on any installed machine (/etc/hosts); a bare
# chroot (debootstrap) has no /etc/hosts.
need_localhost() { getent hosts localhost >/dev/null || skip "'localhost' does not resolve here (no /etc/hosts entry)"; }
for needed in "$cli" "$comm_fixture" "$fake_lib"; do [ -e "$needed" ] || skip "$needed not built"; done
need_commands() {  # need_commands CMD... : skip, naming the Debian package, when one is missing
  local command
  for command in "$@"; do
    command -v "${command%%:*}" >/dev/null || skip "${command%%:*} missing (apt-get install ${command#*:})"
  done
}
need_commands python3:python3 timeout:coreutils

failures=0
check() {  # check NAME CONDITION-COMMAND...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}
finish() {  # finish WHAT LOG-LINES: the summary line and exit code of a test
  if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)"; tail -n "$2" "$work"/*.err
    exit 1
  fi
  echo "$1: all checks passed"
}
json_check() {  # json_check NAME FILE PYTHON-EXPRESSION-ON-r
  check "$1" python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$2" "$3"
}
wait_for() {  # wait_for SECONDS COMMAND... : polls every 0.1 s; 1 when it never held
  local tries=$(($1 * 10)); shift
  for _ in $(seq "$tries"); do "$@" && return 0; sleep 0.1; done
  return 1
}
free_port() {  # a TCP port nothing listens on now (the kernel picks it)
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# setup_work: the scratch directory (after the skip checks, so a skip leaves nothing behind)
# and the nodes' ncclscope: the build's, with the scratch profile cache;
# NCCLSCOPE_TEST_HANG_PID makes its read of that one process hang (a rank whose read never returns).
setup_work() {
  work=$(mktemp -d -p "$build" cluster-real.XXXXXX)  # not /tmp: it may be mounted noexec
  chmod 755 "$work"
  export XDG_CACHE_HOME=$work/cache
  cat >"$work/node-ncclscope" <<EOF
#!/usr/bin/env bash
[ -n "\${NCCLSCOPE_TEST_HANG_PID:-}" ] && [ "\$3" = "\$NCCLSCOPE_TEST_HANG_PID" ] && exec sleep 60
XDG_CACHE_HOME=$work/cache exec $cli "\$@"
EOF
  chmod +x "$work/node-ncclscope"
}

# fixture_args RANK NRANKS CULPRIT: a rank of one job; the culprit launched one AllReduce fewer.
fixture_args() {
  local allreduce=7
  [ "$1" = "$3" ] && allreduce=6
  echo --profile "$profile" --library "$fake_lib" --rank "$1" --nranks "$2" --allreduce "$allreduce"
}

# start_ranks: after NRANKS fixtures were started writing $work/rankR.out, waits for each one's
# JSON line and puts its pid (the fixture's own, not the timeout wrapper's) in pids[R].
start_ranks() {
  local rank
  for rank in $(seq 0 $((NRANKS - 1))); do
    wait_for 10 test -s "$work/rank$rank.out" || { cat "$work/rank$rank.out"; echo "FAIL: fixture rank $rank did not start"; exit 1; }
    pids[rank]=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["pid"])' "$work/rank$rank.out")
  done
}

# check_snapshots DIR RANK...: exactly rank-R.json for these ranks, each decoded from its live
# fixture (the communicator's rank is R, nranks and AllReduce as started).
check_snapshots() {
  local dir=$1; shift
  local want="" rank
  for rank in "$@"; do want+="rank-$rank.json "; done
  check "snapshots: $want" test "$(cd "$dir" && ls -- *.json 2>/dev/null | sort -V | tr '\n' ' ')" = "$want"
  for rank in "$@"; do
    json_check "rank-$rank.json: decoded from the live rank $rank" "$dir/rank-$rank.json" \
      "[(c['rank'], c['nranks']) for c in r['communicators']] == [($rank, $NRANKS)] and r['communicators'][0]['seq_launched']['AllReduce'] == (6 if $rank == $CULPRIT else 7)"
  done
}
