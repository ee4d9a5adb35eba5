#!/usr/bin/python3
"""bevfusion_ort_check.py: cross-checks the dense part of a filled BEVFusion ONNX (from
spatial_features [1,256,180,180] to bbox_pred/score/label_pred) between ONNX Runtime (through
tools/gen/ort_run.mjs) and tools/ref/bevfusion_ref.py's own torch/numpy forward.

    bevfusion_ort_check.py --model FILLED.onnx --spatial SPATIAL.npy [--work DIR]

Prints max abs diffs of bbox_pred and score, the Pearson correlations and whether label_pred
is identical. Exit status 1 when the PCC of either float output is below 0.9999 or more than
a few labels differ.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.utils

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))


def compare(o, r, tie_rel=1e-4):
    """Proposal outputs of two implementations, tie-aware: proposals are matched by their TopK
    index (label * 32400 + cell); a proposal present in only one, or a different position, is
    accepted only where the reference heat values around it are within tie_rel (relative) of a
    neighbour. -> True when something is wrong."""
    oi, ri = o['top_index'].reshape(-1), r['top_index'].reshape(-1)
    h = r['heat_top'].astype(np.float64)
    gap = np.abs(np.diff(h)) / np.maximum(h[1:], 1e-30)
    near = np.zeros(len(h), bool)               # position p is in a near-tie with p-1 or p+1
    near[1:] |= gap < tie_rel
    near[:-1] |= gap < tie_rel
    moved = np.nonzero(oi != ri)[0]
    bad = bool((~near[moved]).any())
    common, io, ir = np.intersect1d(oi, ri, return_indices=True)
    print('proposals: %d positions differ (%s near-ties), %d of %d in both' %
          (len(moved), 'all' if not bad else 'NOT all', len(common), len(ri)))
    for k in ('bbox_pred', 'score'):
        ov, rv = o[k].reshape(-1, len(oi))[:, io], r[k].reshape(-1, len(ri))[:, ir]
        d = np.abs(ov.astype(np.float64) - rv).max()
        pcc = np.corrcoef(ov.reshape(-1), rv.reshape(-1))[0, 1]
        print('%-10s (matched by index) max abs diff %.3g  PCC %.8f' % (k, d, pcc))
        bad |= pcc < 0.9999
    nl = int((o['label_pred'].reshape(-1)[io] != r['label_pred'].reshape(-1)[ir]).sum())
    print('label_pred %d of %d matched proposals differ' % (nl, len(common)))
    return bad or nl > 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--model', required=True)
    ap.add_argument('--spatial', required=True)
    ap.add_argument('--voxels', help='npz from bevfusion_ref.py run --save-voxels: also checks the VFE and '
                    'the coors -> indices part (graph inputs to voxel_features / indices_l0)')
    ap.add_argument('--work')
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix='bf_ort_')
    os.makedirs(work, exist_ok=True)
    dense = os.path.join(work, 'dense.onnx')
    onnx.utils.extract_model(a.model, dense, ['spatial_features'], ['bbox_pred', 'score', 'label_pred', 'top_index'])
    x = np.load(a.spatial).astype(np.float32)
    np.savez(os.path.join(work, 'in.npz'), spatial_features=x)
    subprocess.run(['node', os.path.join(ROOT, 'tools', 'gen', 'ort_run.mjs'), dense,
                    os.path.join(work, 'in.npz'), os.path.join(work, 'ort.npz'), '--threads', '2'], check=True)
    subprocess.run([sys.executable, os.path.join(HERE, 'bevfusion_ref.py'), 'dense', '--model', a.model,
                    '--spatial', a.spatial, '--out', os.path.join(work, 'ref.npz')], check=True)
    o, r = np.load(os.path.join(work, 'ort.npz')), np.load(os.path.join(work, 'ref.npz'))
    bad = False
    if a.voxels:
        front = os.path.join(work, 'front.onnx')
        onnx.utils.extract_model(a.model, front, ['voxels', 'num_points_per_voxel', 'coors'],
                                 ['voxel_features', 'indices_l0'])
        v = np.load(a.voxels)
        np.savez(os.path.join(work, 'fin.npz'), voxels=v['voxels'], num_points_per_voxel=v['num_points_per_voxel'],
                 coors=v['coors'])
        subprocess.run(['node', os.path.join(ROOT, 'tools', 'gen', 'ort_run.mjs'), front,
                        os.path.join(work, 'fin.npz'), os.path.join(work, 'fout.npz')], check=True)
        f = np.load(os.path.join(work, 'fout.npz'))
        dv = np.abs(f['voxel_features'] - v['ref_voxel_features']).max()
        c = v['coors']
        want = np.stack([np.zeros(len(c), np.int32), c[:, 2], c[:, 1], c[:, 0]], axis=1)
        same = f['indices_l0'].dtype == np.int32 and np.array_equal(f['indices_l0'], want)
        print('VFE       max abs diff %.3g; indices (0, x, y, z) int32 %s (%d voxels)' %
              (dv, 'identical' if same else 'DIFFER', len(c)))
        bad |= dv > 1e-5 or not same
        # to-dense: conv_out's out_indices + features -> ScatterND -> Transposes -> Reshape
        m = onnx.load(a.model, load_external_data=False)
        scat = [n for n in m.graph.node if n.op_type == 'ScatterND'][0]
        cast = [n for n in m.graph.node if scat.input[1] in n.output][0]
        todense = os.path.join(work, 'todense.onnx')
        onnx.utils.extract_model(a.model, todense, [cast.input[0], scat.input[2]], ['spatial_features'])
        np.savez(os.path.join(work, 'din.npz'), **{cast.input[0]: v['conv_out_indices'],
                                                   scat.input[2]: v['conv_out_features']})
        subprocess.run(['node', os.path.join(ROOT, 'tools', 'gen', 'ort_run.mjs'), todense,
                        os.path.join(work, 'din.npz'), os.path.join(work, 'dout.npz')], check=True)
        same = np.array_equal(np.load(os.path.join(work, 'dout.npz'))['spatial_features'], np.load(a.spatial))
        print('to-dense  spatial_features %s (%d conv_out sites)' % ('identical' if same else 'DIFFER',
                                                                   len(v['conv_out_indices'])))
        bad |= not same
    bad |= compare(o, r)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
