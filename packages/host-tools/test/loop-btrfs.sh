# Sourced by the host tools' filesystem tests: a 2 GiB Btrfs in a loop file
# under $work, mounted on $mnt (removed on exit), the cwd there, and the
# check helper that counts failures in $fail.
mnt=$work/mnt
mkdir -p "$mnt"
truncate -s 2G "$work/img"
mkfs.btrfs -q -f "$work/img" >/dev/null
mount -o loop "$work/img" "$mnt"
cleanup() { cd /; umount "$mnt" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
cd "$mnt"

MiB=1048576
fail=0
check() { if eval "$2"; then echo "  ok   $1"; else echo "  FAIL $1"; fail=1; fi; }
