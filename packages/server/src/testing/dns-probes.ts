/**
 * Python run inside an egress sandbox against forkd's resolver (every
 * port-53 query is redirected to it, whatever address it names) and the
 * test internet's DNS (testing/test-internet.ts: it logs what reaches it and
 * never answers names under `.hang.test`).
 */

/** Any address: an egress sandbox's DNS to it reaches forkd's resolver. */
export const ANY_DNS = '192.0.2.9';

export const QTYPE = { A: '1', NULL: '10', TXT: '16', ANY: '255' } as const;

const QUERY = `q=struct.pack('>HHHHHH',random.randint(0,65535),0x0100,1,0,0,0)+b''.join(bytes([len(l)])+l.encode() for l in sys.argv[3].split('.'))+b'\\0'+struct.pack('>HH',int(sys.argv[4]),1)`;
const PRINT = `an=struct.unpack('>H',r[6:8])[0];print(r[3]&15, an, *(['.'.join(str(b) for b in r[-4:])] if an and sys.argv[4]=='1' else []))`;

/**
 * argv: udp|tcp, server, name, type. One query; prints `rcode answers [first
 * A address]`, or ERR and why.
 */
export const QUERY_PY = `import sys,socket,struct,random
${QUERY}
try:
  if sys.argv[1]=='tcp':
    s=socket.create_connection((sys.argv[2],53),timeout=3);s.sendall(struct.pack('>H',len(q))+q);r=b''
    while len(r)<2 or len(r)<2+struct.unpack('>H',r[:2])[0]:
      c=s.recv(4096)
      if not c: raise EOFError()
      r+=c
    r=r[2:]
  else:
    s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.settimeout(3);s.sendto(q,(sys.argv[2],53));r=s.recv(4096)
  ${PRINT}
except Exception as e: print('ERR',type(e).__name__)`;

/**
 * argv: server, seconds. As fast as it can for that long, A queries for
 * `<n>.hang.test` (never answered upstream); prints JSON: how many it sent,
 * the replies it got by rcode.
 */
export const FLOOD_PY = `import sys,socket,struct,time,json
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.setblocking(False)
end=time.time()+float(sys.argv[2]);n=0;got={}
def drain():
  try:
    while True:
      r=s.recv(4096);k=str(r[3]&15);got[k]=got.get(k,0)+1
  except BlockingIOError: pass
while time.time()<end:
  l=str(n).encode()
  try: s.sendto(struct.pack('>HHHHHH',n&65535,0x0100,1,0,0,0)+bytes([len(l)])+l+b'\\x04hang\\x04test\\x00\\x00\\x01\\x00\\x01',(sys.argv[1],53))
  except BlockingIOError: pass
  n+=1;drain();time.sleep(0.001)
time.sleep(0.5);drain();print(json.dumps({'sent':n,'got':got}))`;

/**
 * argv: server, n, seconds. Opens n TCP connections to port 53 and holds
 * them that long; prints how many the resolver still kept open after 1 s.
 */
export const HOLD_TCP_PY = `import sys,socket,time
held=[]
for _ in range(int(sys.argv[2])):
  try: held.append(socket.create_connection((sys.argv[1],53),timeout=2))
  except Exception: pass
time.sleep(1)
def alive(s):
  s.setblocking(False)
  try: return s.recv(1)!=b''
  except BlockingIOError: return True
  except Exception: return False
print(sum(1 for s in held if alive(s)),flush=True)
time.sleep(float(sys.argv[3]))`;

/** argv: address, name. A plain HTTP request to address:80 (forkd's proxy) with Host: name; prints the status line, or ERR. */
export const HOST_PY = `import sys,socket
try:
  s=socket.create_connection((sys.argv[1],80),timeout=3);s.sendall(('GET / HTTP/1.1\\r\\nHost: %s\\r\\nConnection: close\\r\\n\\r\\n'%sys.argv[2]).encode())
  print(s.recv(4096).split(b'\\r\\n')[0].decode() or 'ERR closed')
except Exception as e: print('ERR',type(e).__name__)`;
