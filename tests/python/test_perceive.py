"""The Python package (python/perceive) against the CLI and the committed fixtures:
    test_perceive.py PERCEIVE_CLI SOURCE_DIR
with PYTHONPATH at the source tree's python/ and PERCEIVE_LIB at the build's libperceive.so.
Exit 77 (SKIP) without numpy. Checks: JSON equal to `perceive run ... --no-timing` (bevfusion on
the shipped frame from a path and from a numpy array; hamer on the shipped picture with boxes,
from a path and from a numpy image), the typed objects / hands against that JSON, params, sweeps,
every error class with the C message, close twice, use after close, two threads at once, and
Graph on committed ONNX fixtures against their expected outputs."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import zlib

try:
    import numpy as np
except ImportError:
    print("SKIP: python3-numpy is not installed (apt-get install python3-numpy)")
    sys.exit(77)

import perceive

CLI, SRC = sys.argv[1], sys.argv[2]
SCENE = os.path.join(SRC, "tests/fixtures/bevfusion/scene")
FRAME = os.path.join(SCENE, "scene_000.pcd")
IMAGE = os.path.join(SRC, "tests/fixtures/hamer/image.png")
BOXES = ["233,141,322,301", "521,276,689,397,0"]   # a right and a left hand (tools/run_demo.sh)


def cli_json(*args):
    """`perceive run ... --json F --no-timing` parsed."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        subprocess.run([CLI, "run", *args, "--json", out, "--no-timing", "--quiet", "--threads", "2"], check=True,
                       stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def untimed(d):
    d = dict(d)
    d.pop("timing_ms", None)
    return d


def read_pcd_xyzi(path):
    """The shipped frame's points (binary PCD, fields x y z intensity as float32)."""
    with open(path, "rb") as f:
        raw = f.read()
    head, _, body = raw.partition(b"DATA binary\n")
    assert b"FIELDS x y z intensity" in head and b"TYPE F F F F" in head, head
    return np.frombuffer(body, dtype=np.float32).reshape(-1, 4)


def read_png_rgb8(path):
    """A non-interlaced 8-bit RGB PNG decoded here (independent of the package's encoder and libpng)."""
    with open(path, "rb") as f:
        raw = f.read()
    pos, idat, w, h = 8, b"", None, None
    while pos < len(raw):
        n = int.from_bytes(raw[pos:pos + 4], "big")
        kind, data = raw[pos + 4:pos + 8], raw[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h = int.from_bytes(data[0:4], "big"), int.from_bytes(data[4:8], "big")
            assert data[8:13] == bytes([8, 2, 0, 0, 0]), "test decoder: 8-bit RGB, non-interlaced only"
        elif kind == b"IDAT":
            idat += data
        pos += 12 + n
    rows = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, 1 + 3 * w)
    out = np.zeros((h, 3 * w), dtype=np.int32)
    for y in range(h):
        ft, cur = rows[y, 0], rows[y, 1:].astype(np.int32)
        prev = out[y - 1] if y else np.zeros(3 * w, np.int32)
        if ft == 0:
            out[y] = cur
        elif ft == 2:
            out[y] = (cur + prev) & 255
        else:   # Sub (1), Average (3) and Paeth (4) depend on the pixel to the left: one at a time
            r = np.zeros(3 * w, np.int32)
            for x in range(3 * w):
                a = r[x - 3] if x >= 3 else 0
                b, c = prev[x], (prev[x - 3] if x >= 3 else 0)
                if ft == 1:
                    pred = a
                elif ft == 3:
                    pred = (a + b) // 2
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                r[x] = (cur[x] + pred) & 255
            out[y] = r
    return out.astype(np.uint8).reshape(h, w, 3)


class BEVFusionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = perceive.BEVFusion.from_pretrained(threads=2)
        cls.want = cli_json("bevfusion", FRAME)

    @classmethod
    def tearDownClass(cls):
        cls.model.close()

    def test_path_equals_cli(self):
        r = self.model(FRAME)
        self.assertEqual(untimed(r.to_dict()), self.want)
        self.assertEqual(json.loads(r.to_json(stable=True)), self.want)
        self.assertEqual(untimed(json.loads(r.to_json())), self.want)
        for k in ("decode", "preprocess", "engine", "postprocess", "total"):
            self.assertGreaterEqual(r.timing_ms[k], 0.0, k)
        self.assertEqual(r.meta["weights"], "generated")

    def test_bytes_and_array_equal_cli(self):
        with open(FRAME, "rb") as f:
            self.assertEqual(untimed(self.model(f.read(), format="pcd").to_dict()), self.want)
        pts = read_pcd_xyzi(FRAME)
        self.assertTrue(pts.flags.c_contiguous)
        self.assertEqual(untimed(self.model(pts).to_dict()), self.want)
        # a strided view (every column but a zero one) is copied to contiguous first: same result
        wide = np.zeros((pts.shape[0], 5), np.float32)
        wide[:, :4] = pts
        self.assertEqual(untimed(self.model(wide[:, :4]).to_dict()), self.want)
        # float16 points are read too (rounded positions: only the run is checked)
        r16 = self.model(pts.astype(np.float16))
        self.assertEqual(r16.meta["num_points"], pts.shape[0])

    def test_objects_mirror_json(self):
        r = self.model(FRAME)
        objs = r.to_dict()["objects"]
        self.assertEqual(len(r.objects), len(objs))
        self.assertGreater(len(objs), 0)
        f32 = lambda v: float(np.float32(v))  # noqa: E731  (JSON prints 9 significant digits of a float32)
        for o, j in zip(r.objects, objs):
            self.assertEqual(o.label, j["label_id"])
            self.assertEqual(o.label_name, j["label"])
            self.assertEqual(o.existence_probability, f32(j["existence_probability"]))
            self.assertEqual(o.position, tuple(f32(v) for v in j["kinematics"]["position"]))
            self.assertEqual(o.orientation, tuple(f32(v) for v in j["kinematics"]["orientation"]))
            self.assertEqual(o.yaw, f32(j["kinematics"]["yaw"]))
            self.assertEqual(o.orientation_availability, j["kinematics"]["orientation_availability"])
            self.assertEqual(o.dimensions, tuple(f32(v) for v in j["shape"]["dimensions"]))
            self.assertEqual(o.shape_type, j["shape"]["type"])
            self.assertEqual(o.velocity, tuple(f32(v) for v in j["velocity"]))
            self.assertEqual((o.class_index, o.proposal), (j["class_index"], j["proposal"]))

    def test_params_sweeps_png_info(self):
        hi = self.model(FRAME, params={"score_threshold": 0.25})
        self.assertEqual(untimed(hi.to_dict()), cli_json("bevfusion", FRAME, "--param", "score_threshold=0.25"))
        pose = [1, 0, 0, -1.5, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]
        sw = self.model(os.path.join(SCENE, "scene_001.pcd"), sweeps=[(FRAME, 0.1, np.array(pose).reshape(4, 4))])
        self.assertEqual(sw.meta["sweeps"], 2)
        self.assertEqual(untimed(sw.to_dict()),
                         cli_json("bevfusion", os.path.join(SCENE, "scene_001.pcd"), "--sweep", FRAME, "--param",
                                  "sweep.0.time_lag_s=0.1", "--param",
                                  "sweep.0.T_current_from_sweep=" + ",".join(map(str, pose))))
        # stream densification: a second frame of the same stream carries the first as a sweep
        s0 = self.model(FRAME, stream={"id": "py", "timestamp_s": 1.0, "T_world_from_ego": np.eye(4)})
        s1 = self.model(os.path.join(SCENE, "scene_001.pcd"),
                        stream={"id": "py", "timestamp_s": 1.1, "T_world_from_ego": np.eye(4), "reset": False})
        self.assertEqual((s0.meta["sweeps"], s1.meta["sweeps"]), (1, 2))
        with self.assertRaises(perceive.InputError) as cm:
            self.model(FRAME, stream={"id": "py", "timestamp_s": 1.2})
        self.assertIn("missing pose", str(cm.exception))
        png = hi.png(width=320)
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        self.assertEqual(int.from_bytes(png[16:20], "big"), 320)
        info = self.model.info()
        self.assertEqual(info["model"], "bevfusion")
        self.assertIn("artifacts", info)
        hi.close()
        hi.close()
        with self.assertRaises(perceive.ClosedError):
            hi.png()

    def test_errors(self):
        m = self.model
        cases = [
            (perceive.InputError, "score_threshold", lambda: m(FRAME, params={"score_threshold": -1})),
            (perceive.InputError, "no_such_param", lambda: m(FRAME, params={"no_such_param": 1})),
            (perceive.InputError, "3..16", lambda: m(np.zeros((4, 2), np.float32))),
            (perceive.InputError, "nope", lambda: perceive.Model("nope")),
            (perceive.InputError, "threads", lambda: perceive.BEVFusion(threads=-1)),
            (perceive.InputError, "precision", lambda: perceive.BEVFusion(precision="fp8")),
            (perceive.InputError, "no-such-file", lambda: m(os.path.join(SCENE, "no-such-file.pcd"))),
            (perceive.FormatError, "truncated", lambda: m(b"VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\n"
                                                          b"COUNT 1 1 1\nWIDTH 5\nHEIGHT 1\nPOINTS 5\nDATA binary\n"
                                                          + bytes(7), format="pcd")),
            (perceive.FormatError, "multiple", lambda: m(bytes(17), format="kitti")),
            (perceive.UnsupportedError, "xyz", lambda: m(b"1 2 3", format="xyz")),
        ]
        for cls, words, call in cases:
            with self.assertRaises(cls, msg=words) as cm:
                call()
            self.assertIsInstance(cm.exception, perceive.PerceiveError)
            self.assertIn(words, str(cm.exception))
            self.assertEqual(cm.exception.message, str(cm.exception))
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(perceive.WeightsError) as cm:
                perceive.BEVFusion.from_pretrained(weights_dir=d, strict=True)
            self.assertIn("bevfusion_lidar.onnx", str(cm.exception))

    def test_close_twice_and_use_after_close(self):
        with perceive.Model("bevfusion", threads=1) as m:
            self.assertEqual(len(m(FRAME).objects), len(self.want["objects"]))
        self.assertTrue(m.closed)
        m.close()
        m.close()
        with self.assertRaises(perceive.ClosedError) as cm:
            m(FRAME)
        self.assertIn("closed", str(cm.exception))
        with self.assertRaises(perceive.ClosedError):
            m.info()

    def test_two_threads_at_once(self):
        """Both calls run inside the C library at the same time (ctypes releases the GIL): the second
        thread enters its call before the first one returns, and both equal the serial result."""
        spans, results, errors = [None, None], [None, None], []
        gate = threading.Barrier(2)

        def work(i):
            try:
                gate.wait()
                t0 = time.monotonic()
                r = self.model(FRAME)
                spans[i] = (t0, time.monotonic())
                results[i] = untimed(r.to_dict())
            except Exception as e:  # reported below
                errors.append(e)
        ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(results, [self.want, self.want])
        (a0, a1), (b0, b1) = spans
        self.assertTrue(a0 < b1 and b0 < a1, "the two runs did not overlap: %s" % spans)


class HaMeRTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = perceive.HaMeR.from_pretrained(threads=2)
        cls.want = cli_json("hamer", IMAGE, "--box", BOXES[0], "--box", BOXES[1][:-2], "--left")

    @classmethod
    def tearDownClass(cls):
        cls.model.close()

    def test_image_with_boxes_equals_cli(self):
        r = self.model(IMAGE, params={"box": BOXES})
        self.assertEqual(untimed(r.to_dict()), self.want)
        self.assertEqual([h.is_right for h in r.hands], [True, False])
        for h, j in zip(r.hands, self.want["hands"]):
            self.assertEqual(h.vertices.shape, (778, 3))
            self.assertEqual(h.hand_pose.shape, (15, 3, 3))
            np.testing.assert_array_equal(h.vertices, np.array(j["vertices"], np.float32))
            np.testing.assert_array_equal(h.keypoints_2d, np.array(j["keypoints_2d"], np.float32))
            np.testing.assert_array_equal(h.box, np.array(j["box"], np.float32))
        self.assertEqual(r.faces.shape, (1538, 3))
        self.assertEqual(r.png()[:4], b"\x89PNG")

    def test_numpy_image_equals_cli(self):
        img = read_png_rgb8(IMAGE)
        self.assertEqual(img.shape, (480, 640, 3))
        self.assertEqual(untimed(self.model(img, params={"box": BOXES}).to_dict()), self.want)

    def test_crop_and_errors(self):
        crop = np.random.RandomState(1).randint(0, 256, (256, 192, 3)).astype(np.uint8)
        r = self.model(crop, format="rgb8")
        self.assertEqual(r.meta["input"], "crop")
        self.assertEqual(len(r.hands), 1)
        with self.assertRaises(perceive.InputError) as cm:
            self.model(IMAGE, params={"box": ["1,2,3"]})
        self.assertIn("box", str(cm.exception))
        with self.assertRaises(perceive.InputError):
            self.model(np.zeros((4, 4, 3), np.uint8), format="jpeg")


