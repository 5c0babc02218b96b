#!/usr/bin/env bash
# The criu wrapper's relay (src/criu-version/relay.c) between a runc and a CRIU that python3 plays
# (test/criu-relay-play.py), on a real cgroup freezer: forkd's dump steps done in process at CRIU's
# notifications, every message passed on, the thaw at CRIU's answer; what it must not carry goes to
# CRIU as before, with the action script's config. Needs root.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$here/build/forkd-criu-version" ] || make -s -C "$here"
work=$(mktemp -d /tmp/forkd-criu-relay-test.XXXXXX)
images=$work/images; wdir=$work/work; mkdir -m 0700 "$images" "$wdir" "$work/bin"
name=forkd-relay-test-$$
fails=0
check() { if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: got '$2', want '$3'"; fails=$((fails + 1)); fi; }
cp "$here/build/forkd-criu-version" "$work/bin/criu"
printf '%s\n' "$work/no-reply" "$work" /none/uffd.so /usr/bin/python3 "$here/test/criu-relay-play.py" criu > "$work/bin/criu.launch"
cg=; victim=
cleanup() { if [ -n "$cg" ]; then echo "$FAKE_THAW" > "$FAKE_CONTROL" 2>/dev/null; kill $victim 2>/dev/null; wait $victim 2>/dev/null; rmdir "$cg" 2>/dev/null; fi; cg=; }
trap 'cleanup; rm -rf "$work"' EXIT

if [ -d /sys/fs/cgroup/freezer ]; then
  cg=/sys/fs/cgroup/freezer/$name; export FAKE_CONTROL=$cg/freezer.state FAKE_FREEZE=FROZEN FAKE_THAW=THAWED FAKE_CHECK=$cg/freezer.state FAKE_PATTERN='^FROZEN'
else
  root=/sys/fs/cgroup; [ -f $root/cgroup.controllers ] || root=/sys/fs/cgroup/unified
  cg=$root/$name; export FAKE_CONTROL=$cg/cgroup.freeze FAKE_FREEZE=1 FAKE_THAW=0 FAKE_CHECK=$cg/cgroup.events FAKE_PATTERN='^frozen 1'
fi
mkdir "$cg"; sleep 1000 & victim=$!; echo $victim > "$cg/cgroup.procs"
export FAKE_OUT=$work/criu-saw.json FORKD_CRIU_DUMP_CONFIG=$work/dump.conf
frozen() { grep -Eq "$FAKE_PATTERN" "$FAKE_CHECK" && echo frozen || echo thawed; }
# play SCENARIO: runc's view in $work/runc-saw.json, CRIU's in $FAKE_OUT; q FILE EXPR reads one value.
play() { rm -f "$FAKE_OUT"; FAKE_SCENARIO=$1 timeout 30 python3 "$here/test/criu-relay-play.py" runc "$work/bin/criu" "$images" "$wdir" "$1" > "$work/runc-saw.json"; }
q() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1" "$2" 2>/dev/null || echo '?'; }
hook() { rm -f "$images"/forkd-hook*; printf '%s\n' "$FAKE_CONTROL" "$FAKE_FREEZE" "$FAKE_CHECK" "$FAKE_PATTERN" > "$images/forkd-hook"; }
R=$work/runc-saw.json

echo "== a dump that leaves the tree running: forkd's steps in process, runc hears every step, thawed at CRIU's answer"
hook; install -m 0600 /dev/null "$images/forkd-hook.thaw-token"
play dump
check "CRIU's exit status passed on" "$(q $R "d['rc']")" 0
check "runc heard every step, in order" "$(q $R "','.join(d['notified'])")" "pre-dump,network-lock,post-dump,network-unlock"
check "runc got CRIU's answer unchanged" "$(q $R "d['answer']")" 08011001
check "each step's answer reached CRIU" "$(q $FAKE_OUT "d['pre'] + ' ' + ' '.join(d['steps'])")" "08061801 08061801 08061801 08061801"
check "CRIU runs apart from the wrapper" "$(q $R "d['wrapper_pid'] != $(q $FAKE_OUT "d['pid']")")" True
check "CRIU finds runc's images dir at the numbers runc gave" "$(q $FAKE_OUT "d['images']")" "$images"
check "and its work dir" "$(q $FAKE_OUT "d['work']")" "$wdir"
check "CRIU is named no config (it runs no action script)" "$(q $FAKE_OUT "d['config']")" ""
check "frozen by pre-dump before CRIU went on" "$(q $FAKE_OUT "d['frozen_after_pre']")" True
check "a descriptor CRIU passes reaches runc" "$(q $R "d['passed_fd']")" passed
check "thawed when runc got the answer" "$(q $R "d['frozen_at_answer']")" False
check "the token claimed and the thaw reported" "$(test -e "$images/forkd-hook.thaw-claimed" && test "$(cat "$images/forkd-hook.thawed-at")" -gt 0 && echo yes)" yes
check "the freeze's instant recorded" "$(test -s "$images/forkd-hook.frozen-at" && echo yes)" yes
check "CRIU gets runc's log level when none is set" "$(q $FAKE_OUT "d['log_level']")" 4
check "CRIU runs without GnuTLS's implicit init" "$(q $FAKE_OUT "d['gnutls']")" 1

echo "== FORKD_CRIU_DUMP_LOG_LEVEL: the level CRIU gets for a relayed dump; anything but one digit 0-4 leaves runc's"
for v in 2:2 0:0 4:4 5:4 22:4 x:4 -1:4; do
  hook; install -m 0600 /dev/null "$images/forkd-hook.thaw-token"
  FORKD_CRIU_DUMP_LOG_LEVEL=${v%%:*} play dump
  check "level '${v%%:*}': CRIU's log level, and the variable not passed on" "$(q $R "d['rc']") $(q $FAKE_OUT "d['log_level']") $(q $FAKE_OUT "d['level_env']")" "0 ${v##*:} "
done

echo "== no token (a dump that keeps the tree frozen): still frozen at the answer"
hook; play dump
check "exit 0, frozen at the answer" "$(q $R "d['rc']") $(q $R "d['frozen_at_answer']")" "0 True"
echo "$FAKE_THAW" > "$FAKE_CONTROL"

echo "== a hook anyone could have written: CRIU is told the step failed, runc never hears of it, nothing frozen"
hook; chmod 0666 "$images/forkd-hook"
play dump 2>/dev/null
check "CRIU got notify_success=false" "$(q $FAKE_OUT "d['pre']")" 08061800
check "runc heard no step, got CRIU's failed answer" "$(q $R "str(d['notified']) + ' ' + d['answer']")" "[] 08011000"
check "CRIU's failure passed on" "$(q $R "d['rc']")" 1
check "not frozen" "$(frozen)" thawed

echo "== CRIU killed mid-dump: runc sees the end, the wrapper's status says how CRIU ended"
hook; install -m 0600 /dev/null "$images/forkd-hook.thaw-token"
play die
check "killed: 128 + SIGKILL" "$(q $R "d['rc']")" 137
check "runc heard pre-dump and no answer" "$(q $R "str(d['notified']) + ' ' + str(d['answer'])")" "['pre-dump'] None"
check "the token left for forkd, which thaws" "$(test -e "$images/forkd-hook.thaw-token" && echo yes)" yes
echo "$FAKE_THAW" > "$FAKE_CONTROL"

for s in status-fd restore; do
  echo "== $s: not relayed; CRIU reads runc's own socket and is named the action script's config"
  rm -f "$images"/forkd-hook*
  play $s
  check "exit 0" "$(q $R "d['rc']")" 0
  check "CRIU is the process runc started" "$(q $R "d['wrapper_pid'] == $(q $FAKE_OUT "d['pid']")")" True
  check "CRIU_CONFIG_FILE is the dump config" "$(q $FAKE_OUT "d['config']")" "$work/dump.conf"
  FORKD_CRIU_DUMP_LOG_LEVEL=1 play $s
  check "not relayed: runc's log level, whatever FORKD_CRIU_DUMP_LOG_LEVEL says" "$(q $FAKE_OUT "d['log_level']")" 4
done

echo "== runc's dump request saved (FORKD_CRIU_SAVE_REQUEST), then sent to CRIU by the wrapper alone (dump-saved)"
rm -f "$images"/forkd-hook* "$work/req"
FORKD_CRIU_SAVE_REQUEST=$work/req FORKD_CRIU_DUMP_LOG_LEVEL=2 play dump
check "the saved request is runc's, byte for byte (its log level too)" "$(od -An -v -tx1 "$work/req" | tr -d ' \n')" "$(q $R "d['request']")"
check "CRIU got it with the level asked" "$(q $FAKE_OUT "d['log_level']")" 2
check "owner-only" "$(stat -c %a "$work/req")" 600
check "the save path is not passed on to CRIU" "$(q $FAKE_OUT "d['save']")" ""
# runc's numbers: the player's dirs are closed by now, so the wrapper must open them there itself.
saved() { rm -f "$FAKE_OUT"; FAKE_SCENARIO=$1 timeout 30 python3 "$here/test/criu-relay-play.py" saved "$work/bin/criu" "$2" "$images" "$wdir" > "$R"; }
hook; install -m 0600 /dev/null "$images/forkd-hook.thaw-token"
saved dump "$work/req"
check "exit 0 at CRIU's successful answer" "$(q $R "d['rc']")" 0
check "every step answered as runc would, forkd's steps done" "$(q $FAKE_OUT "d['pre'] + ' ' + ' '.join(d['steps'])")" "08061801 08061801 08061801 08061801"
check "CRIU finds the images dir at the request's number" "$(q $FAKE_OUT "d['images']")" "$images"
check "and the work dir" "$(q $FAKE_OUT "d['work']")" "$wdir"
check "frozen by pre-dump before CRIU went on" "$(q $FAKE_OUT "d['frozen_after_pre']")" True
check "thawed at the answer, the token claimed" "$(frozen) $(test -e "$images/forkd-hook.thaw-claimed" && echo claimed)" "thawed claimed"
check "runc's log level when none is set" "$(q $FAKE_OUT "d['log_level']")" 4
hook; install -m 0600 /dev/null "$images/forkd-hook.thaw-token"
FORKD_CRIU_DUMP_LOG_LEVEL=1 saved dump "$work/req"
check "FORKD_CRIU_DUMP_LOG_LEVEL=1: CRIU's log level 1, the variable not passed on" "$(q $R "d['rc']") $(q $FAKE_OUT "d['log_level']") $(q $FAKE_OUT "d['level_env']")" "0 1 "
hook; saved refuse "$work/req"
check "CRIU answering failure fails the dump though it exits 0" "$(q $R "d['rc']")" 1
hook; chmod 0666 "$images/forkd-hook"
saved dump "$work/req" 2>/dev/null
check "a hook anyone could write: CRIU told the step failed, the dump fails" "$(q $FAKE_OUT "d['pre']") $(q $R "d['rc']")" "08061800 1"
check "not frozen" "$(frozen)" thawed
hook; install -m 0600 /dev/null "$images/forkd-hook.thaw-token"
saved die "$work/req"
check "CRIU killed mid-dump: 128 + SIGKILL, the token left for forkd" "$(q $R "d['rc']") $(test -e "$images/forkd-hook.thaw-token" && echo left)" "137 left"
echo "$FAKE_THAW" > "$FAKE_CONTROL"
hook; printf 'junk' > "$work/junk"
for f in "$work/none" "$work/junk" "$images"; do
  saved dump "$f" 2>/dev/null
  check "no request in $(basename "$f"): 2, CRIU never started" "$(q $R "d['rc']")$(test -e "$FAKE_OUT" && echo ' started')" 2
done
check "nothing frozen" "$(frozen)" thawed

echo "== fuzz: 300 random messages of CRIU's pass to runc unchanged"
export FAKE_SEED=$RANDOM
play fuzz
check "every message, in order (seed $FAKE_SEED)" "$(python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['messages']; b=json.load(open(sys.argv[2]))['sent']; print(a == b)" "$R" "$FAKE_OUT")" True

