/** Python run inside a sandbox against the test internet (testing/test-internet.ts): transfer times and connection counts. */

/** Seconds a download (GET /bytes/n) or an upload (POST of n bytes; the server answers `... got N`) takes from inside a sandbox, or ERR. */
export const TIMED_PY = `import sys,time,urllib.request
url,n,up=sys.argv[1],int(sys.argv[2]),sys.argv[3]=='up'
t=time.time()
try:
  r=urllib.request.urlopen(urllib.request.Request(url,data=b'x'*n) if up else url+'/bytes/'+str(n),timeout=30).read()
  got=int(r.split()[-1]) if up else len(r)
  print('%.3f'%(time.time()-t) if got==n else 'ERR short %d'%got)
except Exception as e: print('ERR',type(e).__name__)`;

/** Opens n connections and holds them; then tries one more (2 s), closes one, tries again. */
export const CONNS_PY = `import sys,socket
host,n=sys.argv[1],int(sys.argv[2])
def c():
  s=socket.socket();s.settimeout(2)
  try: s.connect((host,8080));return s
  except Exception: return None
held=[c() for _ in range(n)]
print('held',sum(1 for s in held if s))
extra=c();print('extra',bool(extra))
held[0].close()
import time;time.sleep(0.5)
again=c();print('after-close',bool(again))`;
