"""forkd's Python kernel: IPython's InteractiveShell in a process of its own, driven by server.py.

Jupyter's ipykernel costs ~2.5 ms a cell on this kind of host before the cell
runs (ZeroMQ, an IOPub thread, signed messages, an asyncio loop); run_cell
itself costs ~0.1-0.4 ms. This keeps what a notebook user sees from IPython
(Out and execution counts, rich reprs, display(), matplotlib's inline
charts, IPython's tracebacks) and talks to the server over one socket:
JSON lines in, JSON lines out. Output written to fd 1 and 2 (print, a
subprocess, a C extension) goes to pipes the server reads, as ipykernel
captures it; sys.stdout is line-buffered and flushed before "done", so the
server has every byte of a cell's output in its pipe when "done" arrives.

Requests: {"op": "execute", "code", "silent", "env"}. Events: {"t": "count",
"n"}, {"t": "out", "name", "text"}, {"t": "display", "data", "main"}, {"t": "error", "ename", "evalue",
"traceback"}, {"t": "done"}. SIGINT interrupts a running cell (as Jupyter's
interrupt) and is ignored between cells.
"""

import base64
import io
import json
import os
import signal
import socket
import sys
import threading

from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher
from IPython.core.interactiveshell import InteractiveShell
from traitlets import Type
from traitlets.config import Config

CHANNEL = None
RUNNING = [False]
# A thread the cell started may print while the cell sends its results: one line at a time on the socket.
SEND_LOCK = threading.Lock()


def jsonable(value):
    """As ipykernel's json_clean: bytes (an image's repr) as base64, anything else as its repr."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode()
    return repr(value)


def send(event):
    line = (json.dumps(event, default=jsonable) + "\n").encode()
    with SEND_LOCK:
        CHANNEL.sendall(line)


class Stream(io.TextIOBase):
    """
    sys.stdout and sys.stderr: what Python prints goes over the socket in
    order with the cell's results, a line at a time (or at a flush); output
    written to fd 1 and 2 directly (a subprocess) goes through the pipes.
    """

    def __init__(self, name, fd):
        super().__init__()
        self.name = name
        self.fd = fd
        self.pending = []

    @property
    def encoding(self):
        return "utf-8"

    def fileno(self):
        return self.fd

    def writable(self):
        return True

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        self.pending.append(text)
        if "\n" in text:
            self.flush()
        return len(text)

    def flush(self):
        text, self.pending = "".join(self.pending), []
        if text:
            send({"t": "out", "name": self.name, "text": text})


class Publisher(DisplayPublisher):
    """display(): a result that is not the cell's own value."""

    def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
        sys.stdout.flush()
        send({"t": "display", "data": data, "main": False})

    def clear_output(self, wait=False):
        pass


class Hook(DisplayHook):
    """The cell's value (Out[n]): sent, not printed."""

    def write_output_prompt(self):
        pass

    def write_format_data(self, format_dict, md_dict=None):
        sys.stdout.flush()
        send({"t": "display", "data": format_dict, "main": True})


class Shell(InteractiveShell):
    display_pub_class = Type(Publisher)
    displayhook_class = Type(Hook)

    def _showtraceback(self, etype, evalue, stb):
        sys.stdout.flush()
        send({"t": "error", "ename": getattr(etype, "__name__", str(etype)), "evalue": str(evalue), "traceback": stb})


def on_sigint(_signum, _frame):
    if RUNNING[0]:
        raise KeyboardInterrupt


def execute(shell, req):
    env = req.get("env") or {}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    silent = bool(req.get("silent"))
    try:
        if not silent:
            send({"t": "count", "n": shell.execution_count})
        RUNNING[0] = True
        try:
            shell.run_cell(req["code"], store_history=not silent, silent=silent)
        finally:
            RUNNING[0] = False
    except KeyboardInterrupt:
        # Between run_cell's end and the flag's reset: the cell is over anyway.
        pass
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        sys.stdout.flush()
        sys.stderr.flush()
        send({"t": "done"})


def main(fd):
    global CHANNEL
    # Not handed on to what the cell starts: the server sees the kernel's end as this socket's.
    os.set_inheritable(fd, False)
    CHANNEL = socket.socket(fileno=fd)
    sys.stdout = Stream("stdout", 1)
    sys.stderr = Stream("stderr", 2)
    signal.signal(signal.SIGINT, on_sigint)
    # History in memory only (Out, _ and execution counts work): IPython's SQLite file costs ~3 ms a cell.
    config = Config()
    config.HistoryManager.enabled = False
    shell = Shell.instance(config=config)
    reader = CHANNEL.makefile("rb")
    for line in reader:
        req = json.loads(line)
        if req.get("op") == "execute":
            execute(shell, req)


if __name__ == "__main__":
    main(int(sys.argv[1]))
