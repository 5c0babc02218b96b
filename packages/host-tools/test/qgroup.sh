#!/usr/bin/env bash
# Real-filesystem test of forkd-qgroup's simple quotas (lineage groups) on a Btrfs loop file.
# Needs root, btrfs-progs and Linux >= 6.7 (skipped, exit 0, without simple quotas). Usage: test/qgroup.sh [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/forkd-qgroup
work=${1:-/tmp/forkd-qgroup-test}
[ -x "$bin" ] || make -s -C "$here"
[ -e /sys/fs/btrfs/features/simple_quota ] || { echo "SKIP: no simple quotas in this kernel"; exit 0; }
. "$here/test/loop-btrfs.sh"
fill() { dd if=/dev/urandom of="$1" bs=1M count="$2" conv=fsync status=none 2>/dev/null; }
used() { btrfs filesystem sync "$mnt" >/dev/null; "$bin" show "$mnt" "$1" | cut -d' ' -f2; }

btrfs subvolume create tmpl >/dev/null
fill tmpl/base 20
check "enable-simple" "'$bin' enable-simple '$mnt'"
fsid=$(btrfs filesystem show "$mnt" | sed -n 's/.*uuid: //p')
check "mode is squota" "[ \"\$(cat /sys/fs/btrfs/$fsid/qgroups/mode)\" = squota ]"
btrfs subvolume snapshot tmpl r1 >/dev/null
out=$("$bin" start-lineage "$mnt" r1 - $((16*MiB)) $((4*MiB)))
g=${out%% *}
check "a new root gets a new group ($out)" "[[ '$g' =~ ^1/[0-9]+$ ]]"
check "group reports it" "[ \"\$('$bin' group '$mnt' r1)\" = '$g' ]"
check "the template's bytes are not charged to the root" "[ $(used r1) -lt $MiB ]"
fill r1/a 10
check "writes are charged (10 MiB)" "[ $(used r1) -ge $((10*MiB)) ]"
btrfs subvolume snapshot -r r1 s1 >/dev/null
btrfs subvolume delete r1 >/dev/null
btrfs subvolume snapshot s1 r2 >/dev/null
out=$("$bin" start-lineage "$mnt" r2 "$g" $((16*MiB)) 0)
check "a root replacing it joins the same group, which keeps the 10 MiB ($out)" "[ '${out%% *}' = '$g' ] && [ ${out#* } -ge $((10*MiB)) ]"
set +e
fill r2/b 10; rc=$?
set -e
check "the group's limit holds across roots: EDQUOT (rc=$rc)" "[ $rc -ne 0 ]"
check "show reports the group with its limit" "[ \"\$('$bin' show '$mnt' r2 | cut -d' ' -f4)\" = $((16*MiB)) ]"
check "limit-id by group" "'$bin' limit-id '$mnt' '$g' none"
set +e
"$bin" group "$mnt" /proc >/dev/null 2>&1; rc=$?
set -e
check "not on the pool: exit 3 (rc=$rc)" "[ $rc -eq 3 ]"
btrfs subvolume delete r2 s1 >/dev/null
btrfs subvolume sync "$mnt" >/dev/null
check "sweep removes the emptied group" "[ \"\$('$bin' sweep '$mnt')\" = 1 ]"
check "and only it" "[ \"\$('$bin' sweep '$mnt')\" = 0 ]"

[ $fail -eq 0 ] && echo "ALL OK" || { echo "FAILURES"; exit 1; }
