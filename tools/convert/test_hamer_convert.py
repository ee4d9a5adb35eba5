#!/usr/bin/python3
"""test_hamer_convert.py: tests tools/convert/hamer.py on a FAKE checkpoint and a FAKE MANO pickle
(CTest `hamer_convert`; exit 77 = skipped when torch or numpy is missing).

  /usr/bin/python3 tools/convert/test_hamer_convert.py [-v]

The checkpoint is a real torch.save zip of a Lightning-like dict (state_dict with HaMeR's key
names at depth 2 and the converter's --tiny-test-dims widths, discriminator.* and mano.* extras,
a transposed view, two tensors sharing one storage, a bf16 tensor, a stand-in yacs CfgNode as
hyper_parameters). The MANO pickle is written with stand-in classes registered in sys.modules
under chumpy.ch.Ch and scipy.sparse.csc.csc_matrix, in protocols 2 and 1 (NEWOBJ and
copyreg._reconstructor paths); its arrays are random, not MANO data. Checked: every output
tensor and the metadata, --dtype bf16, missing / unexpected / wrong-shape keys named in the
error, refusal of pickles that reference os.system or builtins.eval (without running them), a
non-zip file, and that the converter's expected shapes equal tools/ref/hamer_ref.py's module at
full size (630,912,000 + 39,497,837 parameters).
"""
import collections
import contextlib
import os
import pickle
import subprocess
import sys
import tempfile
import types
import zipfile

try:
    import numpy as np
    import torch
except ImportError as e:          # CTest SKIP_RETURN_CODE 77
    print(f'SKIP: test_hamer_convert needs numpy and torch (Debian python3-numpy, python3-torch): {e}')
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
CONVERTER = os.path.join(HERE, 'hamer.py')
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'ref'))
import hamer as conv  # noqa: E402
import hamer_st as st  # noqa: E402

VERBOSE = '-v' in sys.argv
FAILS = []
NV, NF, NJ = 778, 1538, 16


def check(name, cond, detail=''):
    if not cond:
        FAILS.append(name)
    if VERBOSE or not cond:
        print(f'{"ok  " if cond else "FAIL"} {name} {detail}')


# ---- stand-in modules for writing the fake pickles ----
@contextlib.contextmanager
def fake_modules():
    names = ['chumpy', 'chumpy.ch', 'scipy', 'scipy.sparse', 'scipy.sparse.csc', 'yacs', 'yacs.config']
    saved = {n: sys.modules.get(n) for n in names}
    mods = {n: types.ModuleType(n) for n in names}

    class Ch:
        def __init__(self, x):
            self.x = np.asarray(x, np.float64)
            self._dirty_vars = {'x'}
            self._itr = None
            self._depends_on_deps = {}
            self._make_dense = False
            self._make_sparse = False

    class csc_matrix:
        def __init__(self, dense):
            dense = np.asarray(dense, np.float64)
            data, indices, indptr = [], [], [0]
            for j in range(dense.shape[1]):
                nz = np.nonzero(dense[:, j])[0]
                indices += nz.tolist()
                data += dense[nz, j].tolist()
                indptr.append(len(data))
            self.data = np.array(data)
            self.indices = np.array(indices, np.int32)
            self.indptr = np.array(indptr, np.int32)
            self._shape = dense.shape
            self.maxprint = 50
            self.format = 'csc'

    class CfgNode(dict):
        pass
    for cls, mod in ((Ch, 'chumpy.ch'), (csc_matrix, 'scipy.sparse.csc'), (CfgNode, 'yacs.config')):
        cls.__module__ = mod
        cls.__qualname__ = cls.__name__
        setattr(mods[mod], cls.__name__, cls)
    sys.modules.update(mods)
    try:
        yield types.SimpleNamespace(Ch=Ch, csc_matrix=csc_matrix, CfgNode=CfgNode)
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


