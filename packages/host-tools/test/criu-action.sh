#!/usr/bin/env bash
# Real test of forkd-criu-action on a real cgroup freezer (v1 or v2), without
# CRIU: it plays CRIU's pre-dump and post-dump calls. Needs root.
# Usage: test/criu-action.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/forkd-criu-action
[ -x "$bin" ] || make -s -C "$here"
work=$(mktemp -d /tmp/forkd-criu-action-test.XXXXXX)
name=forkd-action-test-$$
fail=0
check() { if eval "$2"; then echo "  ok   $1"; else echo "  FAIL $1"; fail=1; fi; }
run() { CRTOOLS_SCRIPT_ACTION=$1 CRTOOLS_IMAGE_DIR=$work "$bin"; }
hook() { printf '%s\n' "$control" "$value" "$check" "$pattern" "$@" > "$work/forkd-hook"; }
ticks() { awk '{print $14 + $15 + $16 + $17}' /proc/$1/stat; }
cg=; victim=
cleanup() {
  if [ -n "$cg" ]; then echo $thaw > "$control" 2>/dev/null || true; kill $victim 2>/dev/null || true; wait $victim 2>/dev/null || true; rmdir "$cg" 2>/dev/null || true; fi
  cg=
}
trap 'cleanup; rm -rf "$work"' EXIT

# Every freezer this host has: v1's, and v2's (the unified root, or a hybrid host's unified mount, whose
# cgroups have cgroup.freeze though no controller is enabled there).
freezers=()
[ -d /sys/fs/cgroup/freezer ] && freezers+=(v1)
for root in /sys/fs/cgroup /sys/fs/cgroup/unified; do
  if [ -f $root/cgroup.controllers ]; then freezers+=("v2:$root"); break; fi
done

