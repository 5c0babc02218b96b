#!/usr/bin/env python3
"""Both ends of the criu wrapper's relay (test/criu-relay.sh), in CRIU's RPC bytes (CRIU's images/rpc.proto).

  criu-relay-play.py runc WRAPPER IMAGES WORK SCENARIO   plays runc: one request, answers each notification;
                                                         prints what it saw as JSON
  criu-relay-play.py criu swrk FD                        plays CRIU (the wrapper's launch file runs it): the
                                                         steps of FAKE_SCENARIO; writes what it saw to FAKE_OUT

  criu-relay-play.py saved WRAPPER REQUEST IMAGES WORK   runs `criu dump-saved` (no runc); prints its status as JSON

Scenarios: dump (every step of a dump that leaves the tree running), die (CRIU killed after pre-dump),
status-fd (a request naming a status fd), restore (a restore request), fuzz (CRIU says random bytes),
refuse (CRIU answers that the dump failed, yet exits 0).
Freezer: FAKE_CONTROL, FAKE_FREEZE, FAKE_THAW, FAKE_CHECK, FAKE_PATTERN.
"""
import json, os, random, re, signal, socket, struct, subprocess, sys

NOTIFY, DUMP, RESTORE = 6, 1, 2
NOTIFY_OK = bytes([0x08, NOTIFY, 0x18, 0x01])


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(num, value):
    if isinstance(value, bytes):
        return varint(num << 3 | 2) + varint(len(value)) + value
    return varint(num << 3) + varint(value)


def fields(msg):
    """(num, value) of a message's top-level varint and bytes fields."""
    i, out = 0, []
    while i < len(msg):
        key, i = read_varint(msg, i)
        if key & 7 == 0:
            v, i = read_varint(msg, i)
        else:
            n, i = read_varint(msg, i)
            v, i = msg[i:i + n], i + n
        out.append((key >> 3, v))
    return out


def read_varint(b, i):
    v = shift = 0
    while True:
        v |= (b[i] & 0x7F) << shift
        shift += 7
        i += 1
        if not b[i - 1] & 0x80:
            return v, i


def frozen():
    with open(os.environ['FAKE_CHECK']) as f:
        return re.search(os.environ['FAKE_PATTERN'], f.read(), re.M) is not None


def write(path, value):
    with open(path, 'w') as f:
        f.write(value)


def runc(wrapper, images, work, scenario):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    img = os.open(images, os.O_RDONLY | os.O_DIRECTORY)
    wk = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
    # runc asks log level 4 (debug).
    opts = field(1, img) + field(9, 4) + field(17, wk) + field(3, 1) + field(12, 1)
    if scenario == 'status-fd':
        opts += field(49, wk)
    request = field(1, RESTORE if scenario == 'restore' else DUMP) + field(2, opts)
    a.send(request)
    p = subprocess.Popen([wrapper, 'swrk', str(b.fileno())], pass_fds=[b.fileno()])
    b.close()
    seen = {'wrapper_pid': p.pid, 'notified': [], 'answer': None, 'messages': [], 'passed_fd': None, 'request': request.hex()}
    a.settimeout(20)
    while True:
        msg, fds, _, _ = socket.recv_fds(a, 1 << 16, 8)
        if not msg:
            break
        seen['messages'].append(msg.hex())
        if fds:
            seen['passed_fd'] = os.read(fds[0], 16).decode()
            for fd in fds:
                os.close(fd)
        if scenario == 'fuzz':
            continue
        f = dict(fields(msg))
        if f.get(1) == NOTIFY:
            seen['notified'].append(dict(fields(f.get(5, b''))).get(1, b'').decode())
            a.send(NOTIFY_OK)
        else:
            seen['answer'] = msg.hex()
            seen['frozen_at_answer'] = frozen() if 'FAKE_CHECK' in os.environ else None
            a.shutdown(socket.SHUT_WR)
    seen['rc'] = p.wait(timeout=20)
    print(json.dumps(seen))


def saved(wrapper, request, images, work):
    p = subprocess.Popen([wrapper, 'dump-saved', request, images, work])
    print(json.dumps({'wrapper_pid': p.pid, 'rc': p.wait(timeout=20)}))


def criu(fd):
    s = socket.socket(fileno=fd)
    pid = struct.unpack('3i', s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
    req = s.recv(1 << 16)
    opts = dict(fields(dict(fields(req))[2]))
    seen = {'pid': os.getpid(), 'config': os.environ.get('CRIU_CONFIG_FILE', ''), 'save': os.environ.get('FORKD_CRIU_SAVE_REQUEST', ''),
            'log_level': opts.get(9), 'level_env': os.environ.get('FORKD_CRIU_DUMP_LOG_LEVEL', ''), 'gnutls': os.environ.get('GNUTLS_NO_IMPLICIT_INIT', ''),
            'images': os.readlink(f'/proc/{pid}/fd/{opts[1]}'), 'work': os.readlink(f'/proc/{pid}/fd/{opts[17]}')}
    out = os.environ['FAKE_OUT']
    scenario = os.environ['FAKE_SCENARIO']

    def notify(name, fds=()):
        msg = field(1, NOTIFY) + field(2, 1) + field(5, field(1, name.encode()))
        socket.send_fds(s, [msg], list(fds))
        return s.recv(64).hex()

    def done(answer, rc):
        s.send(answer)
        write(out, json.dumps(seen))
        s.recv(64)  # runc's end: the relay closes ours once runc has shut its side
        sys.exit(rc)

    if scenario == 'fuzz':
        rng = random.Random(int(os.environ['FAKE_SEED']))
        sent = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))) for _ in range(300)]
        sent.append(field(1, DUMP) + field(2, 1))
        seen['sent'] = [m.hex() for m in sent]
        for m in sent:
            s.send(m)
        write(out, json.dumps(seen))
        s.shutdown(socket.SHUT_WR)
        s.recv(64)
        sys.exit(0)
    if scenario in ('status-fd', 'restore'):
        done(field(1, DUMP) + field(2, 1), 0)
    if scenario == 'refuse':
        done(field(1, DUMP) + field(2, 0), 0)
    seen['pre'] = notify('pre-dump')
    seen['frozen_after_pre'] = frozen()
    if seen['pre'] != NOTIFY_OK.hex():
        done(field(1, DUMP) + field(2, 0), 1)
    if scenario == 'die':
        write(out, json.dumps(seen))
        os.kill(os.getpid(), signal.SIGKILL)
    write(os.environ['FAKE_CONTROL'], os.environ['FAKE_THAW'])  # CRIU thaws once it has seized every task
    r, w = os.pipe()
    os.write(w, b'passed')
    seen['steps'] = [notify('network-lock', [r]), notify('post-dump'), notify('network-unlock')]
    write(os.environ['FAKE_CONTROL'], os.environ['FAKE_FREEZE'])  # as it found it, before it detaches
    done(field(1, DUMP) + field(2, 1), 0)


if __name__ == '__main__':
    if sys.argv[1] == 'runc':
        runc(*sys.argv[2:6])
    elif sys.argv[1] == 'saved':
        saved(*sys.argv[2:6])
    else:
        criu(int(sys.argv[-1]))
