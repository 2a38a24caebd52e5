#!/usr/bin/env bash
# Collects one `ncclscope.state/1` snapshot per NCCL process on every node of a
# hung job through the cluster's own launcher, then triages them in one place.
#
#   cluster-collect.sh --launcher "CMD ..." --out DIR [options] [-- TRIAGE-ARGS...]
#       runs `CMD ... bash -c NODE-SCRIPT` (or `CMD ... bash PATH node` with
#       --remote-script PATH), gathers the snapshots into DIR as rank-R.json and
#       runs `ncclscope triage DIR TRIAGE-ARGS...`.
#   cluster-collect.sh node [--ncclscope PATH]
#       the per-node part: finds processes with libnccl mapped (/proc/*/maps),
#       runs `ncclscope state --pid P --freeze --stacks --json` for each and prints one framed line
#       per snapshot on stdout (gzip+base64), so any launcher that forwards
#       stdout (srun, pdsh, kubectl exec, ssh) can carry them.
#
# Options:
#   --launcher "CMD"      e.g. "srun --overlap --jobid 1234 --ntasks-per-node=1",
#                         "pdsh -w node[01-16]", "kubectl exec -i pod-3 --"
#   --remote-script PATH  the path of this script on the nodes (pdsh/ssh re-parse
#                         their command line, so pass a path rather than a script)
#   --ncclscope PATH      ncclscope on the nodes (default: ncclscope in PATH)
#   --local-ncclscope P   ncclscope here, for the triage (default: same as --ncclscope)
#   --no-triage           only gather
# NCCLSCOPE_PIDS="P1 P2" on a node restricts the search to those processes.
# Snapshots are named rank-R.json from the process's RANK, OMPI_COMM_WORLD_RANK,
# PMI_RANK, PMIX_RANK or SLURM_PROCID environment variable, else HOST-pidP.json.
# Exit status: that of `ncclscope triage` (0 ok, 1 partial, 2 nothing usable), 64 usage.
set -u

node_main() {
  local nsc=ncclscope
  while [ $# -gt 0 ]; do
    case $1 in
      --ncclscope) nsc=$2; shift 2 ;;
      *) echo "@@ncclscope-error $(hostname) unknown node option $1"; return 64 ;;
    esac
  done
  local host found=0 maps pid exe rank name json rc
  host=$(hostname)
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
    found=$((found + 1))
    rank=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
      sed -n -E 's/^(RANK|OMPI_COMM_WORLD_RANK|PMI_RANK|PMIX_RANK|SLURM_PROCID)=([0-9]+)$/\1 \2/p' |
      awk '{v[$1]=$2} END {split("RANK OMPI_COMM_WORLD_RANK PMI_RANK PMIX_RANK SLURM_PROCID", o, " "); for (i = 1; i <= 5; i++) if (o[i] in v) {print v[o[i]]; exit}}')
    if [ -n "$rank" ]; then name=rank-$rank; else name=$host-pid$pid; fi
    json=$("$nsc" state --pid "$pid" --freeze --stacks --json 2>/dev/null)  # host stacks for triage
    rc=$?
    # 1 = partial: some fields unreadable, the snapshot still says so itself.
    if [ "$rc" -le 1 ] && [ -n "$json" ]; then
      printf '@@ncclscope-snapshot %s %s\n' "$name.json" "$(printf '%s\n' "$json" | gzip -c | base64 -w0)"
    else
      printf '@@ncclscope-error %s pid %s: ncclscope state exited %s\n' "$host" "$pid" "$rc"
    fi
  done
  [ "$found" -gt 0 ] || printf '@@ncclscope-error %s no process with libnccl mapped\n' "$host"
  return 0
}

usage() {
  sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//' >&2
  exit 64
}

gather_main() {
  local launcher="" out="" remote_script="" nsc=ncclscope local_nsc="" triage=1
  local -a triage_args=()
  while [ $# -gt 0 ]; do
    case $1 in
      --launcher) launcher=$2; shift 2 ;;
      --out) out=$2; shift 2 ;;
      --remote-script) remote_script=$2; shift 2 ;;
      --ncclscope) nsc=$2; shift 2 ;;
      --local-ncclscope) local_nsc=$2; shift 2 ;;
      --no-triage) triage=0; shift ;;
      --) shift; triage_args=("$@"); break ;;
      -h|--help) usage ;;
      *) echo "cluster-collect: unknown option $1" >&2; usage ;;
    esac
  done
  [ -n "$launcher" ] && [ -n "$out" ] || usage
  local_nsc=${local_nsc:-$nsc}
  mkdir -p "$out" || exit 2
  local -a launch
  read -r -a launch <<<"$launcher"
  local node_script
  node_script="$(declare -f node_main); node_main \"\$@\""
  local -a remote
  if [ -n "$remote_script" ]; then remote=(bash "$remote_script" node --ncclscope "$nsc")
  else remote=(bash -c "$node_script" cluster-collect-node --ncclscope "$nsc"); fi
  local line payload name data snapshots=0 problems=0
  # Launchers prefix lines ("node3: ", "0: "): the frame marker is searched anywhere.
  while IFS= read -r line; do
    case $line in
      *@@ncclscope-snapshot\ *)
        payload=${line#*@@ncclscope-snapshot }
        name=${payload%% *}
        data=${payload#* }
        case $name in */*|.*|"") echo "cluster-collect: odd snapshot name '$name' ignored" >&2; continue ;; esac
        # Two processes claiming one rank (or one name): keep both, the triage names the duplicate.
        [ -e "$out/$name" ] && name=${name%.json}-dup$snapshots.json
        if printf '%s' "$data" | base64 -d 2>/dev/null | gzip -dc >"$out/$name" 2>/dev/null; then
          snapshots=$((snapshots + 1))
        else
          echo "cluster-collect: $name: damaged in transit" >&2
          rm -f "$out/$name"
          problems=$((problems + 1))
        fi ;;
      *@@ncclscope-error\ *)
        echo "cluster-collect: ${line#*@@ncclscope-error }" >&2
        problems=$((problems + 1)) ;;
    esac
  done < <("${launch[@]}" "${remote[@]}")
  echo "cluster-collect: $snapshots snapshot(s) in $out, $problems problem(s)" >&2
  [ "$triage" = 1 ] || return 0
  "$local_nsc" triage "$out" "${triage_args[@]}"
}

if [ "${1:-}" = node ]; then
  shift
  node_main "$@"
else
  gather_main "$@"
fi
