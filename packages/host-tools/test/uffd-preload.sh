#!/bin/bash
# libforkd-uffd.so's connect wait (FORKD_LAZY_WAIT_MS): CRIU's one connect to a lazy-pages daemon's socket,
# tried again while the socket is absent or refused, and nothing else changed. python3 plays CRIU and the daemon.
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
LIB=$HERE/build/libforkd-uffd.so
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
fails=0
check() { if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: got '$2', want '$3'"; fails=$((fails + 1)); fi; }

# connect NAME [WAIT_MS]: a SEQPACKET connect to $WORK/NAME with the library preloaded; prints the outcome and
# whether it took under 1 s ("fast") or longer ("waited").
connect() {
  env ${2:+FORKD_LAZY_WAIT_MS=$2} ${FORKD_LAZY_PID:+FORKD_LAZY_PID=$FORKD_LAZY_PID} LD_PRELOAD="$LIB" python3 - "$WORK/$1" <<'PY'
import socket, sys, time, errno
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
t = time.monotonic()
try:
    s.connect(sys.argv[1]); out = 'connected'
except OSError as e:
    out = errno.errorcode[e.errno]
print(out, 'fast' if time.monotonic() - t < 1 else 'waited')
PY
}
# listen_later NAME DELAY_S: binds $WORK/NAME after DELAY_S (first bound but not listening for 0.2 s), accepts once.
listen_later() {
  python3 - "$WORK/$1" "$2" <<'PY' &
import socket, sys, time
time.sleep(float(sys.argv[2]))
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1]); time.sleep(0.2); s.listen(1); c, _ = s.accept(); time.sleep(1)
PY
}

mkdir -p "$WORK"/{late,never,now}
check "no wait asked: an absent socket fails at once" "$(connect never/lazy-pages.socket)" "ENOENT fast"
listen_later late/lazy-pages.socket 1.2
check "a daemon that listens late is waited for (absent, then refused, then listening)" "$(connect late/lazy-pages.socket 10000)" "connected waited"
check "another socket's name is not waited for" "$(connect never/other.socket 10000)" "ENOENT fast"
check "a daemon that never listens: the wait ends with its error" "$(connect never/lazy-pages.socket 1500)" "ENOENT waited"
/bin/true & gone=$!; wait $gone
check "a daemon already gone (FORKD_LAZY_PID) is not waited for" "$(FORKD_LAZY_PID=$gone connect never/lazy-pages.socket 10000)" "ENOENT fast"
sleep 30 & alive=$!
check "a daemon still running is waited for" "$(FORKD_LAZY_PID=$alive connect never/lazy-pages.socket 1500)" "ENOENT waited"
kill $alive
check "a wait not a positive number of ms asks for none" "$(connect never/lazy-pages.socket abc)" "ENOENT fast"
listen_later now/lazy-pages.socket 0
sleep 0.5
check "a daemon listening already: connected at once" "$(connect now/lazy-pages.socket 10000)" "connected fast"
[ "$fails" = 0 ] && echo "ALL OK"
