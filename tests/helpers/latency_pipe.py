#!/usr/bin/env python3
"""A TCP pipe that puts a server MS milliseconds away: every byte a client
sends reaches the server MS ms later (in order), what the server answers
comes back at once (a ranged GET's `200` with a Content-Range, as rclone
serve s3 answers, passed on as the `206` S3 gives). Each HTTP request therefore costs one more MS, as
behind the fault proxy's `delayMS` mode, but nothing is parsed, buffered
whole or sent on a new connection: one asyncio loop moves the bytes, and
its ceiling is far above the threaded fault proxy's (bench/bucket_scale.py
measures both). Started by `scripts/servers bucket`.

    latency_pipe.py PORT UPSTREAM_PORT MS LOG

The client talks to the server as if directly (no path prefix: an S3
client's signature holds). LOG gets one line per request seen
(`METHOD TARGET ARRIVAL`, arrival in CLOCK_MONOTONIC seconds, as the fault
proxy writes it; a request is a chunk from the client that starts with an
HTTP method, as a client that waits for each answer sends it) and one per
closed connection (`CLOSED DOWN_BYTES UP_BYTES`).
"""

import asyncio
import sys
import time

PORT, UPSTREAM, DELAY, LOG = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) / 1000, sys.argv[4]
METHODS = (b"GET ", b"HEAD ", b"PUT ", b"POST ", b"DELETE ")
CHUNK = 256 << 10
log = open(LOG, "a", buffering=1)


async def up(reader, writer, counts, methods):
    """Client to server: each chunk sent DELAY after it arrived, in order."""
    queue = asyncio.Queue()

    async def send():
        while True:
            at, data = await queue.get()
            if data is None:
                break
            wait = at + DELAY - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.write_eof() if writer.can_write_eof() else None

    sender = asyncio.ensure_future(send())
    try:
        while True:
            data = await reader.read(CHUNK)
            now = time.monotonic()
            if not data:
                break
            counts[1] += len(data)
            if data.startswith(METHODS):
                line = data.split(b"\r\n", 1)[0].decode("latin-1").rsplit(" ", 1)[0]
                log.write(f"{line} {now:.3f}\n")
                methods.append(data.split(b" ", 1)[0].rstrip())
            queue.put_nowait((now, data))
    except (ConnectionError, OSError):
        pass
    queue.put_nowait((0, None))
    try:
        await sender
    except (ConnectionError, OSError):
        pass


async def copy(reader, writer, n, counts):
    while n > 0:
        data = await reader.read(min(n, CHUNK))
        if not data:
            raise ConnectionError("the server closed mid-body")
        n -= len(data)
        counts[0] += len(data)
        writer.write(data)
        await writer.drain()


async def down(reader, writer, counts, methods):
    """Server to client, as it comes, response by response: a ranged GET
    answered `200` with a Content-Range (rclone serve s3 does so) is
    passed on as `206 Partial Content`, as S3 answers it."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            counts[0] += len(head)
            lines = head.split(b"\r\n")
            status = int(lines[0].split(b" ")[1])
            headers = {}
            for l in lines[1:]:
                k, _, v = l.partition(b":")
                headers[k.strip().lower()] = v.strip()
            method = methods.pop(0) if methods else b"GET"
            if status == 200 and b"content-range" in headers:
                head = lines[0].replace(b" 200 OK", b" 206 Partial Content", 1) + b"\r\n" + \
                    b"\r\n".join(lines[1:])
            writer.write(head)
            if method == b"HEAD" or status in (204, 304) or status < 200:
                pass
            elif b"content-length" in headers:
                await copy(reader, writer, int(headers[b"content-length"]), counts)
            elif headers.get(b"transfer-encoding", b"").lower() == b"chunked":
                while True:
                    line = await reader.readuntil(b"\r\n")
                    writer.write(line)
                    size = int(line.split(b";")[0], 16)
                    if size == 0:
                        while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
                            writer.write(line)
                        writer.write(line)
                        break
                    await copy(reader, writer, size + 2, counts)
            else:
                while data := await reader.read(CHUNK):
                    counts[0] += len(data)
                    writer.write(data)
                    await writer.drain()
                break
            await writer.drain()
    except (ConnectionError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
            ValueError, IndexError):
        pass
    writer.close()


# The connections' tasks: asyncio holds a task only weakly, and one
# collected while it waits drops its connection mid-request.
TASKS = set()


async def serve(client_r, client_w):
    task = asyncio.current_task()
    TASKS.add(task)
    try:
        await pipe(client_r, client_w)
    finally:
        TASKS.discard(task)


async def pipe(client_r, client_w):
    try:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", UPSTREAM, limit=1 << 20)
    except OSError:
        client_w.close()
        return
    counts, methods = [0, 0], []
    await asyncio.gather(up(client_r, server_w, counts, methods),
                         down(server_r, client_w, counts, methods))
    server_w.close()
    log.write(f"CLOSED {counts[0]} {counts[1]}\n")


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", PORT, backlog=1024)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