class GraphTest(unittest.TestCase):
    def check_fixture(self, case, atol=1e-4, rtol=1e-4):
        d = os.path.join(SRC, "tests/fixtures", case)
        ins, want = np.load(os.path.join(d, "inputs.npz")), np.load(os.path.join(d, "expected.npz"))
        with perceive.Graph(os.path.join(d, "model.onnx"), threads=2) as g:
            self.assertEqual(sorted(i.name for i in g.inputs), sorted(ins.files))
            self.assertEqual(sorted(o.name for o in g.outputs), sorted(want.files))
            got = g.run({k: ins[k] for k in ins.files})
            self.assertEqual(sorted(got), sorted(want.files))
            for k in want.files:
                self.assertEqual(got[k].dtype, want[k].dtype, k)
                self.assertEqual(got[k].shape, want[k].shape, k)
                np.testing.assert_allclose(got[k].astype(np.float64), want[k].astype(np.float64), atol=atol, rtol=rtol,
                                           err_msg="%s: %s" % (case, k))
            again = g.run([ins[k] for k in ins.files])   # by position; outputs are copies, not the arena
            for k in want.files:
                np.testing.assert_array_equal(again[k], got[k])
        return g

    def test_fixtures(self):
        self.check_fixture("demo")
        self.check_fixture("ops/chain_conv_bn_relu")
        self.check_fixture("ops/conv2d_f16", atol=1e-2, rtol=1e-2)
        self.check_fixture("ops/abs_i64", atol=0, rtol=0)

    def test_errors_and_close(self):
        g = self.check_fixture("ops/chain_conv_bn_relu")
        g.close()
        with self.assertRaises(perceive.ClosedError):
            g.run({"x": np.zeros((1, 3, 6, 6), np.float32)})
        with self.assertRaises(perceive.PerceiveError) as cm:
            perceive.Graph(os.path.join(SRC, "tests/fixtures/no-such.onnx"))
        self.assertIn("no-such.onnx", str(cm.exception))
        with perceive.Graph(os.path.join(SRC, "tests/fixtures/ops/chain_conv_bn_relu/model.onnx")) as g:
            self.assertEqual(g.inputs[0].shape, (1, 3, 6, 6))
            with self.assertRaises(perceive.InputError) as cm:
                g.run({"nope": np.zeros((1, 3, 6, 6), np.float32)})
            self.assertIn("nope", str(cm.exception))
            with self.assertRaises(perceive.InputError):
                g.run({"x": np.zeros((1, 3, 6, 6), np.complex64)})


if __name__ == "__main__":
    print("perceive from %s, library %s (%s)" % (os.path.dirname(perceive.__file__), perceive.library_path, perceive.isa()))
    unittest.main(argv=sys.argv[:1], verbosity=2)
