#!/usr/bin/env bash
# Real-filesystem test of forkd-dedupe on a Btrfs filesystem in a loop file.
# Needs root and btrfs-progs. Usage: test/btrfs.sh [WORKDIR]  (default /tmp/forkd-dedupe-test)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/forkd-dedupe
work=${1:-/tmp/forkd-dedupe-test}
[ -x "$bin" ] || make -s -C "$here"
. "$here/test/loop-btrfs.sh"
settle() { sync; btrfs filesystem sync "$mnt" >/dev/null; }
data_used() { settle; btrfs filesystem usage -b "$mnt" 2>/dev/null | sed -n 's/^Data,[^:]*: Size:[0-9]*, Used:\([0-9]*\).*/\1/p'; }
excl() { settle; btrfs filesystem du -s --raw "$1" | awk 'NR==2{print $2}'; }
json() { sed -n "s/.*\"$2\": \([0-9]*\).*/\1/p" <<<"$1"; }
fresh() { rm -rf prev new; mkdir prev new; }

echo "== 1. 200 MiB, copy + 5 x 1 MiB overwritten"
fresh
head -c $((200*MiB)) /dev/urandom > prev/pages-1.img
cp --reflink=never prev/pages-1.img new/pages-1.img
for off in 10 50 90 130 170; do
  dd if=/dev/urandom of=new/pages-1.img bs=1M count=1 seek=$off conv=notrunc status=none
done
cp new/pages-1.img "$work/ref-new"; cp prev/pages-1.img "$work/ref-prev"
u0=$(data_used); e0=$(excl new)
t0=$(date +%s%N); out=$("$bin" prev new); t1=$(date +%s%N)
u1=$(data_used); e1=$(excl new)
echo "  $out  (wall $(( (t1-t0)/1000000 )) ms)"
echo "  new exclusive: $e0 -> $e1 bytes; fs data used: $u0 -> $u1 bytes"
check "bytesShared = 195 MiB" "[ $(json "$out" bytesShared) -eq $((195*MiB)) ]"
check "fs data used dropped by >= 190 MiB" "[ $((u0-u1)) -ge $((190*MiB)) ]"
check "contents unchanged" "cmp -s new/pages-1.img $work/ref-new && cmp -s prev/pages-1.img $work/ref-prev"
out=$("$bin" prev new)
check "second run is harmless ($out)" "cmp -s new/pages-1.img $work/ref-new && [ $(data_used) -le $((u1 + MiB)) ]"

echo "== 2. same without --repack (shows the pinned-extent problem)"
fresh
cp --reflink=never "$work/ref-prev" prev/pages-1.img
cp --reflink=never "$work/ref-new" new/pages-1.img
u0=$(data_used)
out=$("$bin" --no-repack prev new)
u1=$(data_used); e1=$(excl new)
echo "  $out"
echo "  new exclusive -> $e1; fs data used: $u0 -> $u1 (freed $(( (u0-u1)/MiB )) MiB)"
check "du says 5 MiB exclusive" "[ $e1 -eq $((5*MiB)) ]"
check "but nothing is freed (extents pinned)" "[ $((u0-u1)) -lt $MiB ]"