def fake_mano_arrays(rng):
    jr = np.zeros((NJ, NV))
    for j in range(NJ):
        idx = rng.choice(NV, 6, replace=False)
        jr[j, idx] = rng.random(6)
    kt = np.array([[4294967295, 0, 1, 2, 0, 4, 5, 0, 7, 8, 0, 10, 11, 0, 13, 14], list(range(NJ))],
                  np.int64)
    return {'v_template': rng.standard_normal((NV, 3)), 'shapedirs': rng.standard_normal((NV, 3, 10)),
            'posedirs': rng.standard_normal((NV, 3, 135)), 'J_regressor': jr,
            'weights': rng.random((NV, NJ)), 'kintree_table': kt,
            'f': rng.integers(0, NV, (NF, 3)).astype(np.uint32),
            'hands_components': rng.standard_normal((45, 45)), 'hands_mean': rng.standard_normal(45),
            'hands_coeffs': rng.standard_normal((20, 45)), 'J': rng.standard_normal((NJ, 3)),
            'bs_style': 'lbs', 'bs_type': 'lrotmin'}


def write_fake_mano(path, arrays, protocol):
    with fake_modules() as fm:
        d = dict(arrays)
        d['shapedirs'] = fm.Ch(arrays['shapedirs'])
        d['J_regressor'] = fm.csc_matrix(arrays['J_regressor'])
        d['J_regressor_prior'] = fm.csc_matrix(arrays['J_regressor'] * 0.5)
        with open(path, 'wb') as f:
            pickle.dump(d, f, protocol=protocol)


def fake_state_dict(rng, depth=2, drop=(), extra=(), reshape=None):
    sd = collections.OrderedDict()
    for k, shp in conv.network_shapes(depth, conv.TINY_DIMS).items():
        sd[k] = torch.from_numpy(rng.standard_normal(shp).astype(np.float32))
    # a transposed view (non-contiguous strides) and two tensors sharing one storage
    k = 'backbone.blocks.0.attn.proj.weight'
    sd[k] = torch.from_numpy(rng.standard_normal(sd[k].shape[::-1]).astype(np.float32)).t()
    big = torch.from_numpy(rng.standard_normal(40).astype(np.float32))
    sd['backbone.blocks.1.norm1.weight'] = big[3:19]
    sd['backbone.blocks.1.norm1.bias'] = big[20:36]
    sd['mano_head.decshape.bias'] = sd['mano_head.decshape.bias'].to(torch.bfloat16)
    sd['discriminator.D_conv_layers.0.weight'] = torch.zeros(32, 9, 1)
    sd['mano.v_template'] = torch.zeros(NV, 3)
    sd['mano.faces_tensor'] = torch.zeros(NF, 3, dtype=torch.int64)
    for k in drop:
        del sd[k]
    for k, shp in extra:
        sd[k] = torch.zeros(shp)
    for k, shp in (reshape or {}).items():
        sd[k] = torch.zeros(shp)
    return sd


def write_fake_ckpt(path, sd):
    with fake_modules() as fm:
        hp = fm.CfgNode(MODEL=fm.CfgNode(IMAGE_SIZE=256, BBOX_SHAPE=[192, 256]),
                        EXTRA=fm.CfgNode(FOCAL_LENGTH=5000))
        torch.save({'epoch': 3, 'global_step': 1000, 'pytorch-lightning_version': '2.0.0',
                    'state_dict': sd, 'hyper_parameters': hp, 'callbacks': {},
                    'optimizer_states': [], 'lr_schedulers': []}, path)


