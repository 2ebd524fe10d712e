"""No credential handed on (issue 56), from Python: a presigned URL that
neff.NeffInfo reads through a redirect to another origin hands that origin
no signature, token or Referer, and neff.scan's catalogue keys a URL with
its selectors (versionId) but not its signature. The servers are the test's
own (http.server on loopback), recording every request they receive."""

import os
import sqlite3
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import neff
from conftest import ROOT, neff_bin

FIXTURE = os.path.join(ROOT, "fixtures", "acc", "cc-replica-groups-gz.neff")
SECRETS = ("SIGSECRET", "CREDSECRET", "TOKSECRET")


def serve(host, answer):
    """A server on `host` calling `answer(handler)` for every GET, and the
    list of (request line, {header: value}) it received."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.requestline, {k.lower(): v for k, v in self.headers.items()}))
            answer(self)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer((host, 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://{host}:{server.server_address[1]}", seen


def send_file(h, data, etag=None):
    """`data` as a server of files answers the handler `h` (Range honoured)."""
    rng = h.headers.get("Range")
    if rng:
        a, b = rng[len("bytes="):].split("-")
        a, b = int(a), min(int(b) if b else len(data) - 1, len(data) - 1)
        h.send_response(206)
        h.send_header("Content-Range", f"bytes {a}-{b}/{len(data)}")
        body = data[a:b + 1]
    else:
        h.send_response(200)
        body = data
    if etag:
        h.send_header("ETag", f'"{etag}"')
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


def test_a_presigned_url_redirected_to_another_origin_hands_it_no_credential():
    with open(FIXTURE, "rb") as f:
        data = f.read()
    target, target_url, got = serve("127.0.0.2", lambda h: send_file(h, data, "v1"))

    def moved(h):
        h.send_response(307)
        h.send_header("Location", target_url + h.path.split("?")[0])
        h.send_header("Content-Length", "0")
        h.end_headers()

    origin, origin_url, asked = serve("127.0.0.1", moved)
    try:
        url = (f"{origin_url}/x.neff?X-Amz-Credential=CREDSECRET"
               "&X-Amz-Security-Token=TOKSECRET&X-Amz-Signature=SIGSECRET")
        assert neff.NeffInfo(url).getCCRankWorldSize() == neff.NeffInfo(FIXTURE).getCCRankWorldSize()
        assert asked and all("SIGSECRET" in line for line, _ in asked)
        assert got
        for line, headers in got:
            assert "?" not in line, line
            bad = [k for k in headers
                   if k in ("authorization", "referer", "cookie") or k.startswith("x-amz-")]
            assert bad == [], headers
            assert not any(s in repr((line, headers)) for s in SECRETS)
    finally:
        origin.shutdown()
        target.shutdown()


def raw_neff(tmp_path, name, groups):
    """A raw NEFF whose def.json has the replica groups `groups`."""
    d = tmp_path / name
    (d / "sg00").mkdir(parents=True)
    (d / "neff.json").write_text('{"tvm":[]}')
    (d / "sg00" / "def.json").write_text('{"replica_groups":[[%s]],"var":{}}' % groups)
    out = tmp_path / f"{name}.neff"
    subprocess.run([neff_bin(), "pack", str(d), "-o", str(out), "--no-gzip"], check=True)
    return out.read_bytes()


@pytest.fixture()
def versions(tmp_path):
    four = raw_neff(tmp_path, "four", "[0,1,2,3]")
    eight = raw_neff(tmp_path, "eight", "[0,1,2,3,4,5,6,7]")
    assert len(four) == len(eight)
    by_version = {"a": four, "b": eight}

    def answer(h):
        v = "b" if "versionId=b" in h.path else "a"
        send_file(h, by_version[v], etag=v if h.path.startswith("/etag/") else None)

    server, url, seen = serve("127.0.0.1", answer)
    yield url, seen
    server.shutdown()


def test_scan_keys_a_url_with_its_selectors_never_its_signature(versions, tmp_path):
    base, seen = versions
    db = str(tmp_path / "zoo.db")

    def cc(url):
        (r,) = list(neff.scan([url], index=db))
        assert r["ok"], r
        return r["cc_world_size"]

    def signed(v, sig):
        return (f"{base}/etag/x.neff?versionId={v}&X-Amz-Credential=CREDSECRET"
                f"&X-Amz-Date={sig}&X-Amz-Signature={sig}SIGSECRET")

    # No validator: each URL its own answer, no row kept.
    assert cc(f"{base}/bare/x.neff?versionId=a") == 4
    assert cc(f"{base}/bare/x.neff?versionId=b") == 8
    # An ETag: a row per version...
    assert cc(signed("a", "1")) == 4
    assert cc(signed("b", "1")) == 8
    keys = [k for (k,) in sqlite3.connect(db).execute("SELECT key FROM neffs ORDER BY key")]
    assert keys == [f"{base}/etag/x.neff?versionId=a", f"{base}/etag/x.neff?versionId=b"]
    # ... and a URL signed again answered from its row (one request: the
    # first byte, for the ETag).
    before = len(seen)
    assert cc(signed("a", "2")) == 4
    assert len(seen) - before == 1
    assert seen[-1][1].get("range") == "bytes=0-0"