echo "== 3. written fresh (like CRIU), 1000 scattered 4 KiB pages differ"
fresh
cp --reflink=never "$work/ref-prev" prev/pages-1.img
python3 - "$work/ref-prev" new/pages-1.img <<'PY'
import os, random, sys
d = bytearray(open(sys.argv[1], 'rb').read())
random.seed(1)
for p in random.sample(range(len(d) // 4096), 1000):
    d[p*4096:(p+1)*4096] = os.urandom(4096)
open(sys.argv[2], 'wb').write(d)
PY
cp new/pages-1.img "$work/ref-new"
u0=$(data_used)
out=$("$bin" -v prev new 2>"$work/err")
u1=$(data_used); e1=$(excl new)
echo "  $out"; sed 's/^/  /' "$work/err"
echo "  new exclusive -> $e1; fs data used: $u0 -> $u1 (freed $(( (u0-u1)/MiB )) MiB)"
check "shared = 200 MiB - 1000 pages" "[ $(json "$out" bytesShared) -eq $((200*MiB - 1000*4096)) ]"
check "fs data used dropped by >= 190 MiB" "[ $((u0-u1)) -ge $((190*MiB)) ]"
check "contents unchanged" "cmp -s new/pages-1.img $work/ref-new && cmp -s prev/pages-1.img $work/ref-prev"

echo "== 4. pages moved: 64 KiB inserted at 50 MiB (layout shift), plus 2 changed pages"
fresh
cp --reflink=never "$work/ref-prev" prev/pages-1.img
{ head -c $((50*MiB)) "$work/ref-prev"; head -c 65536 /dev/urandom; tail -c +$((50*MiB+1)) "$work/ref-prev"; } > new/pages-1.img
dd if=/dev/urandom of=new/pages-1.img bs=4096 count=1 seek=100 conv=notrunc status=none
dd if=/dev/urandom of=new/pages-1.img bs=4096 count=1 seek=40000 conv=notrunc status=none
cp new/pages-1.img "$work/ref-new"
out=$("$bin" --no-moved prev new)
echo "  --no-moved: $out"
check "same-offset only shares ~50 MiB" "[ $(json "$out" bytesShared) -eq $((50*MiB - 4096)) ]"
out=$("$bin" prev new)
echo "  default:    $out"
check "moved matching shares all but 2 pages" "[ $(json "$out" bytesShared) -eq $((200*MiB - 2*4096)) ]"
check "contents unchanged" "cmp -s new/pages-1.img $work/ref-new && cmp -s prev/pages-1.img $work/ref-prev"

echo "== 5. timing, 200 MiB (page cache warm)"
fresh
cp --reflink=never "$work/ref-prev" prev/pages-1.img
cp --reflink=never "$work/ref-prev" new/pages-1.img
settle; out=$("$bin" prev new); echo "  identical:             $out"
fresh
cp --reflink=never "$work/ref-prev" prev/pages-1.img
head -c $((200*MiB)) /dev/urandom > new/pages-1.img
settle; out=$("$bin" prev new); echo "  all different:         $out"
check "nothing shared" "[ $(json "$out" bytesShared) -eq 0 ]"
settle; out=$("$bin" --no-moved prev new); echo "  all different, no-moved: $out"

echo "== 6. edge cases"
fresh
head -c $((8*MiB)) /dev/urandom > prev/pages-2.img          # NEW is longer
{ head -c $((8*MiB)) prev/pages-2.img; head -c $((4*MiB)) /dev/urandom; } > new/pages-2.img  # (cat would reflink)
head -c $((8*MiB)) /dev/urandom > prev/pages-3.img          # NEW is shorter
head -c $((3*MiB)) prev/pages-3.img > new/pages-3.img
head -c $((4*MiB)) /dev/urandom > new/pages-4.img           # missing in PREV
: > prev/pages-5.img; : > new/pages-5.img                  # empty
head -c $((4*MiB)) /dev/urandom > prev/pages-6.img          # entirely different
head -c $((4*MiB)) /dev/urandom > new/pages-6.img
head -c $((4*MiB+100)) /dev/urandom > prev/pages-7.img      # odd size, equal
cp prev/pages-7.img new/pages-7.img
head -c $((4*MiB)) /dev/urandom > prev/core-1.img           # not pages-*.img
cp prev/core-1.img new/core-1.img
mkdir new/pages-8.img; ln -s ../prev/pages-2.img new/pages-9.img  # dir, symlink
mkdir -p "$work/ref"; cp new/*.img "$work/ref/" 2>/dev/null || true
out=$("$bin" -v prev new 2>"$work/err"); rc=$?
echo "  $out rc=$rc"; sed 's/^/  /' "$work/err"
check "5 files (2,3,5,6,7; not 4/8/9/core)" "[ $(json "$out" files) -eq 5 ]"
check "shared = 8 + 3 + 4 MiB (+ odd tail)" "[ $(json "$out" bytesShared) -ge $((15*MiB)) ]"
for f in new/pages-*.img; do [ -f "$f" ] && [ ! -L "$f" ] || continue
  check "$f unchanged" "cmp -s $f $work/ref/$(basename $f)"; done
out=$("$bin" --all prev new)
echo "  --all: $out"
check "--all includes core-1.img" "[ $(json "$out" files) -eq 6 ]"
set +e
"$bin" prev >/dev/null 2>&1; check "usage error -> 2" "[ $? -eq 2 ]"
"$bin" --bogus prev new >/dev/null 2>&1; check "unknown option -> 2" "[ $? -eq 2 ]"
"$bin" prev /nonexistent >/dev/null 2>&1; check "missing dir -> 1" "[ $? -eq 1 ]"
mkdir -p /tmp/forkd-dedupe-ext4 && cp prev/pages-2.img /tmp/forkd-dedupe-ext4/
"$bin" prev /tmp/forkd-dedupe-ext4 >/dev/null 2>"$work/err"; rc=$?
check "cross-filesystem -> 1 ($(cat "$work/err"))" "[ $rc -eq 1 ]"
rm -rf /tmp/forkd-dedupe-ext4
set -e

[ $fail -eq 0 ] && echo "ALL OK" || { echo "FAILURES"; exit 1; }
