"""Writes a dataset directory of uniformly random token ids in the engine's format (docs/formats.md:
manifest.json, train_000000.bin, val_000000.bin), for throughput runs of a model whose vocabulary no
tokenizer here has (GPT-2 124M, vocab 50304). Plain Python (no numpy), so it runs on any machine.

usage: synthetic_tokens.py OUT_DIR [--vocab 50304] [--train-tokens 2097152] [--val-tokens 131072] [--seed 0]
       synthetic_tokens.py OUT_DIR --vocab 50304 --from-dataset BYTE_DATASET_DIR

--from-dataset re-labels a prepared dataset's tokens (e.g. tinyshakespeare, byte tokenizer: ids
0..256) as a dataset of the larger vocabulary, so that a run of a 50304-token model learns
something (its loss falls from ln 50304 = 10.83) instead of staying at ln V on uniform noise.

The manifest says tokenizer kind "byte" (the engine loads a tokenizer for every dataset; runs on this
data must keep train.sample_interval 0, since the byte tokenizer cannot decode ids above 256) with
tokenizer.vocab_size = --vocab, which is what the trainer checks against model.vocab_size.
"""
import argparse
import array
import json
import os
import random
import struct
import sys
import zlib


def write_shard(path, tokens, width):
    """One shard: 64-byte header (magic TDSHARD1, version 1, width, count, CRC-32 of the payload),
    then little-endian uint16/uint32 tokens. Returns the payload's CRC-32."""
    payload = tokens.tobytes()
    if sys.byteorder != "little":
        swapped = array.array(tokens.typecode, tokens)
        swapped.byteswap()
        payload = swapped.tobytes()
    crc = zlib.crc32(payload) & 0xFFFFFFFF
    header = b"TDSHARD1" + struct.pack("<IIQI", 1, width, len(tokens), crc) + bytes(36)
    assert len(header) == 64
    with open(path + ".tmp", "wb") as f:
        f.write(header)
        f.write(payload)
    os.replace(path + ".tmp", path)
    return crc


def random_tokens(n, vocab, rng, typecode):
    """n ids uniform in [0, vocab) (rejection sampling of 16/32-bit random words)."""
    out = array.array(typecode)
    bits = 16 if typecode == "H" else 32
    limit = (1 << bits) // vocab * vocab
    while len(out) < n:
        words = array.array(typecode, rng.randbytes((bits // 8) * (n - len(out) + 16)))
        out.extend(w % vocab for w in words if w < limit)
    del out[n:]
    return out


def read_split(dataset, manifest, split, typecode):
    """Every token of a prepared dataset's split, in shard order (headers and CRCs checked)."""
    out = array.array(typecode)
    width = array.array(typecode).itemsize
    for shard in manifest["splits"][split]["shards"]:
        name = shard["file"]
        if os.path.basename(name) != name or not name.endswith(".bin"):
            sys.exit("error: %s: shard name %r is not a plain file name" % (dataset, name))
        with open(os.path.join(dataset, name), "rb") as f:
            header, payload = f.read(64), f.read()
        magic, (version, w, count, crc) = header[:8], struct.unpack("<IIQI", header[8:28])
        if magic != b"TDSHARD1" or version != 1 or len(payload) != count * w or zlib.crc32(payload) & 0xFFFFFFFF != crc:
            sys.exit("error: %s/%s is not a valid shard (header or CRC): prepare the dataset again" % (dataset, name))
        tokens = array.array({2: "H", 4: "I"}[w], payload)
        if sys.byteorder != "little":
            tokens.byteswap()
        out.extend(tokens) if width == w else out.extend(int(t) for t in tokens)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--train-tokens", type=int, default=2 * 1024 * 1024)
    ap.add_argument("--val-tokens", type=int, default=128 * 1024)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--from-dataset", help="a prepared dataset whose tokens to re-label (instead of random ones)")
    a = ap.parse_args()
    if not 2 <= a.vocab <= 1 << 24:
        sys.exit("error: --vocab must be in [2, 16777216]")
    width, typecode, dtype = (2, "H", "uint16") if a.vocab <= 65536 else (4, "I", "uint32")
    if array.array(typecode).itemsize != width:
        sys.exit("error: this Python's array('%s') is not %d bytes" % (typecode, width))
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    splits = {}
    source = None
    if a.from_dataset:
        with open(os.path.join(a.from_dataset, "manifest.json")) as f:
            source = json.load(f)
        if source["tokenizer"]["vocab_size"] > a.vocab:
            sys.exit("error: %s has vocabulary %d, more than --vocab %d" % (a.from_dataset, source["tokenizer"]["vocab_size"], a.vocab))
    for split, n in (("train", a.train_tokens), ("val", a.val_tokens)):
        name = split + "_000000.bin"
        tokens = read_split(a.from_dataset, source, split, typecode) if source else random_tokens(n, a.vocab, rng, typecode)
        n = len(tokens)
        crc = write_shard(os.path.join(a.out, name), tokens, width)
        splits[split] = {"tokens": n, "shards": [{"file": name, "tokens": n, "crc32": "%08x" % crc}]}
    manifest = {
        "format": "traindeck-dataset",
        "format_version": 1,
        "created_by": "bench/gpu/synthetic_tokens.py",
        "tokenizer": {"kind": "byte", "vocab_size": a.vocab, "eot_id": 256},
        "token_dtype": dtype,
        "val_fraction": splits["val"]["tokens"] / float(splits["train"]["tokens"] + splits["val"]["tokens"]),
        "options": {"synthetic": source is None, "from_dataset": a.from_dataset or "", "seed": a.seed, "vocab_size": a.vocab},
        "bytes_read": 0,
        "sources": [],
        "skipped": [],
        "splits": splits,
    }
    with open(os.path.join(a.out, "manifest.json.tmp"), "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(os.path.join(a.out, "manifest.json.tmp"), os.path.join(a.out, "manifest.json"))
    print("%s dataset %s: vocab %d, %d train + %d val tokens (%s)" % (
        "re-labelled " + a.from_dataset if source else "synthetic", a.out, a.vocab, splits["train"]["tokens"], splits["val"]["tokens"], dtype))


if __name__ == "__main__":
    main()
