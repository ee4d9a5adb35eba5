#!/bin/sh
# Regenerates the seed corpora tests/fuzz/corpus/<target>/ (valid files and edge cases, all
# small; < 1 MB together). Run from anywhere: tests/fuzz/make_corpus.sh. Needs Debian's
# /usr/bin/python3 with numpy (tools only). The point fixtures of tests/fixtures/points and the
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

for t in os.listdir(out) if os.path.isdir(out) else []:
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

total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(out) for f in fs)
print("corpus: %d files, %d bytes in %s" % (sum(len(fs) for _, _, fs in os.walk(out)), total, out))
assert total < 1 << 20
PY
