#!/bin/sh
# Regenerates the seed corpora tests/fuzz/corpus/<target>/ (valid files and edge cases, all
# small; < 1 MB together). Run from anywhere: tests/fuzz/make_corpus.sh. Needs Debian's
# /usr/bin/python3 with numpy and, for the JPEG seeds of the image corpus, Pillow (python3-pil;
# tools only). The point fixtures of tests/fixtures/points and the
# param texts shipped in src/models/bevfusion/params.c are copied in, so seeds follow them.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
exec /usr/bin/python3 - "$root" <<'PY'
import ast, io, os, re, shutil, struct, sys, zipfile
import numpy as np
import warnings
warnings.filterwarnings("ignore", "Duplicate name")

root = sys.argv[1]
out = os.path.join(root, "tests/fuzz/corpus")
pts = os.path.join(root, "tests/fixtures/points")

def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

def npy(a, fortran=False, version=None):
    b = io.BytesIO()
    if version is None:
        np.save(b, np.asfortranarray(a) if fortran else a, allow_pickle=False)
    else:
        np.lib.format.write_array(b, np.asfortranarray(a) if fortran else a, version=version)
    return b.getvalue()

def npy_raw(header, payload=b"", major=1):
    # a hand-made image: magic, version, padded header
    h = header.encode()
    hl = 10 + len(h) + 1 if major == 1 else 12 + len(h) + 1
    pad = (64 - hl % 64) % 64
    h = h + b" " * pad + b"\n"
    size = struct.pack("<H", len(h)) if major == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([major, 0]) + size + h + payload

def npz(entries, deflate=False):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED) as z:
        for name, data in entries:
            z.writestr(name, data)
    return b.getvalue()

rng = np.random.default_rng(7)
cloud4 = (rng.standard_normal((12, 4)) * 20).astype(np.float32)
cloud5 = (rng.standard_normal((9, 5)) * 20).astype(np.float32)
cloud4[3, :3] = np.nan

# onnx and meteor_inputs: seeds committed by hand (fixture models, the METEOR sample), kept
HAND_MADE = ("onnx", "meteor_inputs")
for t in os.listdir(out) if os.path.isdir(out) else []:
    if t not in HAND_MADE:
        shutil.rmtree(os.path.join(out, t))

# ---- npy ----------------------------------------------------------------------------------------
put("npy", "fixture_small.npy", open(os.path.join(pts, "small.npy"), "rb").read())
put("npy", "f32_n5.npy", npy(cloud5))
put("npy", "f16_n5.npy", npy(cloud5.astype(np.float16)))
put("npy", "f32_empty_0x4.npy", npy(np.zeros((0, 4), np.float32)))
put("npy", "f32_fortran.npy", npy(cloud4, fortran=True))
put("npy", "f32_bigendian.npy", npy(cloud4.astype(">f4")))
put("npy", "f16_bigendian.npy", npy(cloud5.astype(">f2")))
put("npy", "i8_rank3.npy", npy(np.arange(24, dtype=np.int8).reshape(2, 3, 4)))
put("npy", "i64_rank1.npy", npy(np.arange(5, dtype=np.int64)))
put("npy", "i32_fortran.npy", npy(np.arange(12, dtype=np.int32).reshape(3, 4), fortran=True))
put("npy", "u8.npy", npy(np.arange(10, dtype=np.uint8)))
put("npy", "bool.npy", npy(np.array([True, False, True])))
put("npy", "scalar_rank0.npy", npy(np.float32(3.5)))
put("npy", "v2_header.npy", npy(cloud4, version=(2, 0)))
put("npy", "v3_header.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }",
                                    np.ones(3, np.float32).tobytes(), major=3))
put("npy", "rank8.npy", npy(np.zeros((1, 1, 1, 1, 1, 1, 2, 3), np.float32)))
put("npy", "bad_f64.npy", npy(cloud4.astype(np.float64)))
put("npy", "bad_truncated.npy", npy(cloud4)[:-5])
put("npy", "bad_trailing.npy", npy(cloud4) + b"\0\0\0\0")
put("npy", "bad_magic.npy", b"\x93NUMPX" + npy(cloud4)[6:])
put("npy", "bad_huge_shape.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }"))
put("npy", "bad_overflow_shape.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }"))
put("npy", "bad_negative_dim.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }"))
put("npy", "bad_rank9.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }"))
put("npy", "bad_dict_keys.npy", npy_raw("{'descr': '<f4', 'shape': (1, 3), 'fortran_order': False, 'x': 1}",
                                        np.ones(3, np.float32).tobytes()))
