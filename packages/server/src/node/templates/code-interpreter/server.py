"""forkd's code interpreter server: what @e2b/code-interpreter's SDK talks to on port 49999.

One kernel process (kernel.py: IPython's shell) per context; POST /execute
streams the kernel's output as JSON lines in the shapes the SDK parses (stdout,
stderr, result, error, number_of_executions, end_of_execution). It runs as a
warm template's start command, so sandboxes start with the default kernel
already up; the kernels talk to it over a socket pair and pipes, which CRIU
restores as they were on a snapshot, rewind or fork (a kernel's variables
survive them).

Standard library only (the kernel needs IPython). The port is reached only through
forkd's port proxy, which checks the sandbox's tokens: nothing is checked here.
"""

import codecs
import json
import os
import queue
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel.py")
PORT = int(os.environ.get("FORKD_CODE_INTERPRETER_PORT", "49999"))
DEFAULT_CWD = os.environ.get("FORKD_CODE_INTERPRETER_CWD", "/home/user")
MAX_BODY = 16 * 1024 * 1024
PYTHON_NAMES = ("python", "python3", "py")
# Jupyter's MIME keys → the SDK's Result fields.
MIME_FIELDS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
    "text/latex": "latex",
    "application/json": "json",
    "application/javascript": "javascript",
    "e2b/data": "data",
    "e2b/chart": "chart",
}
CONTEXT_ID = re.compile(r"^[0-9a-f-]{1,64}$")


class RequestError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class KernelDied(Exception):
    pass


class Kernel:
    """
    A kernel process (kernel.py), the socket it takes requests and sends
    events on, and the pipes of its fd 1 and 2 (what a subprocess writes),
    all read by one thread; before "done" it reads what the pipes hold, so
    everything a cell wrote comes before its end.
    """

    def __init__(self, cwd):
        env = dict(os.environ, MPLBACKEND="module://matplotlib_inline.backend_inline")
        ours, theirs = socket.socketpair()
        self.proc = subprocess.Popen(
            [sys.executable, KERNEL, str(theirs.fileno())],
            cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(theirs.fileno(),),
        )
        theirs.close()
        self.channel = ours
        self.sink = None
        self.sink_lock = threading.Lock()
        self.pipes = {self.proc.stdout.fileno(): "stdout", self.proc.stderr.fileno(): "stderr"}
        self.decoders = {fd: codecs.getincrementaldecoder("utf-8")("replace") for fd in self.pipes}
        for fd in self.pipes:
            os.set_blocking(fd, False)
        threading.Thread(target=self._pump, daemon=True).start()

    def request(self, req, sink):
        """Sends a request; sink (a queue) gets its events until ("done",) or ("died", code)."""
        with self.sink_lock:
            self.sink = sink
        self.channel.sendall((json.dumps(req) + "\n").encode())

    def release(self):
        with self.sink_lock:
            self.sink = None

    def interrupt(self):
        try:
            os.kill(self.proc.pid, signal.SIGINT)
        except OSError:
            pass

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.channel.close()

    def _deliver(self, item):
        with self.sink_lock:
            if self.sink is not None:
                self.sink.put(item)

    def _read_pipes(self, fds):
        for fd in fds:
            while True:
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    break
                except OSError:
                    data = b""
                if not data:
                    self.pipes.pop(fd, None)
                    break
                text = self.decoders[fd].decode(data)
                if text:
                    self._deliver(("out", self.pipes[fd], text))

    def _pump(self):
        try:
            self._pump_until_eof()
        except (OSError, ValueError):
            pass  # stopped: its socket and pipes are closed

    def _pump_until_eof(self):
        buf = b""
        while True:
            ready, _, _ = select.select([self.channel, *self.pipes], [], [])
            self._read_pipes([fd for fd in ready if fd in self.pipes])
            if self.channel not in ready:
                continue
            try:
                data = self.channel.recv(1 << 20)
            except OSError:
                data = b""
            if not data:
                self._read_pipes(list(self.pipes))
                self._deliver(("died", self.proc.wait()))
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                event = json.loads(line)
                if event.get("t") == "done":
                    self._read_pipes(list(self.pipes))
                self._deliver(("event", event))


