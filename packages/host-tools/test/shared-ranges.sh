#!/usr/bin/env bash
# Real-filesystem test of forkd-shared-ranges on a Btrfs filesystem in a loop file.
# Needs root, btrfs-progs and python3. Usage: test/shared-ranges.sh [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/forkd-shared-ranges
work=${1:-/tmp/forkd-shared-ranges-test}
[ -x "$bin" ] || make -s -C "$here"
. "$here/test/loop-btrfs.sh"
KiB=1024
# FICLONERANGE: LEN bytes of SRC at SOFF shared into DST at DOFF (what forkd-dedupe does to pages that moved).
clone_range() {
  python3 - "$@" <<'PY'
import fcntl, struct, sys
src, soff, dst, doff, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
FICLONERANGE = 0x4020940d
with open(src, 'rb') as s, open(dst, 'r+b') as d:
    fcntl.ioctl(d.fileno(), FICLONERANGE, struct.pack('qQQQ', s.fileno(), soff, n, doff))
PY
}

echo "== 1. a reflink copy is shared whole; a rewritten page splits it"
head -c $((8*MiB)) /dev/urandom > a
cp --reflink=always a b
check "whole file ($("$bin" a b | tr '\n' ' '))" "[ \"\$(\"$bin\" a b)\" = \"0 $((8*MiB))\" ]"
dd if=/dev/urandom of=b bs=4096 count=1 seek=100 conv=notrunc status=none
want="0 $((100*4*KiB))
$((101*4*KiB)) $((8*MiB - 101*4*KiB))"
check "all but the page ($("$bin" a b | tr '\n' ' '))" "[ \"\$(\"$bin\" a b)\" = \"\$want\" ]"

echo "== 2. a copy that shares nothing, and a file with itself"
cp --reflink=never a c
check "nothing shared with a byte copy" "[ -z \"\$(\"$bin\" a c)\" ]"
check "a file with itself" "[ \"\$(\"$bin\" a a)\" = \"0 $((8*MiB))\" ]"

echo "== 3. shared data at another offset is not the same bytes here"
head -c $((1*MiB)) /dev/urandom > d
head -c $((1*MiB)) /dev/urandom > e
clone_range d 0 e $((256*KiB)) $((256*KiB))
out=$("$bin" d e)
check "only equal bytes at equal offsets (got: ${out:-nothing})" "[ -z \"\$out\" ]"
cmp -s <(tail -c +$((256*KiB+1)) e | head -c $((256*KiB))) <(head -c $((256*KiB)) d) && echo "  (the clone is there)"

echo "== 4. compressed extents: shared when reflinked, not when entered at another offset"
mount -o remount,compress-force=zstd "$mnt"
{ yes 'forkd compressible line' || true; } | head -c $((4*MiB)) > f
sync
cp --reflink=always f g
check "compressed, reflinked: shared whole" "[ \"\$(\"$bin\" f g)\" = \"0 $((4*MiB))\" ]"
{ yes 'another compressible text' || true; } | head -c $((4*MiB)) > h
sync
clone_range f $((64*KiB)) h 0 $((64*KiB))
check "compressed extent entered at another offset: not shared ($("$bin" f h | tr '\n' ' '))" "[ -z \"\$(\"$bin\" f h)\" ]"

echo "== 5. refusals"
mkdir dir
check "a directory is refused (exit 1)" "! \"$bin\" a dir 2>/dev/null"
check "a missing file is refused (exit 1)" "! \"$bin\" a missing 2>/dev/null"
check "usage (exit 2)" "\"$bin\" a >/dev/null 2>&1; [ \$? -eq 2 ]"

[ "$fail" = 0 ] && echo "ALL OK"
exit "$fail"
