#!/usr/bin/env python3
"""A small HTTP proxy that injects faults between `neff` and a real server
(moto_server or nginx), for tests/remote.rs. Started by scripts/servers.

    fault_proxy.py PORT STATE_DIR UPSTREAM_S3 UPSTREAM_HTTP

A request for /<upstream>/<mode>/<rest> (upstream `s3` or `http`) is sent to
that upstream as /<rest>, with the fault <mode> applied:

  ok        passed through
  503xN     the first N requests for this path answer 503, then passed through
  503       every request answers 503 (a storm)
  403       every request answers 403 AccessDenied (credentials refused)
  truncate  half the body is sent, then the connection is closed
  norange   the Range header is dropped (the server answers 200, whole body)
  rangexN[-TAG]  the first N requests for this path keep their Range, later
            ones have it dropped (a server that stops honouring Range in
            the middle of a read); TAG only makes a counter of its own
  liesize   Content-Range announces an object twice its real size
  stall     nothing is sent for 120 s (a slow server)
  slow      each request waits 1 s, then passes through (latency: shows
            whether requests are in flight together)
  delayMS   each request waits MS milliseconds, then passes through (a
            bucket MS ms away: `delay25`)
  replace   the first request is passed through; later ones are answered
            from /<rest>.v2 (the object replaced between two reads)
  presigned as a URL presigned for GET: a request other than GET, or one
            whose query lacks `X-Amz-Signature=sig`, answers 403
  reset     half the body is sent, then the connection is reset (RST)
  resetxN   the first N requests for this path are reset mid-body, then
            passed through
  bwN       bodies are sent at N MB/s in all (one budget shared by every
            connection of this mode: a link of that bandwidth)

Modes combine with `+`: `delay25+503x2`, `delay50+reset`, `delay25+bw100`
(a bucket 25 ms away on a 100 MB/s link).

A ranged GET the upstream answers 200 with a Content-Range (rclone serve
s3 does) is answered 206, as S3 answers it.

/health answers 200; every request is logged to STATE_DIR/proxy.log as
`METHOD PATH RANGE STATUS BYTES` (BYTES `aborted` when the client closed
the connection before the body was sent).
"""

import http.client
import os
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import urllib.parse
from urllib.parse import urlsplit

PORT, STATE = int(sys.argv[1]), sys.argv[2]
UPSTREAMS = {"s3": urlsplit(sys.argv[3]), "http": urlsplit(sys.argv[4])}
COUNTS = {}
LOCK = threading.Lock()
LOG = open(os.path.join(STATE, "proxy.log"), "a", buffering=1)
HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


# Bandwidth budgets of the `bwN` modes, by mode: the time (monotonic) at
# which the link is next free.
LINKS = {}


def paced(mode, mb_per_s, data, out):
    """Writes `data` to `out` in 64 KiB chunks, each waiting its turn on
    the link of `mode` (shared by every connection of it) at `mb_per_s`."""
    chunk = 64 << 10
    per_byte = 1.0 / (mb_per_s * 1e6)
    for at in range(0, len(data), chunk):
        piece = data[at:at + chunk]
        with LOCK:
            now = time.monotonic()
            start = max(now, LINKS.get(mode, now))
            LINKS[mode] = start + len(piece) * per_byte
        if start > now:
            time.sleep(start - now)
        out.write(piece)


# Each handler thread keeps one connection to each upstream alive (a
# client's connection is served by one thread): a new connection a
# request cost the proxy and the server more than the request itself.
UPSTREAM_CONNS = threading.local()


