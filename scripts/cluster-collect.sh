#!/usr/bin/env bash
# Collects one `ncclscope.state/1` snapshot per NCCL process on every node of a
# hung job through the cluster's own launcher, then triages them in one place.
#
#   cluster-collect.sh --launcher "CMD ..." --out DIR [options] [-- TRIAGE-ARGS...]
#       runs `CMD ... bash -c NODE-SCRIPT` (or `CMD ... bash PATH node` with
#       --remote-script PATH), gathers the snapshots into DIR as rank-R.json and
#       runs `ncclscope triage DIR TRIAGE-ARGS...`.
#   cluster-collect.sh node [--ncclscope PATH] [--timeout S]
#       the per-node part: finds processes with libnccl mapped (/proc/*/maps),
#       runs `ncclscope state --pid P --freeze --stacks --json` for each and prints one framed line
#       per snapshot on stdout (gzip+base64), so any launcher that forwards
#       stdout (srun, pdsh, kubectl exec, ssh) can carry them; a first line says how
#       many processes it found, a last line that it is done.
#
# Options:
#   --launcher "CMD"      e.g. "srun --overlap --jobid 1234 --ntasks-per-node=1",
#                         "pdsh -R ssh -w node[01-16]", "kubectl exec -i pod-3 --"
#   --remote-script PATH  the path of this script on the nodes (pdsh/ssh re-parse
#                         their command line, so pass a path rather than a script)
#   --ncclscope PATH      ncclscope on the nodes (default: ncclscope in PATH)
#   --local-ncclscope P   ncclscope here, for the triage (default: same as --ncclscope)
#   --node-timeout S      seconds a node has for its whole answer (default 60); the nodes
#                         run in parallel, so the launcher is stopped after S + min(S, 10) s
#   --nodes "N1,N2"       the nodes expected (as the launcher names them): one that never
#                         answers is named even when the launcher says nothing of it
#                         (pdsh's -w list, plain or gpu[01-16], is read for this already;
#                         for srun, whose lines carry no prefix, the nodes' hostnames)
#   --no-triage           only gather
# NCCLSCOPE_PIDS="P1 P2" on a node restricts the search to those processes.
# Snapshots are named rank-R.json from the process's RANK, OMPI_COMM_WORLD_RANK,
# PMI_RANK, PMIX_RANK or SLURM_PROCID environment variable, else HOST-pidP.json.
# Progress goes to stderr ("collected 3/8 ranks (1/2 nodes done)"; the total is the job's
# size as its communicators say). Each node that did not answer is one stderr line and a
# line "NODE<TAB>why" in DIR/unanswered-nodes.txt; the launcher's stderr is DIR/launcher.log.
# Exit status: that of `ncclscope triage` (0 ok, 1 partial, 2 nothing usable), and 1 when
# it is 0 but a node did not answer or a snapshot was lost; 64 usage.
set -u

