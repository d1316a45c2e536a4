#!/usr/bin/env python3
"""mute_server.py SECONDS -- accept TCP connections on 127.0.0.1 and never
answer: a database server that hangs. Prints its port, exits after
SECONDS."""
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
conns = []
end = time.time() + float(sys.argv[1])
s.settimeout(0.2)
while time.time() < end:
    try: conns.append(s.accept()[0])
    except socket.timeout: pass
