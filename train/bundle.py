"""Read and write Drape model bundles (docs/design.md §3).

A bundle is a standard safetensors file: an 8-byte little-endian header length,
a JSON header ({name: {"dtype", "shape", "data_offsets"}} plus "__metadata__"
{"drape.config": <JSON string>}), then the raw little-endian row-major tensor
data. Written here with struct/json/numpy only, so the format stays explicit.
"""
import json
import struct

import numpy as np

# safetensors dtype tag <-> numpy dtype (little-endian, as the format requires)
DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "I32": np.dtype("<i4")}
_TAG_OF = {np.dtype(v).str: k for k, v in DTYPES.items()}

CONFIG_KEY = "drape.config"


class BundleError(ValueError):
    """The file is not a valid bundle; the message names the first problem."""


def write_bundle(path, config, tensors):
    """Write `tensors` (name -> ndarray of float32/float16/int32) and `config`."""
    header = {"__metadata__": {CONFIG_KEY: json.dumps(config, separators=(",", ":"))}}
    chunks, offset = [], 0
    for name, arr in tensors.items():
        arr = np.asarray(arr)
        tag = _TAG_OF.get(arr.dtype.newbyteorder("<").str)
        if tag is None:
            raise BundleError(f"{name}: unsupported dtype {arr.dtype}")
        data = np.ascontiguousarray(arr, dtype=DTYPES[tag]).tobytes()
        header[name] = {"dtype": tag, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    # Pad with spaces so the data starts 8-byte aligned (8 + len is a multiple of 8).
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for data in chunks:
            f.write(data)


def read_bundle(path):
    """Return (config dict, {name: ndarray}); raise BundleError on any defect.

    Arrays keep their stored dtype (F16 stays float16); callers convert.
    """
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise BundleError("file shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise BundleError(f"header length {n} exceeds file size {len(blob)}")
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BundleError(f"header is not valid JSON: {e}") from None
    if not isinstance(header, dict):
        raise BundleError("header is not a JSON object")

    meta = header.pop("__metadata__", None)
    if not isinstance(meta, dict) or not isinstance(meta.get(CONFIG_KEY), str):
        raise BundleError(f'__metadata__["{CONFIG_KEY}"] missing or not a string')
    try:
        config = json.loads(meta[CONFIG_KEY])
    except json.JSONDecodeError as e:
        raise BundleError(f"{CONFIG_KEY} is not valid JSON: {e}") from None
    if not isinstance(config, dict):
        raise BundleError(f"{CONFIG_KEY} is not a JSON object")

    data = memoryview(blob)[8 + n:]
    spans, tensors = [], {}
    for name, info in header.items():
        if not isinstance(info, dict):
            raise BundleError(f"{name}: entry is not an object")
        tag, shape, offs = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if tag not in DTYPES:
            raise BundleError(f"{name}: unsupported dtype {tag!r}")
        if (not isinstance(shape, list)
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
            raise BundleError(f"{name}: bad shape {shape!r}")
        if (not isinstance(offs, list) or len(offs) != 2
                or not all(isinstance(o, int) and not isinstance(o, bool) for o in offs)):
            raise BundleError(f"{name}: bad data_offsets {offs!r}")
        begin, end = offs
        if not 0 <= begin <= end <= len(data):
            raise BundleError(f"{name}: data_offsets {offs} outside data of {len(data)} bytes")
        dt = DTYPES[tag]
        want = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        if end - begin != want:
            raise BundleError(f"{name}: {end - begin} bytes for shape {shape} {tag} (want {want})")
        arr = np.frombuffer(data[begin:end], dtype=dt).reshape(shape).copy()
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise BundleError(f"{name}: non-finite values")
        tensors[name] = arr
        spans.append((begin, end, name))

    # The tensors must tile the data section exactly: no overlap, no holes, no tail.
    pos = 0
    for begin, end, name in sorted(spans):
        if begin != pos:
            raise BundleError(f"{name}: data starts at {begin}, expected {pos} (overlap or hole)")
        pos = end
    if pos != len(data):
        raise BundleError(f"{len(data) - pos} trailing bytes after the last tensor")
    return config, tensors
