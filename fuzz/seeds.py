#!/usr/bin/env python3
"""Writes the seed corpora of the libFuzzer harnesses (fuzz/README.md):
fuzz/corpus/<harness>/<name>, a handful of valid and nearly valid inputs
each, small. Standard library only (the msgpack and .npy bytes are written
here). Deterministic: run it again and git sees no change. Inputs that
once crashed a parser are kept in the corpus under crash-* names by hand;
this script leaves them alone."""
import io
import json
import os
import struct
import sys
import zipfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(harness, name, data):
    d = os.path.join(ROOT, harness)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- msgpack, the subset the stream uses ----

def mp(v, single=False):
    if v is None:
        return b"\xc0"
    if v is True or v is False:
        return b"\xc3" if v else b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack("b", v)
        if v >= 0:
            return b"\xcf" + struct.pack(">Q", v) if v >= 1 << 32 else b"\xce" + struct.pack(">I", v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, float):
        return b"\xca" + struct.pack(">f", v) if single else b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        return (bytes([0xA0 | len(b)]) if len(b) < 32 else b"\xd9" + bytes([len(b)])) + b
    if isinstance(v, (bytes, bytearray)):
        return b"\xc4" + bytes([len(v)]) + bytes(v) if len(v) < 256 else b"\xc5" + struct.pack(">H", len(v)) + bytes(v)
    if isinstance(v, list):
        h = bytes([0x90 | len(v)]) if len(v) < 16 else b"\xdc" + struct.pack(">H", len(v))
        return h + b"".join(mp(x, single) for x in v)
    if isinstance(v, dict):
        h = bytes([0x80 | len(v)]) if len(v) < 16 else b"\xde" + struct.pack(">H", len(v))
        return h + b"".join(mp(k, single) + mp(x, single) for k, x in v.items())
    raise TypeError(v)


# ---- stream messages (docs/design.md §6) ----

POSE = [0.1 * ((i % 7) - 3) for i in range(72)]
CLIENT = {
    "open_garment": {"op": "open", "avatar": 1, "garment": "skirt", "betas": [0.5, -1.0, 2.0], "format": "f16"},
    "open_identity": {"op": "open", "avatar": "alice", "identity": "0123456789abcdef", "mode": "lbs"},
    "open_both": {"op": "open", "avatar": 7, "identity": "00ff", "garment": "tshirt", "format": "meshopt"},
    "pose": {"op": "pose", "avatar": 1, "seq": 42, "pose": POSE, "trans": [0.0, 0.9, -1.5]},
    "pose_no_trans": {"op": "pose", "avatar": "alice", "seq": 0, "pose": [0] * 72},
    "close": {"op": "close", "avatar": 1},
    "bad_pose_71": {"op": "pose", "avatar": 1, "seq": 1, "pose": [0] * 71},
    "bad_op": {"op": "dance", "avatar": 1},
    "bad_avatar": {"op": "close", "avatar": -5},
}
SERVER = {
    "opened": {"op": "opened", "avatar": 1, "identity": "ab12", "garment": "skirt", "vertices": 3,
               "format": "f32", "mode": "neural"},
    "error": {"op": "error", "code": "bad_field", "message": "pose: expected 72 numbers", "avatar": 1, "seq": 3},
    "closed": {"op": "closed", "avatar": "alice"},
}


def frame(data):
    return {"op": "frame", "avatar": 1, "seq": 5, "format": "f32", "count": 1,
            "bbox": [0.0, 0.0, 0.0, 1.0, 1.0, 1.0], "data": data,
            "timing": {"queue": 10, "compute": 2000, "pack": 30}, "dropped": 0}