def upstream_request(upstream, command, rest, body, headers):
    """`command rest` sent to `upstream` on this thread's kept connection
    (a new one if it was closed): the response and its whole body."""
    conns = UPSTREAM_CONNS.__dict__.setdefault("conns", {})
    key = (upstream.hostname, upstream.port)
    for attempt in (0, 1):
        conn = conns.get(key)
        fresh = conn is None
        if fresh:
            conn = conns[key] = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=60)
        try:
            conn.request(command, rest, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        except (http.client.HTTPException, OSError):
            conn.close()
            conns.pop(key, None)
            # A kept connection the server closed meanwhile: once more on a new one.
            if fresh or attempt == 1:
                raise
            continue
        if resp.will_close:
            conn.close()
            conns.pop(key, None)
        return resp, data


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: with Nagle's algorithm the
    # second waits for the client's delayed ACK (40 ms a request).
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def note(self, status, sent):
        # The request's arrival (monotonic seconds) before the bytes sent,
        # which stay last.
        arrived = getattr(self, "arrived", time.monotonic())
        LOG.write(
            f"{self.command} {self.path} {self.headers.get('Range', '-')} {status} "
            f"{arrived:.3f} {sent}\n"
        )

    def do_HEAD(self):
        self.handle_any()

    def do_GET(self):
        self.handle_any()

    def do_PUT(self):
        self.handle_any()

    def do_POST(self):
        self.handle_any()

    def plain(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.note(status, len(body))

    def handle_any(self):
        self.arrived = time.monotonic()
        if self.path == "/health":
            return self.plain(200, b"ok")
        parts = self.path.split("/", 3)
        if len(parts) < 4 or parts[1] not in UPSTREAMS:
            return self.plain(404, b"no such route")
        upstream, mode, rest = UPSTREAMS[parts[1]], parts[2], "/" + parts[3]
        # A client may send the `+` between modes escaped (boto3 does).
        mode = urllib.parse.unquote(mode)
        modes = mode.split("+")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        with LOCK:
            key = (mode, rest.split("?")[0])
            COUNTS[key] = COUNTS.get(key, 0) + 1
            n = COUNTS[key]
        def has(name):
            return name in modes

        def counted(prefix):
            # The N of a mode `prefixN` (`503x2`: 2), or None.
            for m in modes:
                if m.startswith(prefix) and m[len(prefix):].split("-")[0].isdigit():
                    return int(m[len(prefix):].split("-")[0])
            return None

        for m in modes:
            if m.startswith("delay") and m[5:].isdigit():
                time.sleep(int(m[5:]) / 1000)
        if has("503") or (counted("503x") is not None and n <= counted("503x")):
            return self.plain(503, b"<Error><Code>SlowDown</Code></Error>")
        if has("403"):
            return self.plain(403, b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>")
        if has("presigned"):
            query = rest.partition("?")[2]
            if self.command != "GET" or "X-Amz-Signature=sig" not in query.split("&"):
                return self.plain(403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>")
        if has("stall"):
            time.sleep(120)
            return self.plain(503)
        if has("slow"):
            time.sleep(1.0)
        if has("replace") and n > 1:
            path, _, query = rest.partition("?")
            rest = path + ".v2" + ("?" + query if query else "")
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        if has("norange") or (counted("rangex") is not None and n > counted("rangex")):
            headers.pop("Range", None)
            headers.pop("range", None)
        resp, data = upstream_request(upstream, self.command, rest, body, headers)
        status = resp.status
        # rclone serve s3 (gofakes3) answers a ranged GET with its range
        # and Content-Range but status 200; S3 says 206.
        if status == 200 and resp.getheader("Content-Range") and any(k.lower() == "range" for k in headers):
            status = 206
        self.send_response(status)
        for k, v in resp.getheaders():
            if k.lower() in HOP or k.lower() == "content-length":
                continue
            if k.lower() == "content-range" and has("liesize"):
                head, _, total = v.rpartition("/")
                if total.isdigit():
                    v = f"{head}/{int(total) * 2}"
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        reset = has("reset") or (counted("resetx") is not None and n <= counted("resetx"))
        if has("truncate"):
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command == "HEAD":
            return self.note(status, 0)
        if has("truncate"):
            data = data[: len(data) // 2]
            self.wfile.write(data)
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
        elif reset and len(data) > 1:
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            # SO_LINGER 0: close sends RST, not FIN (a connection reset
            # mid-body, as a load balancer or a NAT does).
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return self.note(status, "reset")
        else:
            try:
                rate = counted("bw")
                if rate:
                    paced(mode, rate, data, self.wfile)
                else:
                    self.wfile.write(data)
            except OSError:
                # The client closed before the body was sent (it refused
                # the response on its headers): logged all the same.
                self.close_connection = True
                return self.note(status, "aborted")
        self.note(status, len(data))


if __name__ == "__main__":
    ThreadingHTTPServer.daemon_threads = True
    # socketserver's listen backlog is 5: a client opening 32 connections
    # at once had most of its SYNs dropped and sent again 1 s later.
    ThreadingHTTPServer.request_queue_size = 256
    ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