class Context:
    """A kernel and the one execution it runs at a time; a kernel that died is started again."""

    def __init__(self, language, cwd):
        self.id = str(uuid.uuid4())
        self.language = language
        self.cwd = cwd
        self.lock = threading.Lock()
        self.kernel = Kernel(cwd)

    def describe(self):
        return {"id": self.id, "language": self.language, "cwd": self.cwd}

    def restart(self):
        with self.lock:
            self.kernel.stop()
            self.kernel = Kernel(self.cwd)

    def shutdown(self):
        with self.lock:
            self.kernel.stop()

    def execute(self, code, env_vars, emit, client_gone):
        """Runs code, calling emit(dict) for each output; a client gone (an emit that raises, or client_gone()) interrupts the kernel."""
        with self.lock:
            self._run({"op": "execute", "code": code, "silent": False, "env": env_vars or {}}, emit, client_gone)

    def warm(self):
        """Imports what charts and tables need, binding no name, so the template is taken with them loaded."""
        with self.lock:
            self._run({"op": "execute", "code": "__import__('matplotlib.pyplot'); __import__('pandas')", "silent": True}, lambda _o: None, lambda: False)

    def _run(self, req, emit, client_gone):
        sink = queue.Queue()
        gone = []

        def interrupt():
            if not gone:
                gone.append(True)
                self.kernel.interrupt()

        self.kernel.request(req, sink)
        try:
            while True:
                try:
                    item = sink.get(timeout=1)
                except queue.Empty:
                    # A silent loop writes nothing that could fail: the client's timeout must still free the context.
                    if client_gone():
                        interrupt()
                    continue
                if item[0] == "died":
                    self.kernel.channel.close()
                    self.kernel = Kernel(self.cwd)
                    if not gone:
                        emit({"type": "error", "name": "DeadKernelError", "value": "the kernel exited (status %s); a new one was started" % item[1], "traceback": ""})
                    break
                out = translate(item)
                if out is None:
                    break
                if not gone and out is not True:
                    try:
                        emit(out)
                    except OSError:
                        interrupt()
        finally:
            self.kernel.release()
        if not gone:
            emit({"type": "end_of_execution"})


def translate(item):
    """A kernel event in the SDK's shape; None at the end of the cell, True for one it does not show."""
    if item[0] == "out":
        return {"type": item[1], "text": item[2], "timestamp": time.time()}
    event = item[1]
    kind = event.get("t")
    if kind == "done":
        return None
    if kind == "out":
        return {"type": "stdout" if event.get("name") == "stdout" else "stderr", "text": event.get("text", ""), "timestamp": time.time()}
    if kind == "count":
        return {"type": "number_of_executions", "execution_count": event.get("n")}
    if kind == "display":
        return result_of(event.get("data") or {}, bool(event.get("main")))
    if kind == "error":
        return {"type": "error", "name": event.get("ename", ""), "value": event.get("evalue", ""), "traceback": "\n".join(event.get("traceback") or [])}
    return True


def result_of(data, is_main):
    out = {"type": "result", "is_main_result": is_main}
    extra = {}
    for mime, value in data.items():
        field = MIME_FIELDS.get(mime)
        if field is None:
            extra[mime] = value
        else:
            out[field] = value
    text = out.get("text")
    # As E2B's server does: a string result's text without its repr quotes.
    if isinstance(text, str) and len(text) >= 2 and text[0] == text[-1] == "'":
        out["text"] = text[1:-1]
    if extra:
        out["extra"] = extra
    return out