def messages():
    for name, m in {**CLIENT, **SERVER}.items():
        put("msg_json", name + ".json", json.dumps(m, separators=(",", ":")))
        put("msg_msgpack", name + ".mp", mp(m, single=name.startswith("pose")))
    put("msg_json", "frame.json", json.dumps(frame([0.5, 1.0, -2.0])))
    put("msg_msgpack", "frame.mp", mp(frame(struct.pack("<3f", 0.5, 1.0, -2.0))))
    put("msg_json", "nonfinite.json", '{"op":"pose","avatar":1,"seq":1,"pose":[1e999' + ",0" * 71 + "]}")
    put("msg_json", "truncated.json", json.dumps(CLIENT["pose"])[:-9])
    put("msg_msgpack", "truncated.mp", mp(CLIENT["pose"])[:-5])
    put("msg_msgpack", "trailing.mp", mp(CLIENT["close"]) + b"\xc0")
    put("msg_msgpack", "nan.mp", mp({"op": "pose", "avatar": 1, "seq": 1, "pose": [float("nan")] + [0.0] * 71}))


# ---- WebSocket frames: byte 0 side and limits, byte 1 chunking (fuzz_ws.c) ----

def ws_frame(op, payload, fin=True, mask=b"\x11\x22\x33\x44", rsv=0, length=None):
    n = len(payload) if length is None else length
    h = bytes([(0x80 if fin else 0) | rsv | op])
    m = 0x80 if mask else 0
    if n < 126:
        h += bytes([m | n])
    elif n < 1 << 16:
        h += bytes([m | 126]) + struct.pack(">H", n)
    else:
        h += bytes([m | 127]) + struct.pack(">Q", n)
    if mask:
        payload = bytes(b ^ mask[i & 3] for i, b in enumerate(payload))
        h += mask
    return h + payload


def ws():
    server, client = 0x01 | 0x06 | 0x18, 0x00 | 0x06 | 0x18  # limits: 1 MiB frames and messages
    text = json.dumps(CLIENT["pose"]).encode()
    seeds = {
        "text": (server, ws_frame(1, b"hello")),
        "binary_pose": (server, ws_frame(2, mp(CLIENT["pose"]))),
        "fragmented_with_ping": (server, ws_frame(1, text[:40], fin=False) + ws_frame(9, b"p")
                                 + ws_frame(0, text[40:200], fin=False) + ws_frame(0, text[200:])),
        "close_reason": (server, ws_frame(8, struct.pack(">H", 1000) + "bye ✓".encode())),
        "close_empty": (server, ws_frame(8, b"")),
        "len16": (server, ws_frame(2, bytes(range(256)) * 2)),
        "client_side": (client, ws_frame(1, b"{}", mask=None) + ws_frame(10, b"pong", mask=None)),
        "small_limits": (0x01, ws_frame(2, b"x" * 200)),
        "bad_utf8": (server, ws_frame(1, b"\xc3\x28")),
        "bad_close_code": (server, ws_frame(8, struct.pack(">H", 1005))),
        "rsv_set": (server, ws_frame(1, b"a", rsv=0x40)),
        "len64_truncated": (server, ws_frame(2, b"abc", length=70000)[:20]),
        "unmasked_to_server": (server, ws_frame(1, b"hi", mask=None)),
    }
    for name, (flags, data) in seeds.items():
        put("ws", name, bytes([flags, len(name) * 37 & 255]) + data)


# ---- HTTP bodies: byte 0 route (bit 2: identities) and history (bits 0-1) ----

