/** Python run inside an egress sandbox against forkd's egress proxy and resolver (the adversarial suite). */

/**
 * The attack of issue 23, `argv[2]` times: the 6 bytes `16 03 01 00 00 01`
 * to port 443 of `argv[1]`. Prints how many connections the proxy left open
 * for 3 s, and the longest it took to close one.
 */
export const SNI_ATTACK_PY = `import socket,sys,time
worst=0;held=0
for i in range(int(sys.argv[2])):
  s=socket.create_connection((sys.argv[1],443),timeout=3);t=time.time()
  s.sendall(bytes([0x16,3,1,0,0,1]))
  try: s.recv(100)
  except socket.timeout: held+=1
  except OSError: pass
  worst=max(worst,time.time()-t);s.close()
print(held,round(worst,2))`;

/**
 * A live fuzz for `argv[1]` seconds: random, truncated, mutated and
 * oversized TLS hellos (port 443), HTTP request heads (port 80) and DNS
 * queries (UDP and TCP port 53) to `argv[2]` (all redirected to forkd's
 * proxy and resolver) from 8 threads, a third of the connections closed
 * without waiting for an answer; `argv[3:]`: names the hellos and heads
 * name. Prints how many of each were sent.
 */
export const LIVE_FUZZ_PY = `import os,random,socket,ssl,sys,threading,time
T=float(sys.argv[1]);A=sys.argv[2];names=sys.argv[3:]
def hello(name):
  ctx=ssl.create_default_context();ctx.check_hostname=False;ctx.verify_mode=ssl.CERT_NONE
  i,o=ssl.MemoryBIO(),ssl.MemoryBIO();c=ctx.wrap_bio(i,o,server_hostname=name)
  try: c.do_handshake()
  except ssl.SSLWantReadError: pass
  return o.read()
def query(name,t):
  q=os.urandom(2)+bytes([1,0,0,1,0,0,0,0,0,1])
  for l in name.split('.'): q+=bytes([len(l)])+l.encode()
  return q+bytes([0,0,t,0,1])+bytes([0,0,41,4,208,0,0,0,0,0,0])
H=[hello(n) for n in names]+[hello(None)]
HEADS=[('GET /%d HTTP/1.1\\r\\nHost: %s\\r\\nUser-Agent: fuzz\\r\\n\\r\\n'%(i,n)).encode() for i,n in enumerate(names)]
HEADS+=[('POST /up HTTP/1.1\\r\\nHost: %s\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n5\\r\\nhello\\r\\n0\\r\\n\\r\\n'%names[-1]).encode()]
Q=[query(n,t) for n in names for t in (1,28,16)]
def mutate(b):
  r=random.random();b=bytearray(b)
  if r<.2: return bytes(b[:random.randrange(len(b)+1)])
  if r<.4:
    for _ in range(random.randint(1,8)): b[random.randrange(len(b))]=random.randrange(256)
    return bytes(b[:random.randrange(len(b)+1)]) if random.random()<.5 else bytes(b)
  if r<.6:
    at=random.choice([random.randrange(24),random.randrange(len(b))]);v=random.choice([0,1,2,3,4,255,0xffff,random.randrange(65536)])
    b[at:at+2]=v.to_bytes(2,'big');return bytes(b[:random.choice([random.randrange(24),random.randrange(len(b)+1)])])
  if r<.75: return bytes(b)+os.urandom(random.randrange(1,3000))
  if r<.8: return bytes(b)*random.randint(2,20)
  return os.urandom(random.randrange(600))
def tcp(port,data):
  s=socket.socket();s.settimeout(0.15)
  try:
    s.connect((A,port));cut=random.randrange(len(data)+1)
    s.sendall(data[:cut]);time.sleep(random.choice([0,0,0.01]));s.sendall(data[cut:])
    if random.random()<.3: return
    if random.random()<.5: s.shutdown(socket.SHUT_WR)
    s.recv(4096)
  except Exception: pass
  finally: s.close()
def udp(data):
  s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.settimeout(0.1)
  try: s.sendto(data,(A,53));s.recv(4096)
  except Exception: pass
  finally: s.close()
n={'tls':0,'http':0,'udp':0,'tcpdns':0}
end=time.time()+T
def worker():
  while time.time()<end:
    k=random.choice(list(n));n[k]+=1
    if k=='tls': tcp(443,mutate(random.choice(H)) if random.random()<.95 else bytes([22,3,1,0,0,1]))
    elif k=='http': tcp(80,mutate(random.choice(HEADS)))
    elif k=='udp': udp(mutate(random.choice(Q)))
    else:
      d=mutate(random.choice(Q));tcp(53,(len(d).to_bytes(2,'big') if random.random()<.8 else os.urandom(2))+d)
ws=[threading.Thread(target=worker) for _ in range(8)]
for w in ws: w.start()
for w in ws: w.join()
print(' '.join('%s=%d'%kv for kv in n.items()))`;
