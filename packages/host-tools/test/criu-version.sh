#!/bin/bash
# forkd-criu-version: the version probe answered from a recorded reply, anything else left unread for CRIU.
# Plays both ends of runc's socketpair in python3; a fake "criu" answers the record step like CRIU would.
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
TOOL=$HERE/build/forkd-criu-version
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fails=0
check() { if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: got '$2', want '$3'"; fails=$((fails + 1)); fi; }

# A fake CRIU for `record`: reads the probe on fd $2 and answers VERSION 9.9 (reply bytes 080a1001 5204 0809 1009).
cat > "$WORK/criu" <<'PY'
#!/usr/bin/env python3
import os, socket, sys
s = socket.socket(fileno=int(sys.argv[2]))
assert sys.argv[1] == 'swrk' and s.recv(64) == b'\x08\x0a'
s.send(bytes.fromhex('080a1001520408091009'))
PY
chmod +x "$WORK/criu"
"$TOOL" record "$WORK/criu" "$WORK/reply"
check "record: exit status" "$?" 0
check "record: the reply CRIU gave" "$(xxd -p "$WORK/reply")" "080a1001520408091009"
"$TOOL" record /bin/false "$WORK/none" 2>/dev/null
check "record: no reply, no file" "$?-$(test -e "$WORK/none"; echo $?)" "2-1"

# answer: REQUEST (hex) on one end, the tool on the other; prints the tool's status, what came back, and what is left unread.
answer() {
  python3 - "$TOOL" "$1" "$2" <<'PY'
import socket, subprocess, sys
tool, reply, req = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3])
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
a.send(req)
rc = subprocess.run([tool, 'answer', str(b.fileno()), reply], pass_fds=[b.fileno()]).returncode
a.setblocking(False)
try: got = a.recv(64).hex()
except BlockingIOError: got = '-'
b.setblocking(False)
try: left = b.recv(64).hex()
except BlockingIOError: left = '-'
print(rc, got, left)
PY
}
check "the probe is answered with the reply" "$(answer "$WORK/reply" 080a)" "0 080a1001520408091009 -"
check "a dump request is left for CRIU" "$(answer "$WORK/reply" 0801120400)" "1 - 0801120400"
check "no reply recorded: left for CRIU" "$(answer "$WORK/missing" 080a)" "1 - 080a"
printf 'junk' > "$WORK/bad"
check "a reply that is not VERSION: left for CRIU" "$(answer "$WORK/bad" 080a)" "1 - 080a"
ln -s "$WORK/reply" "$WORK/link"
check "a reply through a symlink is refused" "$(answer "$WORK/link" 080a)" "1 - 080a"
[ "$fails" = 0 ] && echo "ALL OK"
exit "$fails"