def http():
    z = [0] * 72
    bodies = {
        "frame_garment": (0, {"garment": "skirt", "pose": POSE}),
        "frame_identity": (0, {"identity": "0123abcd", "pose": z, "format": "q16", "mode": "lbs"}),
        "frame_history3": (0, {"garment": "dress", "betas": [1, -1], "poses": [z, POSE, z],
                               "trans": [[0, 0, 0], [0, 0.1, 0], [0, 0.2, 0]]}),
        "frame_history7_short": (1, {"garment": "dress", "poses": [z, z, z]}),
        "items": (0, {"items": [{"garment": "tshirt", "pose": z}, {"identity": "ff", "garment": "skirt", "pose": z}]}),
        "array": (0, [{"garment": "skirt", "pose": z, "format": "meshopt"}]),
        "empty_identity": (0, {"identity": "", "pose": z}),
        "large_pose": (0, {"garment": "skirt", "pose": [1e5] + z[1:]}),
        "bad_mode": (0, {"garment": "skirt", "pose": z, "mode": "physics"}),
        "identities": (4, {"garment": "skirt", "betas": [0.5, 2.5]}),
        "identities_bad_betas": (4, {"garment": "skirt", "betas": [9] * 11}),
        "identities_unknown": (4, {"garment": "cape"}),
    }
    for name, (flags, body) in bodies.items():
        put("http", name, bytes([flags]) + json.dumps(body, separators=(",", ":")).encode())
    put("http", "not_json", b"\x00{\"garment\":")


# ---- safetensors ----

def st(tensors, meta=None, order=None, raw_header=None):
    header, data = {}, b""
    for name, (dtype, shape, payload) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    if meta is not None:
        header["__metadata__"] = meta
    h = raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + data


def safetensors():
    f32 = struct.pack("<6f", *[0.5 * i for i in range(6)])
    cfg = json.dumps({"fps": 30, "betas": 10, "garments": ["skirt"]})
    put("safetensors", "valid", st({"a": ("F32", [2, 3], f32), "b": ("I32", [2], struct.pack("<2i", 1, -1)),
                                    "h": ("F16", [2], struct.pack("<2e", 1.0, -2.0))}, {"drape.config": cfg}))
    put("safetensors", "empty_tensor", st({"e": ("F32", [0, 4], b""), "s": ("F32", [], struct.pack("<f", 1.0))}))
    put("safetensors", "no_tensors", st({}, {"k": "v"}))
    put("safetensors", "nan", st({"a": ("F32", [1], struct.pack("<f", float("nan")))}))
    put("safetensors", "bad_dtype", st({"a": ("F64", [1], b"\0" * 8)}))
    put("safetensors", "overlap", st({}, raw_header=b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                                                    b'"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}')
        + b"\0" * 8)
    put("safetensors", "hole", st({}, raw_header=b'{"a":{"dtype":"I32","shape":[1],"data_offsets":[4,8]}}') + b"\0" * 8)
    put("safetensors", "truncated", st({"a": ("F32", [2, 3], f32)})[:-4])
    put("safetensors", "huge_shape", st({}, raw_header=b'{"a":{"dtype":"F32","shape":[4294967296,4294967296],'
                                                       b'"data_offsets":[0,0]}}'))


# ---- .npy ----

def npy(shape, data=b"", descr="<f4", fortran="False", version=1):
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (
        descr, fortran, "".join("%d," % s for s in shape) if len(shape) == 1 else ", ".join(map(str, shape)))
    pad = (64 - (10 + len(d) + 1) % 64) % 64
    h = (d + " " * pad + "\n").encode()
    pre = b"\x93NUMPY" + bytes([version, 0])
    pre += struct.pack("<H", len(h)) if version == 1 else struct.pack("<I", len(h))
    return pre + h + data


def npys():
    put("npy", "valid_2x3", npy((2, 3), struct.pack("<6f", *range(6))))
    put("npy", "vector", npy((4,), struct.pack("<4f", 1, 2, 3, 4)))
    put("npy", "scalar", npy((), struct.pack("<f", 7)))
    put("npy", "empty_0x75", npy((0, 75)))
    put("npy", "v2_header", npy((1, 2), struct.pack("<2f", 1, 2), version=2))
    put("npy", "f8", npy((1,), b"\0" * 8, descr="<f8"))
    put("npy", "fortran", npy((2, 2), b"\0" * 16, fortran="True"))
    put("npy", "truncated", npy((3, 3), b"\0" * 20))
    put("npy", "huge_2p32_2p32", npy((1 << 32, 1 << 32)))
    put("npy", "five_dims", npy((1, 1, 1, 1, 1), b"\0" * 4))


