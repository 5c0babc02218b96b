"""forkd's code interpreter server: what @e2b/code-interpreter's SDK talks to on port 49999.

One Jupyter kernel (ipykernel, driven by jupyter_client) per context; POST /execute
streams the kernel's output as JSON lines in the shapes the SDK parses (stdout,
stderr, result, error, number_of_executions, end_of_execution). It runs as a
warm template's start command, so sandboxes start with the default kernel
already up; the kernels talk to it over Unix sockets, which CRIU restores as
they were on a snapshot, rewind or fork (a kernel's variables survive them).

Standard library, pyzmq and jupyter_client only. The port is reached only through
forkd's port proxy, which checks the sandbox's tokens: nothing is checked here.
"""

import json
import os
import re
import select
import socket
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import zmq
from jupyter_client.manager import KernelManager

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


class Context:
    """A kernel and the one client that drives it; one execution at a time."""

    def __init__(self, language, cwd):
        self.id = str(uuid.uuid4())
        self.language = language
        self.cwd = cwd
        self.lock = threading.Lock()
        runtime = tempfile.mkdtemp(prefix="forkd-kernel-")
        env = dict(os.environ, MPLBACKEND="module://matplotlib_inline.backend_inline", PYDEVD_DISABLE_FILE_VALIDATION="1")
        self.km = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(runtime, "k"))
        # History in memory only (Out, _ and execution counts work): IPython's SQLite file costs ~3 ms a cell.
        self.km.start_kernel(cwd=cwd, env=env, extra_arguments=["--HistoryManager.enabled=False"])
        self.wire = Wire(self.km)

    def describe(self):
        return {"id": self.id, "language": self.language, "cwd": self.cwd}

    def restart(self):
        with self.lock:
            self.wire.close()
            self.km.restart_kernel(now=True)
            self.wire = Wire(self.km)

    def shutdown(self):
        with self.lock:
            self.wire.close()
            self.km.shutdown_kernel(now=True)

    def execute(self, code, env_vars, emit, client_gone):
        """Runs code, calling emit(dict) for each output; a client gone (an emit that raises, or client_gone()) interrupts the kernel."""
        with self.lock:
            if env_vars:
                self._silent("import os as _o; _o.environ.update(%r); del _o" % (env_vars,))
            try:
                self._run(code, emit, client_gone)
            finally:
                if env_vars:
                    self._silent("import os as _o\nfor _k in %r: _o.environ.pop(_k, None)\ndel _o" % (list(env_vars),))

    def warm(self):
        """Imports what charts and tables need, binding no name, so the template is taken with them loaded."""
        with self.lock:
            self._silent("__import__('matplotlib.pyplot'); __import__('pandas')")

    def _silent(self, code):
        msg_id = self.wire.execute(code, silent=True, store_history=False)
        self.wire.drain(msg_id, lambda _m: None)

    def _run(self, code, emit, client_gone):
        msg_id = self.wire.execute(code, silent=False, store_history=True)
        gone = []

        def leave():
            # A silent loop writes nothing that could fail: the client's timeout must still free the context.
            if not gone and client_gone():
                gone.append(True)
                self.km.interrupt_kernel()

        def forward(msg):
            if gone:
                return
            out = translate(msg)
            if out is None:
                return
            try:
                emit(out)
            except OSError:
                gone.append(True)
                self.km.interrupt_kernel()

        self.wire.drain(msg_id, forward, leave)
        if not gone:
            emit({"type": "end_of_execution"})


class Wire:
    """
    The kernel's shell and IOPub sockets, driven directly with its Session:
    jupyter_client's blocking client runs an asyncio loop for every message
    it reads, which costs more than the kernel's own work on a short cell.
    """

    def __init__(self, km):
        info = km.get_connection_info()
        self.session = km.session
        ctx = zmq.Context.instance()
        self.shell = ctx.socket(zmq.DEALER)
        self.iopub = ctx.socket(zmq.SUB)
        self.iopub.setsockopt(zmq.SUBSCRIBE, b"")
        for sock, port in ((self.shell, "shell_port"), (self.iopub, "iopub_port")):
            sock.linger = 0
            sock.connect(channel_url(info, port))
        self.wait_ready()

    def wait_ready(self, timeout=60):
        """kernel_info requests until IOPub answers too: a SUB socket misses what is published before it has joined."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg_id = self.session.send(self.shell, "kernel_info_request", {})["header"]["msg_id"]
            if self.iopub.poll(500):
                self.drain(msg_id, lambda _m: None)
                self.discard_replies()
                return
        raise RuntimeError("the kernel did not answer within %d s" % timeout)

    def execute(self, code, silent, store_history):
        self.discard_replies()
        content = {"code": code, "silent": silent, "store_history": store_history, "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}
        return self.session.send(self.shell, "execute_request", content)["header"]["msg_id"]

    def drain(self, msg_id, handle, quiet=None):
        """Hands handle() each IOPub message of request msg_id until the kernel is idle again; quiet() after each second without one."""
        while True:
            if not self.iopub.poll(1000):
                if quiet:
                    quiet()
                continue
            _idents, parts = self.session.feed_identities(self.iopub.recv_multipart())
            msg = self.session.deserialize(parts)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle":
                return
            handle(msg)

    def discard_replies(self):
        """Shell replies say nothing IOPub did not: read so they do not pile up."""
        while self.shell.poll(0):
            self.shell.recv_multipart()

    def close(self):
        self.shell.close(0)
        self.iopub.close(0)


def channel_url(info, port):
    if info["transport"] == "ipc":
        return "ipc://%s-%s" % (info["ip"], info[port])
    return "tcp://%s:%s" % (info["ip"], info[port])


def translate(msg):
    """A Jupyter IOPub message in the SDK's shape, or None for one it does not show."""
    kind, content = msg["msg_type"], msg["content"]
    now = time.time()
    if kind == "stream":
        return {"type": "stdout" if content.get("name") == "stdout" else "stderr", "text": content.get("text", ""), "timestamp": now}
    if kind in ("execute_result", "display_data"):
        return result_of(content.get("data", {}), kind == "execute_result")
    if kind == "error":
        return {"type": "error", "name": content.get("ename", ""), "value": content.get("evalue", ""), "traceback": "\n".join(content.get("traceback", []))}
    if kind == "execute_input":
        return {"type": "number_of_executions", "execution_count": content.get("execution_count")}
    return None


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