freezer_suite() {
case $1 in
  v1) cg=/sys/fs/cgroup/freezer/$name; control=$cg/freezer.state; value=FROZEN; thaw=THAWED; check=$cg/freezer.state; pattern='^FROZEN' ;;
  v2:*) cg=${1#v2:}/$name; control=$cg/cgroup.freeze; value=1; thaw=0; check=$cg/cgroup.events; pattern='^frozen 1' ;;
esac
echo "=== freezer $1"
rm -rf "${work:?}"/*
mkdir "$cg"
sleep 1000 & victim=$!
echo $victim > "$cg/cgroup.procs"

echo "== no hook file: nothing to do"
check "exit 0" 'run pre-dump'

echo "== pre-dump freezes and records the instant; post-dump waits for a slow snapshot (4 s: the old shell loop gave up after ~3 s)"
hook sh -c "sleep 4; touch $work/snapped"
t0=$(date +%s%N)
check "pre-dump exit 0" 'run pre-dump'
check "frozen" "grep -Eq '$pattern' $check"
check "frozen-at is an instant in ns" "[ \$(cat $work/forkd-hook.frozen-at) -ge $t0 ]"
check "snapshot runs in the background" "[ ! -e $work/snapped ]"
t1=$(date +%s%N)
check "post-dump exit 0" 'run post-dump'
t2=$(date +%s%N)
check "post-dump returned after the snapshot" "[ -e $work/snapped ]"
check "post-dump slept: $(( (t2 - t1) / 1000000 )) ms wall" "[ \$(( (t2 - t1) / 1000000 )) -ge 3500 ]"
check "FIFO removed" "[ ! -e $work/forkd-hook.snap-fifo ]"
echo $thaw > "$control"

echo "== a failed snapshot fails post-dump"
hook false
run pre-dump
check "post-dump exit 1" '! run post-dump 2>/dev/null'
echo $thaw > "$control"

echo "== the snapshot finished before post-dump (writer waits for the reader)"
hook true
run pre-dump
sleep 0.3
check "post-dump exit 0" 'run post-dump'
echo $thaw > "$control"

echo "== post-dump waiting costs no CPU"
hook sleep 2
run pre-dump
CRTOOLS_SCRIPT_ACTION=post-dump CRTOOLS_IMAGE_DIR=$work "$bin" & waiter=$!
sleep 1
used=$(ticks $waiter)
check "post-dump used $used ticks in 1 s" "[ $used -le 1 ]"
wait $waiter
echo $thaw > "$control"

frozen() { grep -Eq "$pattern" "$check"; }
# Plays CRIU around post-dump: frozen by pre-dump, thawed once "seized", post-dump and network-unlock run
# by a parent that lives on for $1 s after them (the watcher's CRIU); returns once they have.
play_dump() {
  rm -f "$work"/forkd-hook* "$work/pd-done"
  hook
  run pre-dump
  [ "$2" = token ] && install -m 0600 /dev/null "$work/forkd-hook.thaw-token"
  echo $thaw > "$control"
  ( run post-dump; run network-unlock; touch "$work/pd-done"; sleep "$1" ) & player=$!
  for _ in $(seq 100); do [ -e "$work/pd-done" ] && break; sleep 0.02; done
}
wait_for() { for _ in $(seq 100); do [ -e "$1" ] && return 0; sleep 0.01; done; return 1; }

echo "== early thaw: the watcher thaws as soon as CRIU has frozen the cgroup again, and says when"
play_dump 2 token
t0=$(date +%s%N)
echo $value > "$control"
check "report written" "wait_for $work/forkd-hook.thawed-at"
check "thawed" '! frozen'
check "the instant is after the refreeze" "[ \$(cat $work/forkd-hook.thawed-at) -ge $t0 ]"
check "the token claimed" "[ -e $work/forkd-hook.thaw-claimed ] && [ ! -e $work/forkd-hook.thaw-token ]"
wait $player

echo "== early thaw: CRIU names the images dir /proc/CRIU/fd/N, starts the action with fds 0-2 closed, exits right after its refreeze: the report still comes"
rm -f "$work"/forkd-hook* "$work/pd-done"
hook
run pre-dump
install -m 0600 /dev/null "$work/forkd-hook.thaw-token"
echo $thaw > "$control"
( exec 7<"$work"; export CRTOOLS_IMAGE_DIR=/proc/$BASHPID/fd/7
  CRTOOLS_SCRIPT_ACTION=post-dump "$bin"; CRTOOLS_SCRIPT_ACTION=network-unlock "$bin" <&- >&- 2>&-; sleep 0.1; echo $value > "$control" ) & player=$!
wait $player
check "report written" "wait_for $work/forkd-hook.thawed-at"
check "thawed" '! frozen'

echo "== early thaw: forkd claimed the token first: the watcher leaves the freeze alone"
play_dump 2 token
mv "$work/forkd-hook.thaw-token" "$work/forkd-hook.thaw-forkd"
echo $value > "$control"
sleep 0.3
check "still frozen" 'frozen'
check "no report" "[ ! -e $work/forkd-hook.thawed-at ]"
echo $thaw > "$control"; wait $player

echo "== early thaw: CRIU gone before any refreeze: the watcher gives up, a later freeze stays"
play_dump 0 token
wait $player; sleep 0.2
echo $value > "$control"
sleep 0.3
check "still frozen" 'frozen'
check "token left for forkd" "[ -e $work/forkd-hook.thaw-token ]"
echo $thaw > "$control"

echo "== early thaw: no token (a dump that keeps the tree frozen): no watcher"
play_dump 2 none
echo $value > "$control"
sleep 0.3
check "still frozen" 'frozen'
echo $thaw > "$control"; wait $player
rm -f "$work"/forkd-hook* "$work/pd-done"

echo "== a hook file anyone but root could have written is refused, and nothing is frozen"
hook; chmod 0666 "$work/forkd-hook"
check "other-writable: exit 1" '! run pre-dump 2>/dev/null'
check "not frozen" '! frozen'
hook; chmod 0620 "$work/forkd-hook"
check "group-writable: exit 1" '! run pre-dump 2>/dev/null'
hook; chmod 0600 "$work/forkd-hook"; chown 65534 "$work/forkd-hook"
check "owned by another user: exit 1" '! run pre-dump 2>/dev/null'
check "not frozen" '! frozen'
rm -f "$work/forkd-hook"; hook; mv "$work/forkd-hook" "$work/real-hook"; ln -s "$work/real-hook" "$work/forkd-hook"
check "a symlink: exit 1" '! run pre-dump 2>/dev/null'
rm -f "$work/forkd-hook" "$work/real-hook"; mkfifo -m 0600 "$work/forkd-hook"
check "a FIFO: exit 1 at once" '! timeout 5 env CRTOOLS_SCRIPT_ACTION=pre-dump CRTOOLS_IMAGE_DIR=$work "$bin" 2>/dev/null'
rm -f "$work/forkd-hook"; hook; chmod 0777 "$work"
check "images dir writable by others: exit 1" '! run pre-dump 2>/dev/null'
check "not frozen" '! frozen'
chmod 0700 "$work"; rm -f "$work"/forkd-hook*

cleanup
}

for f in "${freezers[@]}"; do freezer_suite "$f"; done

echo "== setup-namespaces (runc's createRuntime hook at a restore): lo of the restored init's namespace comes up"
unshare -n sleep 30 & holder=$!
sleep 0.2
netpid=$(pgrep -P $holder -x sleep || echo $holder)
lo_up() { nsenter -t $netpid -n ip -o link show lo | grep -q '[<,]UP[,>]'; }
check "lo starts down" '! lo_up'
check "pid from the OCI state on stdin: exit 0" "echo '{\"ociVersion\":\"1.2.1\",\"id\":\"sbx-1\",\"status\":\"creating\",\"pid\":$netpid,\"bundle\":\"/b\"}' | CRTOOLS_SCRIPT_ACTION=setup-namespaces \"\$bin\""
check "lo is up" 'lo_up'
check "no pid anywhere: nothing to do, exit 0" "echo '{}' | CRTOOLS_SCRIPT_ACTION=setup-namespaces \"\$bin\""
kill $holder 2>/dev/null; wait $holder 2>/dev/null || true

exit $fail
