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
# Installed as `criu`: the launcher. A fake loader prints what it was run with (its argv, HOME).
mkdir -p "$WORK/bin"
cp "$TOOL" "$WORK/bin/criu"
cat > "$WORK/loader" <<'SH'
#!/bin/sh
echo "HOME=$HOME $*"
SH
chmod +x "$WORK/loader"
printf '%s\n' "$WORK/reply" /criu-home /lib/uffd.so "$WORK/loader" --library-path /priv/lib /priv/criu > "$WORK/bin/criu.launch"
check "launch: runs the loader with CRIU's arguments and HOME" "$("$WORK/bin/criu" check --all)" "HOME=/criu-home --library-path /priv/lib /priv/criu check --all"
check "launch: preloads the uffd library when asked" "$(FORKD_UFFD_SOCK=/s "$WORK/bin/criu" lazy-pages)" "HOME=/criu-home --preload /lib/uffd.so --library-path /priv/lib /priv/criu lazy-pages"
check "launch: preloads it for a lazy restore's connect wait" "$(FORKD_LAZY_WAIT_MS=100 "$WORK/bin/criu" restore)" "HOME=/criu-home --preload /lib/uffd.so --library-path /priv/lib /priv/criu restore"
launched() {
  python3 - "$WORK/bin/criu" "$1" <<'PY'
import socket, subprocess, sys
criu, req = sys.argv[1], bytes.fromhex(sys.argv[2])
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
a.send(req)
r = subprocess.run([criu, 'swrk', str(b.fileno())], pass_fds=[b.fileno()], capture_output=True, text=True)
a.setblocking(False)
try: got = a.recv(64).hex()
except BlockingIOError: got = '-'
print(r.returncode, got, r.stdout.strip())
PY
}
check "launch: the version probe answered in-process" "$(launched 080a)" "0 080a1001520408091009 "
check "launch: a dump request goes to CRIU, unread" "$(launched 0801120400 | cut -d' ' -f1,2,4- | sed 's/ swrk [0-9]*$/ swrk FD/')" "0 - --library-path /priv/lib /priv/criu swrk FD"
rm "$WORK/bin/criu.launch"
check "launch: no launch file, a clear failure" "$("$WORK/bin/criu" check 2>&1; echo "rc=$?")" "forkd-criu: cannot read $WORK/bin/criu.launch: run forkd setup again
rc=127"
[ "$fails" = 0 ] && echo "ALL OK"
exit "$fails"