class Contexts:
    def __init__(self):
        self.lock = threading.Lock()
        self.default = Context("python", DEFAULT_CWD)
        self.by_id = {self.default.id: self.default}

    def get(self, context_id, language):
        if context_id:
            with self.lock:
                ctx = self.by_id.get(context_id)
            if ctx is None:
                raise RequestError(404, "context %s not found" % context_id)
            return ctx
        if language and language.lower() not in PYTHON_NAMES:
            raise RequestError(400, "language %s is not supported here (python only)" % language)
        return self.default

    def create(self, language, cwd):
        if language and language.lower() not in PYTHON_NAMES:
            raise RequestError(400, "language %s is not supported here (python only)" % language)
        ctx = Context("python", cwd or DEFAULT_CWD)
        with self.lock:
            self.by_id[ctx.id] = ctx
        return ctx

    def remove(self, context_id):
        with self.lock:
            ctx = self.by_id.pop(context_id, None) if context_id != self.default.id else None
        if ctx is None:
            raise RequestError(404, "context %s not found" % context_id)
        ctx.shutdown()

    def list(self):
        with self.lock:
            return [c.describe() for c in self.by_id.values()]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    contexts = None

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def dispatch(self, method):
        path = self.path.split("?", 1)[0]
        parts = [p for p in path.split("/") if p]
        try:
            body = self.read_body()
            if method == "GET" and parts == ["health"]:
                return self.send_json(200, "OK")
            if method == "POST" and parts == ["execute"]:
                return self.execute(body)
            if parts[:1] == ["contexts"]:
                return self.context_route(method, parts[1:], body)
            raise RequestError(404, "no route %s %s" % (method, path))
        except RequestError as e:
            self.send_json(e.status, {"error": str(e)})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as e:  # a bug here must not kill the server: report it to the caller
            print("code interpreter: %r" % (e,), file=sys.stderr)
            self.send_json(500, {"error": str(e)})

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise RequestError(413, "request body over %d bytes" % MAX_BODY)
        if length == 0:
            return {}
        try:
            body = json.loads(self.rfile.read(length))
        except ValueError:
            raise RequestError(400, "the body is not JSON")
        if not isinstance(body, dict):
            raise RequestError(400, "the body is not a JSON object")
        return body

    def context_route(self, method, rest, body):
        if method == "GET" and not rest:
            return self.send_json(200, self.contexts.list())
        if method == "POST" and not rest:
            ctx = self.contexts.create(optional_str(body, "language"), optional_str(body, "cwd"))
            return self.send_json(200, ctx.describe())
        if len(rest) >= 1 and not CONTEXT_ID.match(rest[0]):
            raise RequestError(404, "context not found")
        if method == "DELETE" and len(rest) == 1:
            self.contexts.remove(rest[0])
            return self.send_json(200, None)
        if method == "POST" and len(rest) == 2 and rest[1] == "restart":
            self.contexts.get(rest[0], None).restart()
            return self.send_json(200, None)
        raise RequestError(404, "no such context route")

    def execute(self, body):
        code = body.get("code")
        if not isinstance(code, str):
            raise RequestError(400, "code must be a string")
        env_vars = body.get("env_vars") or {}
        if not isinstance(env_vars, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env_vars.items()):
            raise RequestError(400, "env_vars must map strings to strings")
        ctx = self.contexts.get(optional_str(body, "context_id"), optional_str(body, "language"))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def emit(out):
            line = (json.dumps(out) + "\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))

        ctx.execute(code, env_vars, emit, self.client_gone)
        self.wfile.write(b"0\r\n\r\n")

    def client_gone(self):
        """Whether the client closed its connection (its timeout, a cancel): its request was read whole, so readable means EOF."""
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def send_json(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def optional_str(body, key):
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise RequestError(400, "%s must be a string" % key)
    return value


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64
    address_family = socket.AF_INET


def main():
    Handler.contexts = Contexts()
    Handler.contexts.default.warm()
    Server(("0.0.0.0", PORT), Handler).serve_forever()


if __name__ == "__main__":
    main()