# The processes with libnccl mapped executable, one "PID" per line (NCCLSCOPE_PIDS restricts).
node_candidates() {
  local maps pid exe
  local -a candidates=(/proc/[0-9]*/maps)
  if [ -n "${NCCLSCOPE_PIDS:-}" ]; then  # restrict to these pids (space-separated)
    candidates=()
    for pid in $NCCLSCOPE_PIDS; do candidates+=("/proc/$pid/maps"); done
  fi
  for maps in "${candidates[@]}"; do
    pid=${maps#/proc/}
    pid=${pid%/maps}
    [ "$pid" = "$$" ] && continue
    # Executable mappings only: a debugger reading libnccl's DWARF maps it too.
    grep -qE ' r-xp .*/libnccl[^/]*\.so' "$maps" 2>/dev/null || continue
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null)
    case ${exe##*/} in ncclscope|gdb|cuda-gdb) continue ;; esac
    echo "$pid"
  done
}

node_main() {
  local nsc=ncclscope timeout_s=60
  while [ $# -gt 0 ]; do
    case $1 in
      --ncclscope) nsc=$2; shift 2 ;;
      --timeout) timeout_s=$2; shift 2 ;;
      *) echo "@@ncclscope-error $(hostname) unknown node option $1"; return 64 ;;
    esac
  done
  local host pid rank name json rc left sent=0
  host=$(hostname)
  local -a pids
  mapfile -t pids < <(node_candidates)
  printf '@@ncclscope-node %s found %s\n' "$host" "${#pids[@]}"
  for pid in "${pids[@]}"; do
    rank=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
      sed -n -E 's/^(RANK|OMPI_COMM_WORLD_RANK|PMI_RANK|PMIX_RANK|SLURM_PROCID)=([0-9]+)$/\1 \2/p' |
      awk '{v[$1]=$2} END {split("RANK OMPI_COMM_WORLD_RANK PMI_RANK PMIX_RANK SLURM_PROCID", o, " "); for (i = 1; i <= 5; i++) if (o[i] in v) {print v[o[i]]; exit}}')
    if [ -n "$rank" ]; then name=rank-$rank; else name=$host-pid$pid; fi
    left=$((timeout_s - SECONDS))  # the node's whole answer is bounded, not each read
    if [ "$left" -le 0 ]; then
      printf '@@ncclscope-error %s pid %s: not read, the node timeout (%s s) is spent\n' "$host" "$pid" "$timeout_s"
      continue
    fi
    json=$(timeout -k 2 "$left" "$nsc" state --pid "$pid" --freeze --stacks --json 2>/dev/null)  # host stacks for triage
    rc=$?
    # 1 = partial: some fields unreadable, the snapshot still says so itself.
    if [ "$rc" -le 1 ] && [ -n "$json" ]; then
      printf '@@ncclscope-snapshot %s %s\n' "$name.json" "$(printf '%s\n' "$json" | gzip -c | base64 -w0)"
      sent=$((sent + 1))
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
      printf '@@ncclscope-error %s pid %s: ncclscope state did not finish within the node timeout (%s s)\n' "$host" "$pid" "$timeout_s"
    else
      printf '@@ncclscope-error %s pid %s: ncclscope state exited %s\n' "$host" "$pid" "$rc"
    fi
  done
  [ "${#pids[@]}" -gt 0 ] || printf '@@ncclscope-error %s no process with libnccl mapped\n' "$host"
  printf '@@ncclscope-node-done %s sent %s\n' "$host" "$sent"
  return 0
}

usage() {
  sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//' >&2
  exit 64
}

