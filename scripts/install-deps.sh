#!/usr/bin/env bash
# Installs, with apt-get, the Debian packages ncclscope needs that are missing.
# Usage: scripts/install-deps.sh [build|test]   (test adds gdb, python3, graphviz, clang,
#                                               slurm, munge, pdsh, ssh)
set -euo pipefail
profile=${1:-build}
packages=(g++ cmake ninja-build pkg-config libdw-dev libelf-dev libboost-test-dev
          nlohmann-json3-dev xz-utils ca-certificates)
if [ "$profile" = test ]; then
  packages+=(gdb gdbserver python3 graphviz elfutils file procps util-linux libc6-dbg
             clang libclang-rt-14-dev  # clang + libFuzzer: the fuzz targets' short runs
             python3.11 python3.11-dbg austin  # Python stack tests (DWARF of 3.11), the Python bench
             slurmctld slurmd slurm-client munge  # cluster_slurm_test: real srun on localhost
             pdsh openssh-server openssh-client  # cluster_pdsh_test: real pdsh -R ssh to localhost
             chromium)  # triage_html_chromium_test: the --html page drawn by a real headless browser
fi
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-deps: missing packages: ${missing[*]} (run as root, or install them)" >&2
  exit 2
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