put("npy", "bad_descr_struct.npy", npy_raw("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                                           b"\0\0\0\0"))
put("npy", "bad_header_unterminated.npy", b"\x93NUMPY\x01\x00\x20\x00{'descr': '<f4', 'fortran_ord")
put("npy", "bad_header_len.npy", b"\x93NUMPY\x01\x00\xff\xff{'descr': '<f4'}")
put("npy", "bad_v2_len.npy", b"\x93NUMPY\x02\x00\xff\xff\xff\xff{}")
put("npy", "magic_only.npy", b"\x93NUMPY")
put("npy", "empty.npy", b"")
put("npy", "cloud_too_many_cols.npy", npy(np.zeros((2, 17), np.float32)))
put("npy", "cloud_two_cols.npy", npy(np.zeros((2, 2), np.float32)))

# ---- npz ----------------------------------------------------------------------------------------
put("npz", "points_stored.npz", npz([("points.npy", npy(cloud4))]))
put("npz", "points_deflated.npz", npz([("points.npy", npy(cloud5))], deflate=True))
put("npz", "two_arrays.npz", npz([("x.npy", npy(np.arange(6, dtype=np.int64))), ("points.npy", npy(cloud4.astype(np.float16)))]))
put("npz", "single_other_name.npz", npz([("cloud.npy", npy(cloud4))]))
put("npz", "empty_archive.npz", npz([]))
put("npz", "empty_array.npz", npz([("points.npy", npy(np.zeros((0, 4), np.float32)))], deflate=True))
put("npz", "bad_not_npy_entry.npz", npz([("points.txt", b"1 2 3")]))
put("npz", "bad_duplicate.npz", npz([("a.npy", npy(np.ones(2, np.float32))), ("a.npy", npy(np.ones(3, np.float32)))]))
put("npz", "bad_entry_truncated.npz", npz([("points.npy", npy(cloud4)[:-3])]))
put("npz", "bad_f64_entry.npz", npz([("points.npy", npy(cloud4.astype(np.float64)))]))
z = npz([("points.npy", npy(cloud4))], deflate=True)
put("npz", "bad_archive_truncated.npz", z[: len(z) // 2])
put("npz", "bad_no_central_dir.npz", z[:-22])
put("npz", "bad_eocd_only.npz", b"PK\x05\x06" + b"\0" * 18)
put("npz", "bad_random.npz", bytes(rng.integers(0, 256, 200, dtype=np.uint8)))

# ---- pcd ----------------------------------------------------------------------------------------
for f in sorted(os.listdir(pts)):
    if f.endswith(".pcd"):
        put("pcd", "fixture_" + f, open(os.path.join(pts, f), "rb").read())

def pcd_header(fields, size, type_, count, width, height, data, points=None, version="0.7", viewpoint=True):
    h = ""
    if version is not None:
        h += "VERSION %s\n" % version
    h += "FIELDS %s\nSIZE %s\nTYPE %s\n" % (fields, size, type_)
    if count is not None:
        h += "COUNT %s\n" % count
    h += "WIDTH %d\nHEIGHT %d\n" % (width, height)
    if viewpoint:
        h += "VIEWPOINT 0 0 0 1 0 0 0\n"
    h += "POINTS %d\nDATA %s\n" % (width * height if points is None else points, data)
    return h

def lzf_literal(raw):
    # an LZF stream of literal runs only (control byte = run length - 1, at most 32 bytes)
    o = bytearray()
    for i in range(0, len(raw), 32):
        chunk = raw[i:i + 32]
        o.append(len(chunk) - 1)
        o += chunk
    return bytes(o)

xyz = cloud4[:, :3].copy()
xyz[3] = 1.0
put("pcd", "ascii_nan_inf.pcd", pcd_header("x y z", "4 4 4", "F F F", "1 1 1", 3, 1, "ascii") +
    "1 2 3\nnan nan nan\n-inf inf 0\n")
put("pcd", "ascii_no_version_blank_lines.pcd", pcd_header("x y z", "4 4 4", "F F F", None, 2, 1, "ascii", version=None) +
    "\n1 2 3\n\n4 5 6\n  \n")
put("pcd", "ascii_types.pcd", pcd_header("y x z i u", "8 2 4 1 8", "F F F I U", "1 1 1 1 1", 2, 1, "ascii") +
    "1e300 1 2 -128 18446744073709551615\n-1e-300 65504 3 127 0\n")
put("pcd", "ascii_count_and_padding.pcd", pcd_header("x y z normal _", "4 4 4 4 1", "F F F F U", "1 1 1 3 4", 2, 1, "ascii") +
    "1 2 3 0.1 0.2 0.3 0 0 0 0\n4 5 6 0.4 0.5 0.6 1 2 3 4\n")
put("pcd", "binary_xyz.pcd", pcd_header("x y z", "4 4 4", "F F F", "1 1 1", len(xyz), 1, "binary").encode() + xyz.tobytes())
put("pcd", "binary_half_and_ints.pcd", pcd_header("x y z t r", "2 2 2 2 1", "F F F I U", "1 1 1 1 1", 2, 1, "binary").encode() +
    np.array([1, 2, 3], np.float16).tobytes() + struct.pack("<hB", -5, 7) + np.array([4, 5, 6], np.float16).tobytes() + struct.pack("<hB", 5, 255))
put("pcd", "binary_zero_points.pcd", pcd_header("x y z", "4 4 4", "F F F", "1 1 1", 0, 1, "binary"))
put("pcd", "binary_organized.pcd", pcd_header("x y z", "4 4 4", "F F F", "1 1 1", 2, 2, "binary").encode() + xyz[:4].tobytes())
raw = b"".join(xyz[:, i].tobytes() for i in range(3))              # field-major
put("pcd", "compressed_literal.pcd", pcd_header("x y z", "4 4 4", "F F F", "1 1 1", len(xyz), 1, "binary_compressed").encode() +
    struct.pack("<II", len(lzf_literal(raw)), len(raw)) + lzf_literal(raw))
# a back-reference: 4 literal bytes then "copy 8 bytes from offset 4" (control 0b110 << 5 | hi, lo)
zeros = b"\0" * 36
put("pcd", "compressed_backref.pcd", pcd_header("x y z", "4 4 4", "F F F", "1 1 1", 3, 1, "binary_compressed").encode() +
    struct.pack("<II", 9, 36) + bytes([3]) + b"\0\0\0\0" + bytes([0xe0 | 0, 32 - 9, 3]))
put("pcd", "bad_compressed_sizes.pcd", pcd_header("x y z", "4 4 4", "F F F", "1 1 1", 3, 1, "binary_compressed").encode() +
    struct.pack("<II", 1000, 4000000000))
put("pcd", "bad_points_mismatch.pcd", pcd_header("x y z", "4 4 4", "F F F", "1 1 1", 4, 1, "ascii", points=5) + "1 2 3\n" * 4)
put("pcd", "bad_fields_size_count.pcd", pcd_header("x y z intensity", "4 4 4", "F F F", "1 1 1 1", 1, 1, "ascii") + "1 2 3 4\n")
put("pcd", "bad_no_z.pcd", pcd_header("x y", "4 4", "F F", "1 1", 1, 1, "ascii") + "1 2\n")
put("pcd", "bad_x_count2.pcd", pcd_header("x y z", "4 4 4", "F F F", "2 1 1", 1, 1, "ascii") + "1 2 3 4\n")
put("pcd", "bad_type_f1.pcd", pcd_header("x y z", "1 4 4", "F F F", "1 1 1", 1, 1, "ascii") + "1 2 3\n")
put("pcd", "bad_binary_short.pcd", pcd_header("x y z", "4 4 4", "F F F", "1 1 1", 10, 1, "binary").encode() + xyz[:2].tobytes())
put("pcd", "bad_ascii_int_range.pcd", pcd_header("x y z c", "4 4 4 1", "F F F U", "1 1 1 1", 1, 1, "ascii") + "1 2 3 256\n")
put("pcd", "bad_huge_width.pcd", pcd_header("x y z", "4 4 4", "F F F", "1 1 1", 4294967296, 4294967296, "binary"))
put("pcd", "bad_version_08.pcd", pcd_header("x y z", "4 4 4", "F F F", "1 1 1", 1, 1, "ascii", version="0.8") + "1 2 3\n")
put("pcd", "bad_data_lzf.pcd", pcd_header("x y z", "4 4 4", "F F F", "1 1 1", 1, 1, "binary_lzf"))
put("pcd", "bad_duplicate_field.pcd", pcd_header("x y z x", "4 4 4 4", "F F F F", "1 1 1 1", 1, 1, "ascii") + "1 2 3 4\n")
put("pcd", "bad_header_only.pcd", "VERSION 0.7\nFIELDS x y z\n")
put("pcd", "bad_empty.pcd", b"")

# ---- raw rows -----------------------------------------------------------------------------------
special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, -1.0], np.float32)
put("kitti", "fixture_small_kitti.bin", open(os.path.join(pts, "small_kitti.bin"), "rb").read())
put("kitti", "one_row.bin", np.array([1, 2, 3, 0.5], np.float32).tobytes())
put("kitti", "specials.bin", special.tobytes())
put("kitti", "empty.bin", b"")
put("kitti", "bad_15_bytes.bin", cloud4.tobytes()[:15])
put("kitti", "bad_one_extra_byte.bin", cloud4.tobytes() + b"\0")
put("nuscenes", "fixture_small_nuscenes.pcd.bin", open(os.path.join(pts, "small_nuscenes.pcd.bin"), "rb").read())
put("nuscenes", "rows.pcd.bin", cloud5.tobytes())
put("nuscenes", "specials.pcd.bin", np.concatenate([special, special[:2]]).tobytes())
put("nuscenes", "empty.pcd.bin", b"")
put("nuscenes", "bad_kitti_sized.pcd.bin", cloud4[:1].tobytes())   # 16 bytes: not a 20-byte row
put("f16x5", "fixture_small_f16x5.bin", open(os.path.join(pts, "small_f16x5.bin"), "rb").read())
h = np.array([0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x7c01], np.uint16)
put("f16x5", "specials.bin", h.tobytes())
put("f16x5", "rows.bin", cloud5.astype(np.float16).tobytes())
put("f16x5", "empty.bin", b"")
put("f16x5", "bad_9_bytes.bin", h.tobytes()[:9])

# ---- param files --------------------------------------------------------------------------------
src = open(os.path.join(root, "src/models/bevfusion/params.c")).read()
def c_text(name):
    m = re.search(r"const char " + name + r"\[\] =\n(.*?);\n", src, re.S)
    return "".join(ast.literal_eval(x) for x in re.findall(r'"(?:[^"\\]|\\.)*"', m.group(1)))
ml = c_text("pvm_bevfusion_ml_package_v2_yaml")
rm = c_text("pvm_bevfusion_remapper_yaml")
put("ml_package", "v2_release.yaml", ml)
put("ml_package", "block_sequences.yaml", ml.replace('class_names: ["CAR", "TRUCK", "BUS", "BICYCLE", "PEDESTRIAN"]',
    "class_names:\n      - CAR\n      - TRUCK\n      - BUS"))
put("ml_package", "node_name.yaml", ml.replace("/**:", "bevfusion_node:"))
put("ml_package", "lidar_only_keys.yaml", "\n".join(l for l in ml.split("\n") if "_bound" not in l and "image" not in l and "roi" not in l and "features" not in l and "cameras" not in l))
put("ml_package", "anchors.yaml", ml.replace("voxel_size: [0.17, 0.17, 0.2]", "voxel_size: &v [0.17, 0.17, 0.2]\n    d2: *v"))
put("ml_package", "bad_missing_key.yaml", ml.replace("    num_proposals: 500\n", ""))
put("ml_package", "bad_duplicate_key.yaml", ml + "    num_proposals: 200\n")
put("ml_package", "bad_two_documents.yaml", ml + "---\nx: 1\n")
put("ml_package", "bad_quoted_number.yaml", ml.replace("num_proposals: 500", 'num_proposals: "500"'))
put("ml_package", "bad_inf.yaml", ml.replace("voxel_size: [0.17, 0.17, 0.2]", "voxel_size: [.inf, 0.17, 1e-300]"))
put("ml_package", "bad_cameras.yaml", ml.replace("num_cameras: 0", "num_cameras: 6"))
put("ml_package", "bad_nine_classes.yaml", ml.replace('"PEDESTRIAN"]', '"PEDESTRIAN", "A", "B", "C", "D"]'))
put("ml_package", "bad_range.yaml", ml.replace("[-122.4, -122.4, -3.0, 122.4, 122.4, 5.0]", "[1, 1, 1, 1, 1, 1]"))
put("ml_package", "bad_tab_indent.yaml", ml.replace("    num_proposals", "\tnum_proposals"))
put("ml_package", "bad_not_mapping.yaml", "- 1\n- 2\n")
put("ml_package", "bad_deep_nesting.yaml", "a: " + "[" * 200 + "]" * 200 + "\n")
put("ml_package", "bad_empty.yaml", "")
put("remapper", "shipped.yaml", rm)
put("remapper", "block_style.yaml", "/**:\n  ros__parameters:\n" + "".join(
    "    %s:\n%s" % (k, "".join("      - %s\n" % v for v in [val] * 64))
    for k, val in (("allow_remapping_by_area_matrix", "0"), ("min_area_matrix", "0.0"), ("max_area_matrix", "1.5"))))
put("remapper", "bad_63_values.yaml", rm.replace("0, 0, 0, 0, 0, 0, 0, 0]", "0, 0, 0, 0, 0, 0, 0]", 1))
put("remapper", "bad_allow_2.yaml", rm.replace("[0, 0, 0, 0, 0, 0, 0, 0,", "[2, 0, 0, 0, 0, 0, 0, 0,", 1))
put("remapper", "bad_negative_area.yaml", rm.replace("[0.0, 0.0,  0.0", "[-1.0, 0.0,  0.0", 1))
put("remapper", "bad_min_over_max.yaml", rm.replace("12.1", "99999.0"))
put("remapper", "bad_alias_loop.yaml", "/**:\n  ros__parameters: &a\n    x: *a\n")
put("remapper", "bad_no_ros_parameters.yaml", "/**:\n  params:\n    x: 1\n")

# ---- runtime params -----------------------------------------------------------------------------
put("params", "all_keys.txt", "circle_nms_dist_threshold=0.5\niou_nms_search_distance_2d=10\niou_nms_threshold=0.1\n"
    "yaw_norm_thresholds=0.3,0.3,0.3,0.3,0.0\nscore_threshold=0.3\n"
    "detection_score_thresholds=" + ",".join(["0.1"] * 20) + "\ndistance_bin_upper_limits=[50, 90, 121, 200]\n")
put("params", "bins_then_scores.txt", "distance_bin_upper_limits=10,20\ndetection_score_thresholds=[" + ", ".join(["0.2"] * 10) + "]\n")
put("params", "eight_bins.txt", "distance_bin_upper_limits=1,2,3,4,5,6,7,8\ndetection_score_thresholds=" + ",".join(["0.5"] * 40) + "\n")
put("params", "bad_values.txt", "iou_nms_threshold=1.5\ncircle_nms_dist_threshold=nan\nscore_threshold=inf\n"
    "yaw_norm_thresholds=1.0,0,0,0,0\ndistance_bin_upper_limits=5,4\nscore_threshold=0x1p-2\nscore_threshold=\n"
    "unknown_key=1\n=0.5\niou_nms_threshold\nscore_threshold= 0.5 , \ndistance_bin_upper_limits=" + ",".join(["1"] * 70) + "\n")
put("params", "bad_counts.txt", "yaw_norm_thresholds=0.1\ndetection_score_thresholds=0.1,0.2\ndistance_bin_upper_limits=1,2,3,4,5,6,7,8,9\n")

# ---- the API door (2-byte header: format index, ncols | array << 5; see fuzz_input.c) -----------
fmts = ["auto", "pcd", "npy", "npz", "kitti", "nuscenes", "f16x5", "f32", "ply", None]
def inp(name, fmt, body, ncols=0, array=0):
    put("input", name, bytes([fmts.index(fmt), ncols | array << 5]) + body)
rd = lambda t, f: open(os.path.join(out, t, f), "rb").read()
inp("auto_pcd", "auto", rd("pcd", "binary_xyz.pcd"))
inp("auto_npy", "auto", rd("npy", "f16_n5.npy"))
inp("auto_headerless", "auto", cloud4.tobytes())
inp("pcd_ascii", "pcd", rd("pcd", "ascii_nan_inf.pcd"))
inp("npy_f32", "npy", rd("npy", "f32_n5.npy"))
inp("npz_points", "npz", rd("npz", "two_arrays.npz"), array=1)
inp("npz_named_x", "npz", rd("npz", "two_arrays.npz"), array=2)
inp("npz_empty_name", "npz", rd("npz", "points_stored.npz"), array=3)
inp("npz_single", "npz", rd("npz", "single_other_name.npz"))
inp("kitti", "kitti", cloud4.tobytes())
inp("nuscenes", "nuscenes", cloud5.tobytes())
inp("f16x5", "f16x5", cloud5.astype(np.float16).tobytes())
inp("f32_6cols", "f32", np.zeros((3, 6), np.float32).tobytes(), ncols=6)
inp("f32_bad_ncols", "f32", np.zeros((3, 2), np.float32).tobytes(), ncols=2)
inp("unknown_format", "ply", b"ply\nformat ascii 1.0\n")
inp("null_format", None, rd("pcd", "binary_xyz.pcd"))
inp("empty_body", "pcd", b"")
put("input", "one_byte", b"\x01")

# ---- the server's /predict decoder (line 1 Content-Type, line 2 query, then the body) ------------
import base64, json
def req(name, ctype, query, body):
    if isinstance(body, str):
        body = body.encode()
    put("serve_request", name, ctype.encode() + b"\n" + query.encode() + b"\n" + body)
b64 = lambda b: base64.b64encode(b).decode()
pcd_bin = rd("pcd", "binary_xyz.pcd")
req("raw_pcd", "application/x-pcd", "", pcd_bin)
req("raw_kitti_params", "application/x-kitti; charset=binary", "score_threshold=0.3&timing=0", cloud4.tobytes())
req("octet_format", "application/octet-stream", "format=nuscenes", cloud5.tobytes())
req("raw_npz", "application/x-npz", "", rd("npz", "points_stored.npz"))
req("json_points", "application/json", "", json.dumps({"points": {"format": "npy", "data": b64(rd("npy", "f32_n5.npy"))}}))
req("json_sweeps_params", "application/json; charset=utf-8", "timing=1", json.dumps({
    "points": {"format": "f32", "ncols": 5, "data": b64(cloud5.tobytes())},
    "sweeps": [{"format": "kitti", "data": b64(cloud4.tobytes()), "time_lag_s": 0.05,
                "T_current_from_sweep": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]}],
    "params": {"score_threshold": 0.3, "distance_bin_upper_limits": [50, 90], "iou_nms_threshold": "0.2", "x": True}}))
req("json_npz_array", "application/json", "", json.dumps({"points": {"format": "npz", "array": "x", "data": b64(rd("npz", "two_arrays.npz"))}}))
req("bad_content_type", "text/plain", "", "hello")
req("bad_no_content_type", "", "", pcd_bin)
req("bad_format", "application/octet-stream", "format=ply", "x")
req("bad_timing", "application/x-pcd", "timing=2", pcd_bin)
req("bad_json_syntax", "application/json", "", '{"points": {"format": "pcd", "data": "AAA')
req("bad_base64", "application/json", "", json.dumps({"points": {"format": "kitti", "data": "!!!not base64==="}}))
req("bad_json_types", "application/json", "", json.dumps({"points": {"format": 3, "data": [1, 2]}, "params": {"a": {"b": 1}}}))
req("bad_json_no_points", "application/json", "", json.dumps({"sweeps": []}))
req("bad_many_sweeps", "application/json", "", json.dumps({"points": {"format": "kitti", "data": ""},
    "sweeps": [{"format": "kitti", "data": ""}] * 20}))
req("bad_many_params", "application/x-pcd", "&".join("p%d=%d" % (i, i) for i in range(64)), pcd_bin)
req("empty", "", "", b"")

# ---- safetensors (pvio_st_parse): hand-made files, the writer's layout (8-aligned header) -------
import json as _json, zlib
def st_file(tensors, meta=None, data=b"", raw_header=None, hlen=None, pad=True):
    # tensors: list of (name, dtype, shape, begin, end) in header order
    if raw_header is None:
        h = {}
        if meta is not None:
            h["__metadata__"] = meta
        for name, dt, shape, b, e in tensors:
            h[name] = {"dtype": dt, "shape": shape, "data_offsets": [b, e]}
        raw_header = _json.dumps(h, separators=(",", ":"))
    hb = raw_header.encode() if isinstance(raw_header, str) else raw_header
    if pad:
        hb += b" " * (-len(hb) % 8)
    return struct.pack("<Q", len(hb) if hlen is None else hlen) + hb + data

def st_pack(items, meta=None):
    # items: (name, dtype, shape, bytes) laid out one after the other
    t, data = [], b""
    for name, dt, shape, b in items:
        t.append((name, dt, list(shape), len(data), len(data) + len(b)))
        data += b
    return st_file(t, meta, data)

f32 = np.arange(6, dtype=np.float32).reshape(2, 3) / 3
put("safetensors", "all_dtypes.safetensors", st_pack([
    ("w.f32", "F32", (2, 3), f32.tobytes()),
    ("b.f16", "F16", (4,), np.array([1, -2, 65504, 6e-8], np.float16).tobytes()),
    ("a.bf16", "BF16", (2,), np.array([0x3f80, 0xc040], np.uint16).tobytes()),
    ("z.i64", "I64", (3,), np.array([-5, 0, 2**31 - 1], np.int64).tobytes()),
    ("s.i32", "I32", (), np.array([-7], np.int32).tobytes()),
    ("e.i8", "I8", (2, 0), b""),
    ("u8", "U8", (5,), bytes([0, 1, 127, 128, 255])),
    ("mask", "BOOL", (1, 1, 3), bytes([1, 0, 2]))], meta={"format": "pt", "note": "q\"\\\n\u00e9"}))
put("safetensors", "f16_specials.safetensors", st_pack([
    ("h", "F16", (6,), np.array([0x7c00, 0xfc00, 0x7e00, 0x8000, 0x0001, 0x7bff], np.uint16).tobytes()),
    ("bf", "BF16", (3,), np.array([0x7f80, 0x7fc1, 0x0001], np.uint16).tobytes())]))
put("safetensors", "i64_out_of_int32.safetensors", st_pack([("idx", "I64", (2,), np.array([1, 2**40], np.int64).tobytes())]))
put("safetensors", "empty_header.safetensors", st_file([]))
put("safetensors", "metadata_only.safetensors", st_file([], meta={"format": "pt"}))
gap_hdr = (b'\n {"b":{"dtype":"F32","shape":[1],"data_offsets":[5,9]},"a":{"dtype":"U8","shape":[3],'
           b'"data_offsets":[0,3]},"z":{"dtype":"F32","shape":[0],"data_offsets":[9,9]}} \n ')
put("safetensors", "gaps_unaligned_padding.safetensors",
    struct.pack("<Q", len(gap_hdr)) + gap_hdr + b"\x01\x02\x03xx\x00\x00\x80\x3fTAIL")
put("safetensors", "rank8.safetensors", st_pack([("r8", "U8", (1, 1, 1, 1, 1, 1, 2, 1), b"\x07\x08")]))
ok_t = '"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}'
def bad_st(name, header, data=b"\0" * 8, hlen=None):
    put("safetensors", "bad_" + name + ".safetensors", st_file([], raw_header=header, data=data, hlen=hlen))
put("safetensors", "bad_short.safetensors", b"\x08\0\0\0\0")
bad_st("len_past_end", "{}", data=b"", hlen=4096)
bad_st("len_huge", "{}", hlen=2**63)
bad_st("not_json", "hello")
bad_st("json_cut", '{"a":{"dtype":"F3')
bad_st("array", "[1,2]")
bad_st("trailing", "{} x")
bad_st("nul_byte", '{"a\0":1}')
bad_st("f64", '{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}')
bad_st("f8", '{"a":{"dtype":"F8_E5M2","shape":[8],"data_offsets":[0,8]}}')
bad_st("unknown_dtype", '{"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}}')
bad_st("dtype_number", '{"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}}')
bad_st("negative_shape", '{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}')
bad_st("overflow_shape", '{"a":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8]}}')
put("safetensors", "huge_dim_times_zero.safetensors", st_file([], raw_header='{"a":{"dtype":"F32","shape":[9007199254740991,0],"data_offsets":[0,0]}}'))
bad_st("float_shape", '{"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}}')
bad_st("rank9", '{"a":{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}}')
bad_st("offsets_past_end", '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,800]}}')
bad_st("begin_gt_end", '{"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}}')
bad_st("offsets_three", '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}}')
bad_st("offsets_2p53", '{"a":{"dtype":"U8","shape":[0],"data_offsets":[9007199254740993,9007199254740993]}}')
bad_st("size_mismatch", '{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}')
bad_st("overlap", '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}}')
bad_st("duplicate", "{" + ok_t + "," + ok_t + "}", data=b"\0" * 16)
bad_st("missing_field", '{"a":{"dtype":"F32","shape":[2]}}')
bad_st("extra_field", '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":0}}')
bad_st("tensor_not_object", '{"a":[1,2]}')
bad_st("meta_not_string", '{"__metadata__":{"k":1},' + ok_t + "}")
bad_st("meta_not_object", '{"__metadata__":"pt"}')
bad_st("meta_twice", '{"__metadata__":{},"__metadata__":{}}')
bad_st("meta_dup_key", '{"__metadata__":{"k":"a","k":"b"}}')
bad_st("deep_nesting", '{"__metadata__":' + "[" * 1100 + "]" * 1100 + "}")

# ---- images (pvio_image_decode): PNG written here (every colour type, Adam7), JPEG via Pillow ---
def png_chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xffffffff)