# The launcher's name for the node a marker line came from: its line prefix ("node07: " from
# pdsh, "3: " from srun -l), else the hostname the node script printed.
line_node() {  # line_node LINE HOSTNAME-FROM-MARKER
  local prefix=${1%%@@ncclscope-*}
  prefix=${prefix%%:*}
  prefix=${prefix// /}
  printf '%s' "${prefix:-$2}"
}

# Why NODE gave no answer, from the launcher's stderr (pdsh prints "NODE: ssh: ..." and
# "pdsh@HERE: NODE: ssh exited with exit code 255"); $1 = node, $2 = the stderr file.
launcher_reason() {
  local line
  line=$(awk -v p="$1: " 'index($0, p) == 1 {print substr($0, length(p) + 1); exit}' "$2")
  [ -n "$line" ] || line=$(grep -v '^pdsh@' "$2" | grep -m1 -F -- "$1")  # kubectl: 'pods "NODE" not found'
  printf '%s' "${line//$'\r'/}"  # ssh ends its messages with CR LF
}

progress() {  # progress FORCE: "collected K/T ranks", at most once a second unless FORCE
  [ "$1" = 1 ] || [ "$SECONDS" != "$last_progress" ] || return 0
  local total=$job_ranks text
  [ "$total" -gt 0 ] || total=$found_total
  [ "$total" -gt 0 ] || total="?"
  text="collected $snapshots/$total ranks ($nodes_done/${#node_seen[@]} nodes done)"
  [ "$text" = "$last_progress_text" ] && return 0
  last_progress=$SECONDS last_progress_text=$text
  echo "cluster-collect: $text" >&2
}

read_snapshot() {  # read_snapshot PAYLOAD: decodes one framed snapshot into $out
  local name=${1%% *} data=${1#* } size
  case $name in */*|.*|"") echo "cluster-collect: odd snapshot name '$name' ignored" >&2; return ;; esac
  # Two processes claiming one rank (or one name): keep both, the triage names the duplicate.
  [ -e "$out/$name" ] && name=${name%.json}-dup$snapshots.json
  if printf '%s' "$data" | base64 -d 2>/dev/null | gzip -dc >"$out/$name" 2>/dev/null; then
    snapshots=$((snapshots + 1))
    # The job's size as its own communicators say: the total for the progress line.
    size=$(grep -o '"nranks": *[0-9]*' "$out/$name" | grep -o '[0-9]*$' | sort -n | tail -n 1)
    [ -n "$size" ] && [ "$size" -gt "$job_ranks" ] && job_ranks=$size
    progress 0
  else
    echo "cluster-collect: $name: damaged in transit" >&2
    rm -f "$out/$name"
    problems=$((problems + 1))
  fi
}

read_line() {  # read_line LINE: one line of the launcher's stdout
  local line=${1%$'\r'} rest node  # a terminal (kubectl exec -t) ends lines with CR LF
  case $line in
    *@@ncclscope-snapshot\ *) read_snapshot "${line#*@@ncclscope-snapshot }" ;;
    *@@ncclscope-node\ *)  # "@@ncclscope-node HOST found N"
      rest=${line#*@@ncclscope-node }
      node=$(line_node "$line" "${rest%% *}")
      node_seen[$node]=1
      case ${rest##* } in ''|*[!0-9]*) ;; *) found_total=$((found_total + ${rest##* })) ;; esac ;;
    *@@ncclscope-node-done\ *)
      rest=${line#*@@ncclscope-node-done }
      node=$(line_node "$line" "${rest%% *}")
      node_seen[$node]=1
      [ -n "${node_done[$node]:-}" ] || nodes_done=$((nodes_done + 1))
      node_done[$node]=1
      progress 1 ;;
    *@@ncclscope-error\ *)
      echo "cluster-collect: ${line#*@@ncclscope-error }" >&2
      problems=$((problems + 1)) ;;
  esac
}

# The nodes a pdsh launcher names with -w: "a,b", "gpu[01-03,07]" (one bracket per name).
pdsh_nodes() {  # pdsh_nodes LAUNCHER-WORD...
  local list="" word prefix suffix range from to width n
  while [ $# -gt 0 ]; do
    case $1 in -w) list=${2:-}; shift ;; -w?*) list=${1#-w} ;; esac
    shift
  done
  # Commas inside brackets are not separators: split outside them only.
  for word in $(printf '%s' "$list" | sed -E ':a; s/(\[[^]]*),/\1;/; ta; s/,/ /g'); do
    case $word in
      ^*|-*|/*) ;;  # a file of names, an exclusion, a regex: pdsh's business, not listed here
      *\[*\]*)
        prefix=${word%%\[*} suffix=${word#*\]} word=${word#*\[} word=${word%%\]*}
        for range in ${word//;/ }; do
          from=${range%-*} to=${range#*-} width=${#from}
          for n in $(seq "$((10#$from))" "$((10#$to))"); do printf '%s%0*d%s\n' "$prefix" "$width" "$n" "$suffix"; done
        done ;;
      *) [ -n "$word" ] && printf '%s\n' "$word" ;;
    esac
  done
}

# One line per node that did not finish its answer, also in $out/unanswered-nodes.txt.
report_unanswered() {  # report_unanswered LAUNCHER-RC STDERR-FILE
  local launcher_rc=$1 errors=$2 node why name named=0
  # pdsh names every node it could not reach: "pdsh@HERE: NODE: ssh exited with exit code N".
  while read -r name; do [ -n "$name" ] && node_seen[$name]=1; done < <(sed -n -E 's/^pdsh@[^:]*: ([^:]+): .*/\1/p' "$errors")
  for node in $(printf '%s\n' "${!node_seen[@]}" | sort); do
    [ -z "${node_done[$node]:-}" ] || continue
    why=$(launcher_reason "$node" "$errors")
    if [ -z "$why" ]; then
      why="no output from it"
      [ "$launcher_rc" = 124 ] || [ "$launcher_rc" = 137 ] && why="no complete answer within the node timeout ($node_timeout s)"
    fi
    echo "cluster-collect: node $node did not answer: $why" >&2
    printf '%s\t%s\n' "$node" "$why" >>"$out/unanswered-nodes.txt"
    problems=$((problems + 1)) named=1
  done
  # No node to blame (srun refused the step, say): the launcher's own first line.
  if [ "$nodes_done" = 0 ] && [ "$launcher_rc" != 0 ] && [ "$named" = 0 ]; then
    echo "cluster-collect: launcher exited $launcher_rc: $(grep -m1 . "$errors" || echo 'no message')" >&2
    problems=$((problems + 1))
  fi
}

gather_main() {
  local launcher="" out="" remote_script="" nsc=ncclscope local_nsc="" triage=1 node_timeout=60
  local -a triage_args=() expected_nodes=()
  while [ $# -gt 0 ]; do
    case $1 in
      --launcher) launcher=$2; shift 2 ;;
      --out) out=$2; shift 2 ;;
      --remote-script) remote_script=$2; shift 2 ;;
      --ncclscope) nsc=$2; shift 2 ;;
      --local-ncclscope) local_nsc=$2; shift 2 ;;
      --node-timeout) node_timeout=$2; shift 2 ;;
      --nodes) read -r -a expected_nodes <<<"${2//,/ }"; shift 2 ;;
      --no-triage) triage=0; shift ;;
      --) shift; triage_args=("$@"); break ;;
      -h|--help) usage ;;
      *) echo "cluster-collect: unknown option $1" >&2; usage ;;
    esac
  done
  [ -n "$launcher" ] && [ -n "$out" ] || usage
  case $node_timeout in ''|*[!0-9]*|0) echo "cluster-collect: --node-timeout wants whole seconds > 0" >&2; usage ;; esac
  local_nsc=${local_nsc:-$nsc}
  mkdir -p "$out" || exit 2
  local -a launch
  read -r -a launch <<<"$launcher"
  local node_script
  node_script="$(declare -f node_candidates node_main); node_main \"\$@\""
  local -a remote
  if [ -n "$remote_script" ]; then remote=(bash "$remote_script" node --ncclscope "$nsc" --timeout "$node_timeout")
  else remote=(bash -c "$node_script" cluster-collect-node --ncclscope "$nsc" --timeout "$node_timeout"); fi
  local line snapshots=0 problems=0 job_ranks=0 found_total=0 nodes_done=0 last_progress=-1 last_progress_text="" launcher_rc
  local -A node_seen=() node_done=()
  local errors=$out/launcher.log name
  # The nodes expected, so that one that never speaks is still named.
  [ "${launch[0]##*/}" = pdsh ] && while read -r name; do node_seen[$name]=1; done < <(pdsh_nodes "${launch[@]}")
  for name in "${expected_nodes[@]}"; do node_seen[$name]=1; done
  # Nodes run in parallel: the node timeout bounds the whole gather (and as long again, at most
  # 10 s, to connect).
  local slack=$((node_timeout < 10 ? node_timeout : 10))
  # stdin from /dev/null: under timeout the launcher is not the terminal's foreground job, and
  # srun forwards stdin.
  local launcher_fd
  exec {launcher_fd}< <(timeout -k 5 $((node_timeout + slack)) "${launch[@]}" "${remote[@]}" </dev/null 2>>"$errors")
  local launcher_pid=$!
  # Launchers prefix lines ("node3: ", "0: "): the frame marker is searched anywhere.
  while IFS= read -r line <&"$launcher_fd"; do read_line "$line"; done
  exec {launcher_fd}<&-
  wait "$launcher_pid"; launcher_rc=$?
  report_unanswered "$launcher_rc" "$errors"
  [ -s "$errors" ] || rm -f "$errors"
  progress 1
  echo "cluster-collect: $snapshots snapshot(s) in $out, $problems problem(s)" >&2
  local rc=0
  if [ "$triage" = 1 ]; then
    "$local_nsc" triage "$out" "${triage_args[@]}"
    rc=$?
  elif [ "$snapshots" = 0 ]; then
    rc=2
  fi
  # What the collector lost makes the whole answer partial, even when the triage of the rest is clean.
  [ "$rc" = 0 ] && [ "$problems" -gt 0 ] && rc=1
  return "$rc"
}

if [ "${1:-}" = node ]; then
  shift
  node_main "$@"
else
  gather_main "$@"
  exit $?
fi