echo "== fuzz: random and mutated requests never crash the wrapper (each then execs CRIU, here true)"
printf '%s\n' "$work/no-reply" "$work" /none/uffd.so /bin/true ignored > "$work/bin/criu.launch"
# With a log level asked, so that the relay also rewrites what it can of each.
crashed=$(FORKD_CRIU_DUMP_LOG_LEVEL=2 python3 - "$work/bin/criu" "$images" <<'PY'
import os, random, socket, subprocess, sys
criu, images = sys.argv[1], sys.argv[2]
rng = random.Random()
img = os.open(images, os.O_RDONLY | os.O_DIRECTORY)
valid = bytes([0x08, 0x01, 0x12, 0x09, 0x08, img, 0x48, 0x04, 0x88, 0x01, img, 0x60, 0x01])
bad = []
for i in range(200):
    if i % 2:
        m = bytearray(valid)
        for _ in range(rng.randrange(1, 4)):
            m[rng.randrange(len(m))] = rng.randrange(256)
        m = bytes(m)
    else:
        m = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 48)))
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    a.send(m)
    rc = subprocess.run([criu, 'swrk', str(b.fileno())], pass_fds=[b.fileno()], stderr=subprocess.DEVNULL, timeout=10).returncode
    a.close(); b.close()
    if rc != 0:
        bad.append(f'{m.hex()}:{rc}')
    # The same bytes as a saved request: refused, or sent to a CRIU (true) that ends without answering.
    with open(images + '/../req', 'wb') as f:
        f.write(m)
    rc = subprocess.run([criu, 'dump-saved', images + '/../req', images, images], stderr=subprocess.DEVNULL, timeout=10).returncode
    if rc not in (1, 2):
        bad.append(f'saved {m.hex()}:{rc}')
print(' '.join(bad) or 'none')
PY
)
check "no crash, every request ended by CRIU's exit; saved, refused or failed" "$crashed" none

cleanup
[ "$fails" = 0 ] && echo "ALL OK"
exit "$fails"
