#!/usr/bin/env python3
"""A local stand-in for the Hugging Face hub's HTTP API, for the hf:// tests
(tests/it/remote.rs). Started by scripts/servers.

    hub_server.py PORT SEED_DIR TOKEN

Serves SEED_DIR as the model repository `neff/zoo` and the dataset
`neff/zoo-data` at revision `main` (and `v1`, the same files), as the hub
does:

  GET /api/{models|datasets}/ORG/REPO/tree/REV/PATH?recursive=true
        the files and directories under PATH, as JSON, 25 per page, the next
        page named by `Link: <…>; rel="next"`; a file's `oid` is its git
        blob id; files over 64 KiB have an `lfs` object (oid = their
        SHA-256, size), as LFS files do
  GET /[datasets/]ORG/REPO/resolve/REV/PATH
        a small file's bytes; an LFS file answers 302 to /cdn/SHA256, which
        serves it (the hub's CDN); both honour one `Range: bytes=A-B` (206,
        Content-Range), with an ETag and Last-Modified

Under `faults/` (not in the seed) are three files the listing names, each
wrong when read: `ghost.neff` (gone: 404), `loop.neff` (a redirect to
itself) and `short.neff` (listed at 5,000 bytes, 100 long).

Every request needs `Authorization: Bearer TOKEN` (a gated repository; the
CDN's signed URLs excepted): 401 otherwise. A path outside the repository,
another repository or revision: 404. Requests are logged to
SEED_DIR/../hub.log as `METHOD PATH STATUS BYTES`.
"""

import email.utils
import hashlib
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, SEED, TOKEN = int(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
REPOS = {("models", "neff/zoo"), ("datasets", "neff/zoo-data")}
REVS = {"main", "v1"}
PAGE = 25
LFS_FROM = 64 << 10
FAULTS = ["ghost.neff", "loop.neff", "short.neff"]
LOG = open(os.path.join(os.path.dirname(SEED), "hub.log"), "a", buffering=1)
SHAS = {}
LOCK = threading.Lock()


def sha256(path):
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns)
    with LOCK:
        if key in SHAS:
            return SHAS[key]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    with LOCK:
        SHAS[key] = h.hexdigest()
    return SHAS[key]


def git_blob(path):
    """The file's git blob id, as the hub gives a file kept in git: SHA-1
    of `blob <size>\\0` and its bytes."""
    with open(path, "rb") as f:
        data = f.read()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def inside(rel):
    p = os.path.realpath(os.path.join(SEED, rel))
    return p if p == SEED or p.startswith(SEED + os.sep) else None


