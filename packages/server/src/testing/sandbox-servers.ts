/* Servers that tests start inside sandboxes (the base template: Python 3, no extra packages). */

/** A WebSocket echo server in plain Python (the base template has no websocket library). */
export const WS_ECHO = `
import socket,hashlib,base64,threading
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1); s.bind(('127.0.0.1',8001)); s.listen()
def serve(c):
  d=b''
  while b'\\r\\n\\r\\n' not in d: d+=c.recv(4096)
  k=[l.split(b':',1)[1].strip() for l in d.split(b'\\r\\n') if l.lower().startswith(b'sec-websocket-key')][0]
  a=base64.b64encode(hashlib.sha1(k+b'258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest())
  c.sendall(b'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: '+a+b'\\r\\n\\r\\n')
  while True:
    h=c.recv(2)
    if len(h)<2: return
    n=h[1]&127
    m=c.recv(4); p=b''
    while len(p)<n: p+=c.recv(n-len(p))
    p=bytes(b^m[i%4] for i,b in enumerate(p))
    if h[0]&15==8: return
    c.sendall(bytes([0x81,len(p)])+p)
while True:
  c,_=s.accept(); threading.Thread(target=serve,args=(c,),daemon=True).start()
`;

/**
 * Server-sent events on 127.0.0.1:8002, chunked by hand (the base template's
 * Python has no framework): three events half a second apart, so a client
 * sees whether they came through as they were sent.
 */
export const SSE_EVENTS = `
import http.server,time
class H(http.server.BaseHTTPRequestHandler):
  protocol_version='HTTP/1.1'
  def do_GET(self):
    self.send_response(200); self.send_header('content-type','text/event-stream'); self.send_header('transfer-encoding','chunked'); self.end_headers()
    for i in range(3):
      d=('data: %d\\n\\n'%i).encode(); self.wfile.write(b'%x\\r\\n%s\\r\\n'%(len(d),d)); self.wfile.flush(); time.sleep(0.5)
    self.wfile.write(b'0\\r\\n\\r\\n')
  def log_message(self,*a): pass
http.server.ThreadingHTTPServer(('127.0.0.1',8002),H).serve_forever()
`;