# ---- OBJ ----

def objs():
    put("obj", "triangle.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    put("obj", "quad_slashes.obj", "# quad\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvn 0 0 1\n"
                                   "f 1/1/1 2/1/1 3/1/1 4/1/1\n")
    put("obj", "negative.obj", "v 0 0 0\r\nv 1 0 0\r\nv 0 1 0\r\nf -3 -2 -1\r\n")
    put("obj", "bad_index.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n")
    put("obj", "big_unused_vertex.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1e308 1e308 -1e308\nf 1 2 3\n")
    put("obj", "nan.obj", "v nan 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    put("obj", "two_vertex_face.obj", "v 0 0 0\nv 1 0 0\nf 1 2\n")
    put("obj", "no_newline.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3")


# ---- garment meshes: OBJ with UVs and binary glTF (runtime/garment_mesh.c) ----

def glb(positions, uvs, indices, index_type=5125, extra_json=None, patch=None):
    """A GLB of one triangle primitive: float VEC3 positions, float VEC2 UVs
    (or none), indices of index_type (or none); patch(doc) may edit the
    JSON last."""
    fmt = {5121: "B", 5123: "H", 5125: "I"}[index_type]
    pb = b"".join(struct.pack("<3f", *p) for p in positions)
    tb = b"".join(struct.pack("<2f", *t) for t in uvs or [])
    ib = b"".join(struct.pack("<" + fmt, i) for i in indices or [])
    ib += b"\0" * (-len(ib) % 4)
    views, accs, attrs = [], [], {"POSITION": 0}
    off = 0
    for data, count, kind, ctype in ((pb, len(positions), "VEC3", 5126), (tb, len(uvs or []), "VEC2", 5126),
                                     (ib, len(indices or []), "SCALAR", index_type)):
        if not count:
            continue
        views.append({"buffer": 0, "byteOffset": off, "byteLength": len(data)})
        accs.append({"bufferView": len(views) - 1, "componentType": ctype, "count": count, "type": kind})
        off += len(data)
    prim = {"attributes": attrs}
    if uvs:
        attrs["TEXCOORD_0"] = 1
    if indices:
        prim["indices"] = len(accs) - 1
    doc = {"asset": {"version": "2.0"}, "meshes": [{"primitives": [prim]}], "nodes": [{"mesh": 0}],
           "buffers": [{"byteLength": off}], "bufferViews": views, "accessors": accs}
    doc.update(extra_json or {})
    if patch:
        patch(doc)
    js = json.dumps(doc).encode()
    js += b" " * (-len(js) % 4)
    binary = pb + tb + ib
    total = 12 + 8 + len(js) + 8 + len(binary)
    return (struct.pack("<4sII", b"glTF", 2, total) + struct.pack("<I4s", len(js), b"JSON") + js +
            struct.pack("<I4s", len(binary), b"BIN\0") + binary)


def gmeshes():
    quad = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\n"
    put("gmesh", "quad_uv.obj", quad + "f 1/1 2/2 3/3 4/4\n")
    put("gmesh", "normals_negative.obj", quad + "vn 0 0 1\nf -4/-4/1 -3/-3/1 -2/-2/1\n")
    put("gmesh", "no_uv.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    put("gmesh", "mixed_uv.obj", quad + "f 1/1 2/2 3/3\nf 1 3 4\n")
    put("gmesh", "bad_vt_index.obj", quad + "f 1/1 2/2 3/9\n")
    tri = [(0, 0, 0), (1, 0, 0), (0, 1, 0)]
    put("gmesh", "triangle.glb", glb(tri, [(0, 0), (1, 0), (0, 1)], [0, 1, 2]))
    put("gmesh", "triangle_u16.glb", glb(tri, [(0, 0), (1, 0), (0, 1)], [0, 1, 2], 5123))
    put("gmesh", "no_indices.glb", glb(tri, [(0, 0), (1, 0), (0, 1)], None))
    put("gmesh", "seam_welded.glb", glb(tri + [(1, 0, 0), (0, 1, 0), (1, 1, 0)],
                                        [(0, 0), (0.4, 0), (0, 0.4), (0.6, 0), (0.6, 0.4), (1, 0.4)],
                                        [0, 1, 2, 3, 5, 4]))
    put("gmesh", "no_uv.glb", glb(tri, None, [0, 1, 2]))
    put("gmesh", "moved_node.glb", glb(tri, [(0, 0), (1, 0), (0, 1)], [0, 1, 2],
                                       extra_json={"nodes": [{"mesh": 0, "translation": [0, 1, 0]}]}))
    put("gmesh", "index_past_end.glb", glb(tri, [(0, 0), (1, 0), (0, 1)], [0, 1, 7]))

    def negative_stride(doc):  # its sum once wrapped round to pass the bounds check
        doc["bufferViews"][0]["byteStride"] = -(1 << 42)
        doc["accessors"][0]["byteOffset"] = 1 << 43
    put("gmesh", "negative_stride.glb", glb(tri, [(0, 0), (1, 0), (0, 1)], [0, 1, 2], patch=negative_stride))


# ---- motion files: BVH and AMASS npz (runtime/motion.c) ----

# (name, parent index, offset): a CMU-named skeleton in CMU's units
CMU = [("Hips", -1, (0, 0, 0)), ("LHipJoint", 0, (0, 0, 0)), ("LeftUpLeg", 1, (1.6, -1.8, 0.6)),
       ("LeftLeg", 2, (2.6, -7.2, 0)), ("LeftFoot", 3, (0, -7.2, 0)), ("LeftToeBase", 4, (0, -0.4, 2.2)),
       ("RHipJoint", 0, (0, 0, 0)), ("RightUpLeg", 6, (-1.6, -1.8, 0.6)), ("RightLeg", 7, (-2.6, -7.2, 0)),
       ("RightFoot", 8, (0, -7.2, 0)), ("RightToeBase", 9, (0, -0.4, 2.2)), ("LowerBack", 0, (0, 0, 0)),
       ("Spine", 11, (0, 2.0, 0)), ("Spine1", 12, (0, 2.0, 0)), ("Neck", 13, (0, 1.7, 0)),
       ("Neck1", 14, (0, 0.8, 0)), ("Head", 15, (0, 0.8, 0)), ("LeftShoulder", 13, (0.8, 1.2, 0)),
       ("LeftArm", 17, (2.6, 0, 0)), ("LeftForeArm", 18, (4.6, 0, 0)), ("LeftHand", 19, (3.7, 0, 0)),
       ("RightShoulder", 13, (-0.8, 1.2, 0)), ("RightArm", 21, (-2.6, 0, 0)),
       ("RightForeArm", 22, (-4.6, 0, 0)), ("RightHand", 23, (-3.7, 0, 0))]


def bvh(joints, frames, prefix="", order="Zrotation Xrotation Yrotation", frame_time="0.0083333", root_y=17.0):
    out = ["HIERARCHY"]
    kids = {i: [k for k, j in enumerate(joints) if j[1] == i] for i in range(len(joints))}

    def emit(i, depth):
        name, parent, off = joints[i]
        pad = "  " * depth
        out.append(f"{pad}{'ROOT' if parent < 0 else 'JOINT'} {prefix}{name}")
        out.append(pad + "{")
        out.append(f"{pad}  OFFSET {off[0]:g} {off[1]:g} {off[2]:g}")
        pos = "Xposition Yposition Zposition " if parent < 0 else ""
        out.append(f"{pad}  CHANNELS {6 if parent < 0 else 3} {pos}{order}")
        for k in kids[i]:
            emit(k, depth + 1)
        if not kids[i]:
            out.extend([pad + "  End Site", pad + "  {", pad + "    OFFSET 0 1 0", pad + "  }"])
        out.append(pad + "}")

    emit(0, 0)
    n = 3 * len(joints) + 3
    out += ["MOTION", f"Frames: {frames}", f"Frame Time: {frame_time}"]
    for t in range(frames):
        vals = [0.5 * t, root_y, 0.2 * t] + [((7 * t + 3 * k) % 21 - 10) * 1.5 for k in range(n - 3)]
        out.append(" ".join(f"{v:g}" for v in vals))
    return "\n".join(out) + "\n"


def npz_bytes(arrays, compressed):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED) as z:
        for name, data in arrays.items():
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
            z.writestr(info, data)
    return b.getvalue()


def motions():
    ok = bvh(CMU, 3)
    put("bvh", "cmu.bvh", ok)
    put("bvh", "cmu_prefixed.bvh", bvh(CMU, 2, prefix="mixamorig:", order="Xrotation Yrotation Zrotation",
                                 frame_time="0.0333333", root_y=95))
    put("bvh", "truncated.bvh", ok[: len(ok) - 40])
    put("bvh", "nan.bvh", ok.replace("Frame Time: 0.0083333\n", "Frame Time: 0.0083333\nnan "))
    put("bvh", "unbalanced.bvh", ok.replace("}\nMOTION", "MOTION"))
    put("bvh", "unknown_joints.bvh", ok.replace("JOINT Left", "JOINT Lft"))
    put("bvh", "too_many_values.bvh", ok + "1 2 3\n")
    put("bvh", "slow_source.bvh", bvh(CMU[:1] + [("LeftUpLeg", 0, (1, -8, 0))], 4, frame_time="1"))
    T, W = 3, 156
    poses = npy((T, W), struct.pack(f"<{T * W}d", *[0.01 * (i % 50 - 25) for i in range(T * W)]), descr="<f8")
    trans = npy((T, 3), struct.pack(f"<{T * 3}d", *[0.1, -0.2, 0.9] * T), descr="<f8")
    rate = npy((), struct.pack("<d", 60.0), descr="<f8")
    arrays = {"poses": poses, "trans": trans, "mocap_framerate": rate}
    put("npz", "amass_stored.npz", npz_bytes(arrays, False))
    put("npz", "amass_deflate.npz", npz_bytes(arrays, True))
    put("npz", "smpl72.npz", npz_bytes({"poses": npy((1, 72), b"\0" * 576, descr="<f8"), "trans": npy((1, 3), b"\0" * 24, descr="<f8"),
                                        "mocap_framerate": rate}, True))
    put("npz", "no_rate.npz", npz_bytes({"poses": poses, "trans": trans}, False))
    put("npz", "truncated.npz", npz_bytes(arrays, True)[:-30])
    # an SMPL-layout body (runtime/body_import.c): a tetrahedron on the root
    # joint, SMPL's tree with its uint32 -1, int64 and uint32 indices
    parents = [-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21]
    tet = [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1]
    body = {"v_template": npy((4, 3), struct.pack("<12d", *tet), descr="<f8"),
            "shapedirs": npy((4, 3, 2), struct.pack("<24f", *[0.01 * i for i in range(24)])),
            "J_regressor": npy((24, 4), struct.pack("<96f", *[0.25] * 96)),
            "weights": npy((4, 24), struct.pack("<96d", *([1.0] + [0.0] * 23) * 4), descr="<f8"),
            "kintree_table": npy((2, 24), struct.pack("<48q", *([4294967295] + parents[1:] + list(range(24)))),
                                 descr="<i8"),
            "f": npy((4, 3), struct.pack("<12I", 0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3), descr="<u4")}
    put("npz", "smpl_body.npz", npz_bytes(body, False))
    put("npz", "smpl_body_deflate.npz", npz_bytes(body, True))


def main():
    messages()
    ws()
    http()
    safetensors()
    npys()
    objs()
    gmeshes()
    motions()
    return 0


if __name__ == "__main__":
    sys.exit(main())