class Hub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        LOG.write(f"{self.command} {self.path} {status} {len(body)}\n")

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/")[1:]]
        if parts[:1] == ["cdn"] and len(parts) == 2:
            return self.cdn(parts[1])
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self.answer(401, b'{"error":"Invalid credentials in Authorization header"}')
        if parts[:1] == ["api"] and len(parts) >= 6 and parts[4] == "tree":
            kind, repo, rev, rel = parts[1], "/".join(parts[2:4]), parts[5], "/".join(parts[6:])
            return self.tree(kind, repo, rev, rel, urllib.parse.parse_qs(url.query))
        kind = "models"
        if parts[:1] == ["datasets"]:
            kind, parts = "datasets", parts[1:]
        if len(parts) >= 5 and parts[2] == "resolve":
            return self.resolve(kind, "/".join(parts[:2]), parts[3], "/".join(parts[4:]))
        self.answer(404, b'{"error":"not found"}')

    def tree(self, kind, repo, rev, rel, query):
        if (kind, repo) not in REPOS or rev not in REVS:
            return self.answer(404, b'{"error":"Repository not found"}')
        if rel.strip("/") == "faults":
            items = [{"type": "file", "oid": "f%d" % i, "size": 5000, "path": "faults/" + n}
                     for i, n in enumerate(FAULTS)]
            return self.answer(200, json.dumps(items).encode(), [("Content-Type", "application/json")])
        top = inside(rel.strip("/"))
        if top is None or not os.path.exists(top):
            return self.answer(404, b'{"error":"Entry not found"}')
        items = []
        for d, dirs, files in os.walk(top):
            dirs.sort()
            for n in dirs:
                items.append({"type": "directory", "oid": "0" * 40, "size": 0,
                              "path": os.path.relpath(os.path.join(d, n), SEED)})
            for n in sorted(files):
                p = os.path.join(d, n)
                size = os.path.getsize(p)
                # (an LFS file's own oid is its pointer's: a stand-in here)
                oid = git_blob(p) if size < LFS_FROM else hashlib.sha1(p.encode()).hexdigest()
                item = {"type": "file", "oid": oid, "size": size,
                        "path": os.path.relpath(p, SEED)}
                if size >= LFS_FROM:
                    item["size"] = 134  # the pointer's size, as the hub gives it
                    item["lfs"] = {"oid": sha256(p), "size": size, "pointerSize": 134}
                items.append(item)
        at = int(query.get("cursor", ["0"])[0])
        page = items[at:at + PAGE]
        headers = [("Content-Type", "application/json")]
        if at + PAGE < len(items):
            q = urllib.parse.urlencode({"recursive": "true", "expand": "false", "cursor": at + PAGE})
            host = self.headers.get("Host")
            headers.append(("Link", f'<http://{host}{urllib.parse.urlsplit(self.path).path}?{q}>; rel="next"'))
        self.answer(200, json.dumps(page).encode(), headers)

    def resolve(self, kind, repo, rev, rel):
        if (kind, repo) not in REPOS or rev not in REVS:
            return self.answer(404, b'{"error":"Repository not found"}')
        if rel == "faults/ghost.neff":
            return self.answer(404, b'{"error":"Entry not found"}')
        if rel == "faults/loop.neff":
            return self.answer(302, b"", [("Location", self.path)])
        if rel == "faults/short.neff":
            self.send_bytes(b"NEFF" + bytes(96), "short")
            return
        p = inside(rel)
        if p is None or not os.path.isfile(p):
            return self.answer(404, b'{"error":"Entry not found"}')
        if os.path.getsize(p) >= LFS_FROM:
            sha = sha256(p)
            return self.answer(302, b"", [("Location", f"/cdn/{sha}"), ("X-Linked-Etag", f'"{sha}"'),
                                          ("X-Linked-Size", str(os.path.getsize(p)))])
        self.send_file(p, git_blob(p))

    def cdn(self, sha):
        for d, _, files in os.walk(SEED):
            for n in files:
                p = os.path.join(d, n)
                if os.path.getsize(p) >= LFS_FROM and sha256(p) == sha:
                    return self.send_file(p, sha)
        self.answer(404, b"")

    def send_file(self, p, etag):
        with open(p, "rb") as f:
            self.send_range(f, os.path.getsize(p), etag, os.path.getmtime(p))

    def send_bytes(self, data, etag):
        import io
        self.send_range(io.BytesIO(data), len(data), etag, 0)

    def send_range(self, f, size, etag, mtime):
        headers = [("ETag", f'"{etag}"'), ("Accept-Ranges", "bytes"),
                   ("Last-Modified", email.utils.formatdate(mtime, usegmt=True))]
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            a, _, b = rng[6:].partition("-")
            start = int(a) if a else max(0, size - int(b))
            end = min(int(b), size - 1) if (a and b) else size - 1
            if start >= size or start > end:
                return self.answer(416, b"", [("Content-Range", f"bytes */{size}")])
            f.seek(start)
            body = f.read(end - start + 1)
            headers.append(("Content-Range", f"bytes {start}-{end}/{size}"))
            return self.answer(206, body, headers)
        self.answer(200, f.read(), headers)


if __name__ == "__main__":
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(("127.0.0.1", PORT), Hub).serve_forever()
