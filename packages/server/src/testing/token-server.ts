/**
 * A Python server on 127.0.0.1:9000 that answers a token drawn once at its
 * start: a warm template's start command whose equal tokens in two
 * sandboxes prove a restore of its memory, not a restart.
 */
export const TOKEN_SERVER = [
  'import http.server, secrets',
  'token = secrets.token_hex(8)',
  'class H(http.server.BaseHTTPRequestHandler):',
  '  def do_GET(self):',
  '    self.send_response(200); self.end_headers(); self.wfile.write(token.encode())',
  "http.server.HTTPServer(('127.0.0.1', 9000), H).serve_forever()",
].join('\n');