def run_converter(*args):
    p = subprocess.run([sys.executable, CONVERTER, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def main():
    rng = np.random.default_rng(7)
    tmp = tempfile.mkdtemp(prefix='hamer_convert_test.')
    ck, mp = os.path.join(tmp, 'fake.ckpt'), os.path.join(tmp, 'MANO_FAKE.pkl')
    mano = fake_mano_arrays(rng)
    write_fake_mano(mp, mano, protocol=2)
    sd = fake_state_dict(rng)
    write_fake_ckpt(ck, sd)
    tiny = ['--depth', '2', '--tiny-test-dims']

    # 1. conversion, f32
    out = os.path.join(tmp, 'out', 'hamer.safetensors')
    rc, log = run_converter('--ckpt', ck, '--mano', mp, '--out', out, *tiny)
    check('convert f32 exit 0', rc == 0, log)
    if rc == 0:
        t, meta = st.read_safetensors(out)
        hdr, _, _, _ = st.read_header(out)
        want = list(conv.network_shapes(2, conv.TINY_DIMS)) + \
            ['mano.v_template', 'mano.shapedirs', 'mano.posedirs', 'mano.J_regressor',
             'mano.weights', 'mano.faces', 'mano.parents']
        check('keys (and nothing else)', sorted(t) == sorted(want),
              f'{sorted(set(t) ^ set(want))[:6]}')
        same = all(np.array_equal(t[k], sd[k].float().numpy()) for k in conv.network_shapes(2, conv.TINY_DIMS))
        check('network tensors equal (views, shared storage, bf16 storage)', same)
        check('network dtypes F32', all(hdr[k]['dtype'] == 'F32' for k in want[:-2]))
        check('metadata', meta.get('format') == 'perceive-hamer' and meta.get('format_version') == '1'
              and meta.get('weights') == 'release' and meta.get('depth') == '2', str(meta))
        check('sha256s', meta.get('hamer_ckpt_sha256') == st.sha256_file(ck)
              and meta.get('mano_sha256') == st.sha256_file(mp))
        check('mano arrays', np.array_equal(t['mano.v_template'], mano['v_template'].astype(np.float32))
              and np.array_equal(t['mano.shapedirs'], mano['shapedirs'].astype(np.float32))
              and np.array_equal(t['mano.posedirs'], mano['posedirs'].astype(np.float32))
              and np.array_equal(t['mano.J_regressor'], mano['J_regressor'].astype(np.float32))
              and np.array_equal(t['mano.weights'], mano['weights'].astype(np.float32)))
        check('mano faces / parents I32', hdr['mano.faces']['dtype'] == 'I32'
              and hdr['mano.parents']['dtype'] == 'I32'
              and np.array_equal(t['mano.faces'], mano['f'].astype(np.int32))
              and t['mano.parents'].tolist() == [-1, 0, 1, 2, 0, 4, 5, 0, 7, 8, 0, 10, 11, 0, 13, 14])
        vals = [f'{v:.4f}'[:6] for v in (mano['v_template'][0, 0], mano['weights'][0, 0],
                                          mano['posedirs'][0, 0, 0])]
        check('converter prints no MANO values', not any(v in log for v in vals), log)

    # 2. bf16 matrices, F32 vectors
    outb = os.path.join(tmp, 'hamer_bf16.safetensors')
    rc, log = run_converter('--ckpt', ck, '--mano', mp, '--out', outb, '--dtype', 'bf16', *tiny)
    check('convert bf16 exit 0', rc == 0, log)
    if rc == 0:
        hdr, _, _, _ = st.read_header(outb)
        tb, _ = st.read_safetensors(outb)
        shapes = conv.network_shapes(2, conv.TINY_DIMS)
        mats = [k for k, s in shapes.items() if k.endswith('.weight') and len(s) >= 2]
        check('bf16: matrices BF16, the rest F32',
              all(hdr[k]['dtype'] == ('BF16' if k in mats else 'F32') for k in shapes)
              and hdr['mano.posedirs']['dtype'] == 'F32')
        err = max(float(np.max(np.abs(tb[k] - sd[k].float().numpy()) /
                               (np.abs(sd[k].float().numpy()) + 1e-30))) for k in mats)
        check('bf16 values within 2^-8 relative', err <= 2 ** -8, f'{err:.2e}')
        check('bf16 vectors exact', all(np.array_equal(tb[k], sd[k].float().numpy())
                                        for k in shapes if k not in mats))

    # 3. MANO pickled with protocol 1 (copyreg._reconstructor) gives the same arrays
    mp1 = os.path.join(tmp, 'MANO_FAKE_p1.pkl')
    write_fake_mano(mp1, mano, protocol=1)
    try:
        a2, a1 = conv.read_mano(mp), conv.read_mano(mp1)
        check('MANO protocol 1 = protocol 2', all(np.array_equal(a1[k], a2[k]) for k in a2))
    except conv.ConvertError as e:
        check('MANO protocol 1 = protocol 2', False, str(e))

    # 4-6. key problems are named
    for what, kw, needle in (
            ('missing', dict(drop=['backbone.blocks.1.mlp.fc2.bias']), 'backbone.blocks.1.mlp.fc2.bias'),
            ('unexpected', dict(extra=[('backbone.blocks.2.norm1.weight', (16,))]), 'backbone.blocks.2.norm1.weight'),
            ('wrong shape', dict(reshape={'mano_head.deccam.weight': (4, 8)}),
             'mano_head.deccam.weight: [4, 8] != [3, 8]')):
        p = os.path.join(tmp, f'bad_{what.replace(" ", "_")}.ckpt')
        write_fake_ckpt(p, fake_state_dict(np.random.default_rng(1), **kw))
        rc, log = run_converter('--ckpt', p, '--mano', mp, '--out', os.path.join(tmp, 'x.safetensors'), *tiny)
        check(f'{what} key refused and named', rc == 1 and what in log and needle in log, log)
    rc, log = run_converter('--ckpt', ck, '--mano', mp, '--out', os.path.join(tmp, 'x.safetensors'))
    check('tiny checkpoint refused at full size', rc == 1 and 'wrong shape' in log
          and 'missing: backbone.blocks.2.' in log, log[:300])

    # 7. forbidden globals are refused before anything runs
    marker = os.path.join(tmp, 'MARKER')
    evil = f"cos\nsystem\n(S'touch {marker}'\ntR.".encode()
    pe = os.path.join(tmp, 'evil.ckpt')
    with zipfile.ZipFile(pe, 'w') as z:
        z.writestr('evil/data.pkl', evil)
        z.writestr('evil/version', '3\n')
    rc, log = run_converter('--ckpt', pe, '--mano', mp, '--out', os.path.join(tmp, 'x.safetensors'))
    check('checkpoint with os.system refused', rc == 1 and 'os.system' in log and 'refusing' in log
          and not os.path.exists(marker), log)
    pm = os.path.join(tmp, 'evil_mano.pkl')
    with open(pm, 'wb') as f:
        f.write(f"cbuiltins\neval\n(S'open({marker!r}, \"w\")'\ntR.".encode())
    rc, log = run_converter('--ckpt', ck, '--mano', pm, '--out', os.path.join(tmp, 'x.safetensors'), *tiny)
    check('MANO pickle with builtins.eval refused', rc == 1 and 'builtins.eval' in log
          and not os.path.exists(marker), log)
    pn = os.path.join(tmp, 'not_a_zip.ckpt')
    with open(pn, 'wb') as f:
        f.write(pickle.dumps({'state_dict': {}}))
    rc, log = run_converter('--ckpt', pn, '--mano', mp, '--out', os.path.join(tmp, 'x.safetensors'), *tiny)
    check('non-zip checkpoint refused', rc == 1 and 'not a zip' in log, log)
    check('no output left by failures', not os.path.exists(os.path.join(tmp, 'x.safetensors')))

    # 8. the converter's architecture equals the reference module's, at full size
    import hamer_ref
    full = conv.network_shapes(32)
    check('shapes = hamer_ref.HaMeRNet(32)', dict(full) == hamer_ref.expected_shapes(32))
    nb = sum(int(np.prod(s)) for k, s in full.items() if k.startswith('backbone.'))
    nh = sum(int(np.prod(s)) for k, s in full.items()
             if k.startswith('mano_head.') and '.init_' not in k)
    check('parameter counts 630,912,000 / 39,497,837', (nb, nh) == (630_912_000, 39_497_837), f'{nb:,} {nh:,}')

    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        print(f'test_hamer_convert: {len(FAILS)} failure(s): {FAILS}')
        return 1
    print('test_hamer_convert: all ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())
