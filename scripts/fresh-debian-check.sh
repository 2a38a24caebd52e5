#!/bin/bash
# Proves README's two commands on a fresh Debian 12: a new `debootstrap --variant=minbase
# bookworm` chroot (no compiler, no CUDA), a clean clone of HEAD inside it, then
# `bash scripts/run-main.sh` and `bash scripts/run-tests.sh` as root. Needs root, debootstrap
# and Debian's mirror. Logs and "main rc ... / tests rc ..." go to $OUT_DIR (default /tmp/ncclscope-fresh-check).
#   scripts/fresh-debian-check.sh [CHROOT_DIR]   (default /srv/ncclscope-fresh; made when absent)
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/srv/ncclscope-fresh}
out=${OUT_DIR:-/tmp/ncclscope-fresh-check}
mkdir -p "$out"
[ "$(id -u)" = 0 ] || { echo "fresh-debian-check: needs root" >&2; exit 2; }
if [ ! -x "$root/bin/sh" ]; then
  command -v debootstrap >/dev/null || { echo "fresh-debian-check: apt-get install debootstrap" >&2; exit 2; }
  debootstrap --variant=minbase bookworm "$root" "${NCCLSCOPE_DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
    > "$out/debootstrap.log" 2>&1 || { echo "fresh-debian-check: debootstrap failed ($out/debootstrap.log)" >&2; exit 2; }
fi
commit=$(git -C "$repo" rev-parse HEAD)
rm -rf "$root/root/ncclscope"
git clone -q "$repo" "$root/root/ncclscope" && git -C "$root/root/ncclscope" checkout -q "$commit"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# As an installed Debian 12 has it (the installer writes it; debootstrap does not): munged
# resolves the host's own name.
[ -f "$root/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
  "$(hostname)" > "$root/etc/hosts"
# /sys recursively: slurmd (tests/cli/cluster_slurm_test.sh) needs the cgroup file systems.
mount --bind /proc "$root/proc" && mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys" &&
  mount --bind /dev "$root/dev" && mount --bind /dev/pts "$root/dev/pts" ||
  { echo "fresh-debian-check: cannot mount /proc, /sys, /dev into $root" >&2; exit 2; }
# A daemon a test left under `timeout` may still hold /dev for a moment: detach lazily then.
trap 'for m in dev/pts dev proc; do umount "$root/$m" 2>/dev/null || umount -l "$root/$m"; done; umount -R -l "$root/sys"' EXIT
in_chroot() { chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb bash -c "cd /root/ncclscope && $1"; }
start=$(date +%s)
in_chroot 'bash scripts/run-main.sh' > "$out/main.log" 2>&1
echo "main rc $? in $(( $(date +%s) - start )) s at $commit" | tee "$out/result.txt"
start=$(date +%s)
in_chroot 'bash scripts/run-tests.sh' > "$out/tests.log" 2>&1
echo "tests rc $? in $(( $(date +%s) - start )) s" | tee -a "$out/result.txt"