def png_bytes(w, h, ctype, depth, samples, interlace=0, plte=None, trns=None, ihdr_wh=None):
    # samples: h x w x channels array of ints; rows packed MSB first, filter 0
    ch = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    def pack_row(row):
        vals = [int(v) for px in row for v in (px if ch > 1 else [px])]
        if depth == 16:
            return b"".join(struct.pack(">H", v) for v in vals)
        if depth == 8:
            return bytes(vals)
        out, acc, nb = bytearray(), 0, 0
        for v in vals:
            acc = acc << depth | v
            nb += depth
            if nb == 8:
                out.append(acc); acc, nb = 0, 0
        if nb:
            out.append(acc << (8 - nb))
        return bytes(out)
    raw = b""
    if interlace:
        for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)):
            sub = [[samples[y][x] for x in range(x0, w, dx)] for y in range(y0, h, dy)]
            if sub and sub[0]:
                raw += b"".join(b"\0" + pack_row(r) for r in sub)
    else:
        raw = b"".join(b"\0" + pack_row(samples[y]) for y in range(h))
    iw, ih = ihdr_wh if ihdr_wh else (w, h)
    b = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", iw, ih, depth, ctype, 0, 0, interlace))
    if plte:
        b += png_chunk(b"PLTE", bytes(v for c in plte for v in c))
    if trns is not None:
        b += png_chunk(b"tRNS", trns)
    return b + png_chunk(b"IDAT", zlib.compress(raw, 9)) + png_chunk(b"IEND", b"")

