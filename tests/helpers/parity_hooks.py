"""parity_hooks.py -- a webhook receiver for the tests of notices
(history-notify, history-bisect): an HTTP server on 127.0.0.1 that
records what is POSTed, and answers as its mode says: ok (200 at once),
slow (after 2 s), flaky (503, then 200), refuse (400), hang (never in
time)."""
import http.server
import socket
import threading
import time


class Receiver:
    """An HTTP server on 127.0.0.1 that records what is POSTed."""

    def __init__(self, mode):
        self.mode, self.bodies, self.requests = mode, [], 0
        self.lock = threading.Lock()
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.server = None
        self.url = "http://127.0.0.1:%d/hook/%s" % (self.port, mode)

    def start(self):
        me = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                with me.lock:
                    me.requests += 1
                    first = me.requests == 1
                if me.mode == "slow":
                    time.sleep(2)
                if me.mode == "hang":
                    time.sleep(60)
                code = (400 if me.mode == "refuse" else
                        503 if me.mode == "flaky" and first else 200)
                if code == 200:
                    with me.lock:
                        me.bodies.append((self.headers.get("Content-Type"),
                                          body.decode()))
                self.send_response(code)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()

    def notices(self):
        with self.lock:
            return list(self.bodies)

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
