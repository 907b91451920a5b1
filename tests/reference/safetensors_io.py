"""An independent reader and writer of the safetensors format, for the tests.

Format (https://huggingface.co/docs/safetensors): 8-byte little-endian header length N, N bytes
of JSON header {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
then the raw little-endian tensor data. Written from the specification, not from the engine's code.
"""
import json
import struct

import torch

_DTYPES = {"F32": (torch.float32, 4), "F64": (torch.float64, 8)}


def read(path):
    """Returns ({name: tensor}, metadata) for a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, e in header.items():
        dtype, size = _DTYPES[e["dtype"]]
        begin, end = e["data_offsets"]
        count = 1
        for s in e["shape"]:
            count *= s
        assert end - begin == count * size, f"{name}: {end - begin} bytes for {count} elements"
        t = torch.frombuffer(bytearray(data[base + begin : base + end]), dtype=dtype)
        out[name] = t.reshape(e["shape"]).clone()
    return out, meta


def write(path, tensors, metadata=None):
    """Writes {name: tensor} as F32 in the given order."""
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        b = t.detach().to(torch.float32).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