r = np.random.default_rng(11)
def px(w, h, ch, hi):
    a = r.integers(0, hi + 1, (h, w, ch))
    return [[list(a[y, x]) if ch > 1 else int(a[y, x, 0]) for x in range(w)] for y in range(h)]
put("image", "rgb8.png", png_bytes(7, 5, 2, 8, px(7, 5, 3, 255)))
put("image", "rgb8_adam7.png", png_bytes(9, 9, 2, 8, px(9, 9, 3, 255), interlace=1))
put("image", "gray1.png", png_bytes(11, 3, 0, 1, px(11, 3, 1, 1)))
put("image", "gray8_adam7.png", png_bytes(5, 5, 0, 8, px(5, 5, 1, 255), interlace=1))
put("image", "gray16.png", png_bytes(4, 4, 0, 16, px(4, 4, 1, 65535), trns=struct.pack(">H", 7)))
put("image", "gray_alpha8.png", png_bytes(6, 2, 4, 8, px(6, 2, 2, 255)))
put("image", "palette2_trns.png", png_bytes(10, 3, 3, 2, px(10, 3, 1, 3), plte=[(255, 0, 0), (0, 255, 0), (0, 0, 255), (9, 9, 9)], trns=b"\x00\x80"))
put("image", "palette8_adam7.png", png_bytes(8, 8, 3, 8, px(8, 8, 1, 2), interlace=1, plte=[(1, 2, 3), (4, 5, 6), (7, 8, 9)]))
put("image", "rgba16.png", png_bytes(3, 3, 6, 16, px(3, 3, 4, 65535)))
put("image", "rgba8_1x1.png", png_bytes(1, 1, 6, 8, px(1, 1, 4, 255)))
good_png = png_bytes(8, 6, 2, 8, px(8, 6, 3, 255))
put("image", "bad_png_truncated.png", good_png[: len(good_png) // 2])
put("image", "bad_png_no_iend.png", good_png[:-12])
put("image", "bad_png_crc.png", good_png[:40] + bytes([good_png[40] ^ 1]) + good_png[41:])
put("image", "bad_png_zero_width.png", png_bytes(8, 6, 2, 8, px(8, 6, 3, 255), ihdr_wh=(0, 6)))
put("image", "bad_png_huge.png", png_bytes(8, 6, 2, 8, px(8, 6, 3, 255), ihdr_wh=(30000, 30000)))
put("image", "bad_png_short_idat.png", png_bytes(8, 3, 2, 8, px(8, 3, 3, 255), ihdr_wh=(8, 6)))
put("image", "palette_index_out_of_range.png", png_bytes(4, 4, 3, 8, px(4, 4, 1, 200), plte=[(1, 2, 3)]))
put("image", "bad_png_ihdr_depth.png", png_bytes(4, 4, 2, 8, px(4, 4, 3, 255))[:24] + b"\x03" + png_bytes(4, 4, 2, 8, px(4, 4, 3, 255))[25:])

from PIL import Image
def jpeg(img, **kw):
    b = io.BytesIO()
    img.save(b, "JPEG", **kw)
    return b.getvalue()
yy, xx = np.mgrid[0:16, 0:16]
smooth = np.stack([xx * 15, yy * 15, 255 - (xx + yy) * 7], -1).astype(np.uint8)
rgb_img = Image.fromarray(smooth, "RGB")
base_jpg = jpeg(rgb_img, quality=90)
put("image", "baseline_420.jpg", base_jpg)
put("image", "baseline_444.jpg", jpeg(rgb_img, quality=75, subsampling=0))
put("image", "progressive.jpg", jpeg(rgb_img, quality=80, progressive=True))
put("image", "gray.jpg", jpeg(Image.fromarray(smooth[:, :, 0], "L"), quality=85))
put("image", "odd_size_13x7.jpg", jpeg(Image.fromarray(smooth[:7, :13].copy(), "RGB"), quality=60))
put("image", "restart_markers.jpg", jpeg(rgb_img, quality=70, restart_marker_blocks=1))
put("image", "bad_cmyk.jpg", jpeg(Image.fromarray(np.concatenate([smooth, smooth[:, :, :1]], -1), "CMYK"), quality=80))
sos = base_jpg.index(b"\xff\xda")
assert len(base_jpg) - sos > 40
put("image", "bad_jpg_truncated_data.jpg", base_jpg[:-(len(base_jpg) - sos) // 2])
put("image", "bad_jpg_truncated_header.jpg", base_jpg[:150])
put("image", "bad_jpg_no_eoi.jpg", base_jpg[:-2])
sof = base_jpg.index(b"\xff\xc0")
put("image", "bad_jpg_zero_height.jpg", base_jpg[:sof + 5] + b"\0\0" + base_jpg[sof + 7:])
put("image", "bad_jpg_huge.jpg", base_jpg[:sof + 5] + b"\xff\xdc\xff\xdc" + base_jpg[sof + 9:])
put("image", "bad_jpg_12bit.jpg", base_jpg[:sof + 4] + b"\x0c" + base_jpg[sof + 5:])
put("image", "bad_jpg_garbage.jpg", b"\xff\xd8" + bytes(r.integers(0, 256, 300, dtype=np.uint8)))
put("image", "bad_gif.gif", b"GIF89a\x01\x00\x01\x00\x00\x00\x00;")
put("image", "bad_random.bin", bytes(r.integers(0, 256, 64, dtype=np.uint8)))
put("image", "empty.bin", b"")
put("image", "one_byte.bin", b"G")
for t in ("safetensors", "image"):
    for f in os.listdir(os.path.join(out, t)):
        assert os.path.getsize(os.path.join(out, t, f)) < 4096, f


total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(out) for f in fs)
print("corpus: %d files, %d bytes in %s" % (sum(len(fs) for _, _, fs in os.walk(out)), total, out))
assert total < 1 << 20
PY
