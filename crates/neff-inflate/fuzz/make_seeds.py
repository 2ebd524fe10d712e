#!/usr/bin/env python3
"""Writes the seed corpus of the `inflate` fuzz target (corpus/inflate):
gzip inputs of the shapes users meet, made by gzip, pigz (when installed)
and Python's zlib, then cut, corrupted and padded. Deterministic; small."""
import gzip, os, random, shutil, subprocess, sys, zlib

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "inflate")
os.makedirs(out, exist_ok=True)
rng = random.Random(36)

def noise(n):
    return bytes(rng.getrandbits(8) for _ in range(n))

text = b"".join(b"member %d of a tar stream, sg00/def.json {\"x\": %d}\n" % (i, i * i) for i in range(600))
shapes = {
    "text": text,
    "noise": noise(40000),
    "zeros": bytes(60000),
    "mixed": text[:9000] + noise(9000) + bytes(9000) + text[9000:18000],
    "empty": b"",
    "one": b"x",
}

def put(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)

def raw(data, level, strategy=zlib.Z_DEFAULT_STRATEGY, wbits=-15):
    c = zlib.compressobj(level, zlib.DEFLATED, wbits, 9, strategy)
    return c.compress(data) + c.flush()

def member(data, level=6, flags=0, extra=b"", strategy=zlib.Z_DEFAULT_STRATEGY):
    head = bytes([0x1F, 0x8B, 8, flags, 0, 0, 0, 0, 0, 255]) + extra
    trailer = (zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "little") + (len(data) & 0xFFFFFFFF).to_bytes(4, "little")
    return head + raw(data, level, strategy) + trailer

for name, data in shapes.items():
    for level in (0, 1, 6, 9):
        put(f"py-{name}-{level}", gzip.compress(data, level, mtime=0))
    put(f"huffman-{name}", member(data, 6, strategy=zlib.Z_HUFFMAN_ONLY))
    put(f"rle-{name}", member(data, 6, strategy=zlib.Z_RLE))
    put(f"fixed-{name}", member(data, 6, strategy=zlib.Z_FIXED))
    if shutil.which("gzip"):
        put(f"gzip-{name}", subprocess.run(["gzip", "-9n"], input=data, capture_output=True, check=True).stdout)
    if shutil.which("pigz"):
        put(f"pigz-{name}", subprocess.run(["pigz", "-b", "32", "-n"], input=data, capture_output=True, check=True).stdout)

t = gzip.compress(text, 6, mtime=0)
m = gzip.compress(shapes["mixed"], 1, mtime=0)
put("two-members", t + m)
put("members-and-padding", t + bytes(17) + m + bytes(512))
put("garbage-after", t + b"garbage!")
put("truncated-half", t[: len(t) // 2])
put("truncated-trailer", t[:-3])
bad = bytearray(t); bad[-6] ^= 0xFF; put("bad-crc", bytes(bad))
bad = bytearray(t); bad[-2] ^= 0x01; put("bad-isize", bytes(bad))
bad = bytearray(t); bad[len(t) // 2] ^= 0x10; put("bit-flip", bytes(bad))
put("reserved-flag", member(text, 6, flags=0x20))
put("fname-fcomment", member(text, 6, flags=0x18, extra=b"model.tar\0a comment\0"))
put("fextra-fhcrc", member(text, 6, flags=0x06, extra=b"\x04\0abcd" + b"\0\0"))
put("stored-then-text", member(noise(70000) + text, 6))
print(len(os.listdir(out)), "seeds in", out)
