#!/usr/bin/python3
"""bevfusion_gen.py: writes a structure-only ONNX with the layout of Autoware's BEVFusion-L
release (`bevfusion_lidar.onnx`, AutowareFoundation/bevfusion v2.0), following
/work/shared/specs/bevfusion.md sections 1.6-2.8.

    bevfusion_gen.py --out src/models/bevfusion/skeleton.onnx [--bn-form batchnorm|muladd]
                     [--calib STATS.npz] [--fill-seed 1]

Every weight and bias initializer is written WITHOUT data, with TensorProto.doc_string
"fill=uniform:LO:HI"; `perceive onnx fill IN OUT --seed S` completes it with values seeded by
(S, tensor name). Small tensors whose values matter exactly carry data: BatchNorm running
statistics (calibrated on the synthetic scene by `tools/ref/bevfusion_ref.py --calibrate`, read
here from --calib), bev_pos, the TopK K, shapes, the heatmap output bias.

With --bn-form muladd the 21 sparse BatchNorms become Mul by a [C] scale + Add a [C] shift
(the other op form the real export may use). Those constants are computed here from the
calibrated statistics and the gamma/beta that the C fill will generate for --fill-seed (this
script re-implements the fill's random stream), so both variants describe the same network.

Tensor names follow the mmdet3d/AWML module paths (pts_middle_encoder..., pts_backbone...,
pts_neck..., pts_bbox_head...); tools/ref/bevfusion_ref.py reads the weights by these names.
"""
import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
NUM_CLASSES = 5
NUM_PROPOSALS = 500
BEV = 180                     # 1440 / 8
BEV_CELLS = BEV * BEV         # 32,400
HEATMAP_BIAS = -2.19          # background ranks low (focal-loss prior 0.1)
PRED_HEATMAP_BIAS = 0.0       # refined class logit prior of the prediction head
# The dense heatmap logits: the BN statistics are dominated by the empty BEV cells (95 % of
# them), so occupied cells sit several standard deviations out; a quarter of the unit-gain
# weight range keeps the peaks off sigmoid saturation (near-1 heat values would tie in fp32).
HEATMAP_GAIN = 1.0 / 16.0     # variance gain: weight range sqrt(3 * gain / fan_in)
# shared_conv has no BN after it and its output (the BEV keys/values of the cross-attention
# over 32,400 cells, and the query features) would carry the same outliers; a quarter of the He
# range keeps the attention logits moderate (better conditioned softmax, smaller fp32 error).
SHARED_GAIN = 2.0 / 16.0
SPARSE_BN_EPS = 1e-3
DENSE_BN_EPS = 1e-3
HEAD_BN_EPS = 1e-5
LN_EPS = 1e-5
D_MODEL, N_HEADS, FFN = 128, 8, 256

# The 21 sparse convs (spec 2.2): name, kind, ksize, stride, padding, cin, cout, input level.
# Levels: spatial shape of each level's index set, (x, y, z).
LEVEL_SHAPES = [[1440, 1440, 41], [720, 720, 21], [360, 360, 11], [180, 180, 5], [180, 180, 2]]
LEVEL_DIMS = ['voxels_num', 'sites_l1', 'sites_l2', 'sites_l3', 'sites_out']   # symbolic site counts


def sparse_layers():
    """[(prefix, subm, ksize, stride, pad, cin, cout, level_in, role)], role in
    plain | sbb1 | sbb2 | down (down = strided conv producing level_in+1)."""
    L = []
    P = 'pts_middle_encoder.'
    L.append((P + 'conv_input', True, [3, 3, 3], [1, 1, 1], [1, 1, 1], 4, 16, 0, 'plain'))
    chans = [16, 32, 64, 128]
    downs = {0: (32, [1, 1, 1]), 1: (64, [1, 1, 1]), 2: (128, [1, 1, 0])}
    for lv in range(4):
        c = chans[lv]
        for b in range(2):
            pre = P + 'encoder_layers.encoder_layer%d.%d' % (lv + 1, b)
            L.append((pre + '.conv1', True, [3, 3, 3], [1, 1, 1], [1, 1, 1], c, c, lv, 'sbb1'))
            L.append((pre + '.conv2', True, [3, 3, 3], [1, 1, 1], [1, 1, 1], c, c, lv, 'sbb2'))
        if lv in downs:
            co, pad = downs[lv]
            pre = P + 'encoder_layers.encoder_layer%d.2' % (lv + 1)
            L.append((pre + '.0', False, [3, 3, 3], [2, 2, 2], pad, c, co, lv, 'down'))
    L.append((P + 'conv_out.0', False, [1, 1, 3], [1, 1, 2], [0, 0, 0], 128, 128, 3, 'down'))
    return L


def sparse_bn_name(conv_name):
    """BN prefix belonging to a sparse conv weight prefix."""
    if conv_name.endswith('.conv1'):
        return conv_name[:-6] + '.bn1'
    if conv_name.endswith('.conv2'):
        return conv_name[:-6] + '.bn2'
    if conv_name.endswith('.0'):
        return conv_name[:-2] + '.1'
    if conv_name.endswith('conv_input'):
        return conv_name + '.1'
    raise ValueError(conv_name)


def sparse_weight_name(conv_name):
    return conv_name + ('.0.weight' if conv_name.endswith('conv_input') else '.weight')


def bn_channels():
    """Every BatchNorm of the network: {prefix: (channels, eps)} in graph order."""
    out = {}
    for (pre, subm, k, s, p, ci, co, lv, role) in sparse_layers():
        out[sparse_bn_name(pre)] = (co, SPARSE_BN_EPS)
    for b, (cin, cout) in enumerate([(256, 128), (128, 256)]):
        for j in range(6):
            out['pts_backbone.blocks.%d.%d' % (b, 3 * j + 1)] = (cout, DENSE_BN_EPS)
    out['pts_neck.deblocks.0.1'] = (256, DENSE_BN_EPS)
    out['pts_neck.deblocks.1.1'] = (256, DENSE_BN_EPS)
    H = 'pts_bbox_head.'
    out[H + 'heatmap_head.0.bn'] = (D_MODEL, HEAD_BN_EPS)
    for pe in ('self_posembed', 'cross_posembed'):
        out[H + 'decoder.0.%s.position_embedding_head.1' % pe] = (D_MODEL, HEAD_BN_EPS)
    for hd, _ in HEADS:
        out[H + 'prediction_heads.0.%s.0.bn' % hd] = (64, HEAD_BN_EPS)
    return out


HEADS = [('center', 2), ('height', 1), ('dim', 3), ('rot', 2), ('vel', 2), ('heatmap', NUM_CLASSES)]


def bev_pos():
    """[1, 32400, 2] query positions in BEV cells: cell = x*180 + y -> (x + 0.5, y + 0.5)."""
    x, y = np.meshgrid(np.arange(BEV, dtype=np.float32), np.arange(BEV, dtype=np.float32), indexing='ij')
    return np.stack([x.reshape(-1) + 0.5, y.reshape(-1) + 0.5], axis=1)[None].astype(np.float32)


# ---- a Python twin of `perceive onnx fill` (src/graph/onnx_fill.c) for the muladd constants ----
M64 = (1 << 64) - 1


def fill_uniform(name, n, lo, hi, seed):
    """The values the C fill writes for tensor `name` with hint uniform:lo:hi (float32)."""
    s = (seed * 0x9e3779b97f4a7c15) & M64
    for ch in name.encode():
        s = ((s ^ ch) * 1099511628211) & M64
    lo32, hi32 = np.float32(lo), np.float32(hi)
    span = np.float32(hi32 - lo32)
    out = np.empty(n, np.float32)
    for i in range(n):
        s = (s + 0x9e3779b97f4a7c15) & M64
        z = s
        z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
        z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
        z = z ^ (z >> 31)
        u = np.float32(z >> 40) * np.float32(1.0 / 16777216.0)
        out[i] = lo32 + np.float32(span * u)
    return out


def parse_hint(doc):
    assert doc.startswith('fill=uniform:'), doc
    lo, hi = doc[len('fill=uniform:'):].split(':')
    return float(lo), float(hi)


def fmt(v):
    """A short decimal for a hint (strtof reads it back)."""
    return ('%.6g' % v)


class Builder:
    def __init__(self, bn_form, calib, fill_seed):
        self.nodes, self.inits, self.vinfo = [], [], []
        self.bn_form, self.calib, self.fill_seed = bn_form, calib, fill_seed
        self.hints = {}
        self.k = 0

    # -- tensors --
    def tmp(self, base):
        self.k += 1
        return '%s_%d' % (base, self.k)

    def weight(self, name, dims, lo, hi):
        """A float initializer without data; the fill hint gives its range."""
        t = TensorProto()
        t.name = name
        t.data_type = TensorProto.FLOAT
        t.dims.extend(dims)
        t.doc_string = 'fill=uniform:%s:%s' % (fmt(lo), fmt(hi))
        self.hints[name] = t.doc_string
        self.inits.append(t)
        return name

    def he(self, name, dims, fan_in, gain=2.0):
        a = math.sqrt(3.0 * gain / fan_in)
        return self.weight(name, dims, -a, a)

    def const(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, op, inputs, outputs=None, name=None, domain=None, **attrs):
        if outputs is None:
            outputs = [self.tmp(op)]
        elif isinstance(outputs, int):
            outputs = [self.tmp(op) for _ in range(outputs)]
        n = helper.make_node(op, inputs, outputs, name=name or self.tmp('n_' + op), domain=domain, **attrs)
        self.nodes.append(n)
        return outputs[0] if len(outputs) == 1 else outputs

    # -- BatchNorm as BatchNormalization (or Mul + Add for the sparse ones) --
    def bn_stats(self, pre, c):
        if self.calib is not None and pre + '.running_mean' in self.calib:
            m = self.calib[pre + '.running_mean'].astype(np.float32)
            v = self.calib[pre + '.running_var'].astype(np.float32)
            assert m.shape == (c,) and v.shape == (c,), pre
            return m, v
        return np.zeros(c, np.float32), np.ones(c, np.float32)

    def calibrated(self, name, default):
        """A [5] class-logit bias: calibrated (bevfusion_ref.py calibrate) or the default."""
        if self.calib is not None and name in self.calib:
            v = self.calib[name].astype(np.float32)
            assert v.shape == (NUM_CLASSES,), name
            return v
        return np.full(NUM_CLASSES, default, np.float32)

    def bn(self, x, pre, c, eps, muladd=False):
        m, v = self.bn_stats(pre, c)
        g_hint, b_hint = (0.8, 1.2), (-0.1, 0.1)
        if muladd:
            g = fill_uniform(pre + '.weight', c, *g_hint, self.fill_seed)
            b = fill_uniform(pre + '.bias', c, *b_hint, self.fill_seed)
            scale = (g / np.sqrt(v.astype(np.float64) + eps)).astype(np.float32)
            shift = (b - m * scale).astype(np.float32)
            y = self.node('Mul', [x, self.const(pre + '.bn_scale', scale)])
            return self.node('Add', [y, self.const(pre + '.bn_shift', shift)])
        gw = self.weight(pre + '.weight', [c], *g_hint)
        gb = self.weight(pre + '.bias', [c], *b_hint)
        rm = self.const(pre + '.running_mean', m)
        rv = self.const(pre + '.running_var', v)
        return self.node('BatchNormalization', [x, gw, gb, rm, rv], epsilon=eps, momentum=0.9)

    def relu(self, x):
        return self.node('Relu', [x])

    def conv(self, x, wname, dims, fan_in, bias=None, gain=2.0, **attrs):
        ins = [x, self.he(wname, dims, fan_in, gain)]
        if bias is not None:
            ins.append(bias)
        return self.node('Conv', ins, **attrs)

    # ------------------------------------------------------------------ graph parts
    def vfe_and_indices(self):
        i64 = lambda v: self.const(self.tmp('c_i64'), np.array(v, np.int64))
        s = self.node('ReduceSum', ['voxels', i64([1])], keepdims=0)             # [N,4]
        n = self.node('Cast', ['num_points_per_voxel'], to=TensorProto.FLOAT)   # [N]
        n = self.node('Reshape', [n, i64([-1, 1])])
        feat = self.node('Div', [s, n], ['voxel_features'])
        # coors (z,y,x) -> flip -> (x,y,z); batch column of zeros in front; int32
        flip = self.node('Slice', ['coors', i64([-1]), i64([-(1 << 63) + 1]), i64([1]), i64([-1])])
        shp = self.node('Shape', ['coors'])
        nrow = self.node('Slice', [shp, i64([0]), i64([1]), i64([0])])
        zshape = self.node('Concat', [nrow, i64([1])], axis=0)
        zeros = self.node('ConstantOfShape', [zshape], value=numpy_helper.from_array(np.zeros(1, np.int32)))
        idx = self.node('Concat', [zeros, flip], axis=1)
        idx = self.node('Cast', [idx], ['indices_l0'], to=TensorProto.INT32)
        return feat, idx

    def sparse_conv(self, feat, idx, layer, li):
        pre, subm, k, s, p, ci, co, lv, role = layer
        short = pre.replace('pts_middle_encoder.', '').replace('encoder_layers.', '')
        outs = ['%s.%s' % (short, o) for o in
                ('out_indices', 'pair_fwd', 'pair_mask_fwd', 'mask_argsort_fwd', 'num_act_out')]
        self.node('GetIndicePairsImplicitGemm', [idx], outs, name='GetIndicePairs_%d' % li,
                  domain='autoware', algo=1, batch_size=1, spatial_shape=LEVEL_SHAPES[lv],
                  ksize=k, stride=s, padding=p, dilation=[1, 1, 1], out_padding=[0, 0, 0],
                  subm=int(subm), transpose=0, is_train=0)
        # shapes of the custom ops' outputs (symbolic site counts per level), for tools and readers
        m_in, m_out = LEVEL_DIMS[lv], LEVEL_DIMS[lv if subm else lv + 1]
        I32 = TensorProto.INT32
        for o, dims in zip(outs, ([m_out, 4], [k[0] * k[1] * k[2], m_out], [m_out, 1], [m_out], [])):
            self.vinfo.append(helper.make_tensor_value_info(o, I32, dims))
        self.vinfo.append(helper.make_tensor_value_info(short + '.features', TensorProto.FLOAT, [m_out, co]))
        w = self.he(sparse_weight_name(pre), [co] + k + [ci], k[0] * k[1] * k[2] * ci)
        y = self.node('ImplicitGemm', [feat, w, outs[1], outs[2], outs[3]], [short + '.features'],
                      name='ImplicitGemm_%d' % li, domain='autoware', is_subm=int(subm), is_train=0,
                      act_alpha=0.0, act_beta=0.0, output_scale=1.0, output_add_scale=0.0)
        y = self.bn(y, sparse_bn_name(pre), co, SPARSE_BN_EPS, muladd=self.bn_form == 'muladd')
        return y, outs[0]

    def sparse_encoder(self, feat, idx):
        x, level_idx = feat, idx
        layers = sparse_layers()
        skip = None
        for li, layer in enumerate(layers):
            role = layer[8]
            if role == 'sbb1':
                skip = x
            y, out_idx = self.sparse_conv(x, level_idx, layer, li)
            if role == 'sbb2':
                y = self.node('Add', [y, skip])
            x = self.relu(y)
            if role == 'down':
                level_idx = out_idx
        return x, level_idx

    def to_dense(self, x, idx):
        i64 = lambda v: self.const(self.tmp('c_i64'), np.array(v, np.int64))
        ind = self.node('Cast', [idx], to=TensorProto.INT64)
        zeros = self.node('ConstantOfShape', [i64([1, BEV, BEV, 2, 128])],
                          value=numpy_helper.from_array(np.zeros(1, np.float32)))
        d = self.node('ScatterND', [zeros, ind, x])                      # [1,X,Y,Z,C]
        d = self.node('Transpose', [d], perm=[0, 4, 1, 2, 3])           # [1,C,X,Y,Z]
        d = self.node('Transpose', [d], perm=[0, 1, 4, 2, 3])           # [1,C,Z,X,Y]
        return self.node('Reshape', [d, i64([1, 256, BEV, BEV])], ['spatial_features'])

    def conv_bn_relu(self, x, wpre, bnpre, cin, cout, k, stride, eps):
        y = self.conv(x, wpre + '.weight', [cout, cin, k, k], cin * k * k,
                      kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4)
        return self.relu(self.bn(y, bnpre, cout, eps))

    def second_fpn(self, x):
        outs = []
        for b, (cin, cout, stride) in enumerate([(256, 128, 1), (128, 256, 2)]):
            for j in range(6):
                pre = 'pts_backbone.blocks.%d.' % b
                x = self.conv_bn_relu(x, pre + str(3 * j), pre + str(3 * j + 1), cin if j == 0 else cout,
                                      cout, 3, stride if j == 0 else 1, DENSE_BN_EPS)
            outs.append(x)
        u0 = self.conv(outs[0], 'pts_neck.deblocks.0.0.weight', [256, 128, 1, 1], 128, kernel_shape=[1, 1])
        u0 = self.relu(self.bn(u0, 'pts_neck.deblocks.0.1', 256, DENSE_BN_EPS))
        # ConvTranspose k2 s2: each output pixel sees one tap per input channel (fan-in 256)
        w = self.he('pts_neck.deblocks.1.0.weight', [256, 256, 2, 2], 256)
        u1 = self.node('ConvTranspose', [outs[1], w], kernel_shape=[2, 2], strides=[2, 2])
        u1 = self.relu(self.bn(u1, 'pts_neck.deblocks.1.1', 256, DENSE_BN_EPS))
        return self.node('Concat', [u0, u1], ['neck_features'], axis=1)        # [1,512,180,180]

    def posembed(self, pos_b2l, pre):
        """PositionEmbeddingLearned on [1,2,L] -> [1,128,L]."""
        b0 = self.weight(pre + '.0.bias', [D_MODEL], -0.1, 0.1)
        y = self.node('Conv', [pos_b2l, self.weight(pre + '.0.weight', [D_MODEL, 2, 1], -1.0, 1.0), b0],
                      kernel_shape=[1])
        y = self.relu(self.bn(y, pre + '.1', D_MODEL, HEAD_BN_EPS))
        b3 = self.weight(pre + '.3.bias', [D_MODEL], -0.1, 0.1)
        return self.conv(y, pre + '.3.weight', [D_MODEL, D_MODEL, 1], D_MODEL, b3, gain=1.0, kernel_shape=[1])

    def linear(self, x, pre, cin, cout, gain=1.0):
        """x [..., cin] @ W^T [cin, cout] + b, as torch exports F.linear (MatMul + Add)."""
        w = self.he(pre + '.weight_t', [cin, cout], cin, gain)
        b = self.weight(pre + '.bias', [cout], -0.05, 0.05)
        return self.node('Add', [self.node('MatMul', [x, w]), b])

    def heads_split(self, x, L):
        """[L,1,128] -> [8,L,16] (torch: view(L, B*heads, hd).transpose(0, 1))."""
        i64 = lambda v: self.const(self.tmp('c_i64'), np.array(v, np.int64))
        x = self.node('Reshape', [x, i64([L, N_HEADS, D_MODEL // N_HEADS])])
        return self.node('Transpose', [x], perm=[1, 0, 2])

    def attention(self, q, k, v, Lq, Lk, pre):
        i64 = lambda v_: self.const(self.tmp('c_i64'), np.array(v_, np.int64))
        scale = self.const(self.tmp('c_scale'), np.array(1.0 / math.sqrt(D_MODEL // N_HEADS), np.float32))
        qh = self.heads_split(self.node('Mul', [q, scale]), Lq)             # [8,Lq,16]
        kh = self.node('Reshape', [k, i64([Lk, N_HEADS, D_MODEL // N_HEADS])])
        kh = self.node('Transpose', [kh], perm=[1, 2, 0])                   # [8,16,Lk]
        vh = self.heads_split(v, Lk)                                         # [8,Lk,16]
        a = self.node('Softmax', [self.node('MatMul', [qh, kh])], axis=-1)  # [8,Lq,Lk]
        o = self.node('MatMul', [a, vh])                                     # [8,Lq,16]
        o = self.node('Transpose', [o], perm=[1, 0, 2])
        o = self.node('Reshape', [o, i64([Lq, 1, D_MODEL])])
        return self.linear(o, pre + '.out_proj', D_MODEL, D_MODEL)

    def layernorm(self, x, pre):
        g = self.weight(pre + '.weight', [D_MODEL], 0.8, 1.2)
        b = self.weight(pre + '.bias', [D_MODEL], -0.1, 0.1)
        return self.node('LayerNormalization', [x, g, b], axis=-1, epsilon=LN_EPS)

    def head(self, neck):
        H = 'pts_bbox_head.'
        i64 = lambda v: self.const(self.tmp('c_i64'), np.array(v, np.int64))
        b = self.weight(H + 'shared_conv.bias', [D_MODEL], -0.1, 0.1)
        feat = self.conv(neck, H + 'shared_conv.weight', [D_MODEL, 512, 3, 3], 512 * 9, b,
                         gain=SHARED_GAIN, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        fk = self.node('Reshape', [feat, i64([1, D_MODEL, BEV_CELLS])], ['bev_flat'])   # [1,128,32400]
        # dense heatmap
        y = self.conv(feat, H + 'heatmap_head.0.conv.weight', [D_MODEL, D_MODEL, 3, 3], D_MODEL * 9,
                      kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        y = self.relu(self.bn(y, H + 'heatmap_head.0.bn', D_MODEL, HEAD_BN_EPS))
        hb = self.const(H + 'heatmap_head.1.bias', self.calibrated(H + 'heatmap_head.1.bias', HEATMAP_BIAS))
        logit = self.conv(y, H + 'heatmap_head.1.weight', [NUM_CLASSES, D_MODEL, 3, 3], D_MODEL * 9, hb,
                          gain=HEATMAP_GAIN, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        heat = self.node('Sigmoid', [logit], ['dense_heatmap'])              # [1,5,180,180]
        # local max: classes 0..3 pooled (3x3, stride 1, no pad) into a zero border; pedestrian as is
        pooled = self.node('Slice', [heat, i64([0]), i64([NUM_CLASSES - 1]), i64([1])])
        pooled = self.node('MaxPool', [pooled], kernel_shape=[3, 3], strides=[1, 1], pads=[0, 0, 0, 0])
        pooled = self.node('Pad', [pooled, i64([0, 0, 1, 1, 0, 0, 1, 1])], mode='constant')
        ped = self.node('Slice', [heat, i64([NUM_CLASSES - 1]), i64([NUM_CLASSES]), i64([1])])
        local_max = self.node('Concat', [pooled, ped], axis=1)
        keep = self.node('Cast', [self.node('Equal', [heat, local_max])], to=TensorProto.FLOAT)
        heat = self.node('Mul', [heat, keep])
        heat_cls = self.node('Reshape', [heat, i64([1, NUM_CLASSES, BEV_CELLS])], ['heat_suppressed'])
        flat = self.node('Reshape', [heat_cls, i64([1, NUM_CLASSES * BEV_CELLS])])
        _, top = self.node('TopK', [flat, self.const('num_proposals', np.array([NUM_PROPOSALS], np.int64))],
                           ['top_values', 'top_index'], axis=-1, largest=1, sorted=1)
        label = self.node('Div', [top, i64(BEV_CELLS)], ['top_label'])       # [1,500] int64
        cell = self.node('Mod', [top, i64(BEV_CELLS)], ['top_cell'])         # [1,500] int64
        cell1 = self.node('Reshape', [cell, i64([NUM_PROPOSALS])])
        # query features + class encoding
        qf = self.node('Gather', [fk, cell1], axis=2)                        # [1,128,500]
        oh = self.node('OneHot', [label, i64(NUM_CLASSES),
                                  self.const(self.tmp('c_onehot'), np.array([0, 1], np.float32))], axis=-1)
        oh = self.node('Transpose', [oh], perm=[0, 2, 1])                    # [1,5,500]
        cb = self.weight(H + 'class_encoding.bias', [D_MODEL], -0.1, 0.1)
        ce = self.node('Conv', [oh, self.weight(H + 'class_encoding.weight', [D_MODEL, NUM_CLASSES, 1], -1.0, 1.0),
                                cb], kernel_shape=[1])
        q = self.node('Add', [qf, ce], ['query_init'])
        # positions
        bp = self.const('bev_pos', bev_pos())                                # [1,32400,2]
        qpos = self.node('Gather', [bp, cell1], ['query_pos'], axis=1)       # [1,500,2]
        D = H + 'decoder.0.'
        qp = self.posembed(self.node('Transpose', [qpos], perm=[0, 2, 1]), D + 'self_posembed.position_embedding_head')
        kp = self.posembed(self.node('Transpose', [bp], perm=[0, 2, 1]), D + 'cross_posembed.position_embedding_head')
        # to (L, B, E)
        L, S = NUM_PROPOSALS, BEV_CELLS
        q = self.node('Transpose', [q], perm=[2, 0, 1])
        qp = self.node('Transpose', [qp], perm=[2, 0, 1])
        kp = self.node('Transpose', [kp], perm=[2, 0, 1])
        key = self.node('Transpose', [fk], perm=[2, 0, 1])
        # self-attention (packed in-projection, q = k = v = query + pos)
        x = self.node('Add', [q, qp])
        qkv = self.linear(x, D + 'self_attn.in_proj', D_MODEL, 3 * D_MODEL)
        sq, sk, sv = self.node('Split', [qkv, i64([D_MODEL] * 3)], 3, axis=-1)
        a = self.attention(sq, sk, sv, L, L, D + 'self_attn')
        q = self.layernorm(self.node('Add', [q, a]), D + 'norm1')
        # cross-attention (k = v = bev features + pos)
        xq = self.node('Add', [q, qp])
        xk = self.node('Add', [key, kp])
        cq = self.linear(xq, D + 'multihead_attn.q_proj', D_MODEL, D_MODEL)
        kv = self.linear(xk, D + 'multihead_attn.kv_proj', D_MODEL, 2 * D_MODEL)
        ck, cv = self.node('Split', [kv, i64([D_MODEL] * 2)], 2, axis=-1)
        a = self.attention(cq, ck, cv, L, S, D + 'multihead_attn')
        q = self.layernorm(self.node('Add', [q, a]), D + 'norm2')
        # FFN
        f = self.relu(self.linear(q, D + 'linear1', D_MODEL, FFN, gain=2.0))
        f = self.linear(f, D + 'linear2', FFN, D_MODEL)
        q = self.layernorm(self.node('Add', [q, f]), D + 'norm3')
        q = self.node('Transpose', [q], ['query_out'], perm=[1, 2, 0])      # [1,128,500]
        # prediction heads
        res = {}
        final_bias = {'center': (-0.05, 0.05), 'height': (0.6, 1.0), 'dim': (0.3, 1.3),
                      'rot': (-0.1, 0.1), 'vel': (-0.1, 0.1)}
        for hd, c in HEADS:
            P = H + 'prediction_heads.0.%s.' % hd
            y = self.conv(q, P + '0.conv.weight', [64, D_MODEL, 1], D_MODEL, kernel_shape=[1])
            y = self.relu(self.bn(y, P + '0.bn', 64, HEAD_BN_EPS))
            if hd == 'heatmap':
                b1 = self.const(P + '1.bias', self.calibrated(P + '1.bias', PRED_HEATMAP_BIAS))
            else:
                b1 = self.weight(P + '1.bias', [c], *final_bias[hd])
            res[hd] = self.conv(y, P + '1.weight', [c, 64, 1], 64, b1, gain=1.0, kernel_shape=[1])
        center = self.node('Add', [res['center'], self.node('Transpose', [qpos], perm=[0, 2, 1])])
        box = self.node('Concat', [center, res['height'], res['dim'], res['rot'], res['vel']], axis=1)
        self.node('Reshape', [box, i64([10, NUM_PROPOSALS])], ['bbox_pred'])
        # score = sigmoid(refined logit of the TopK label) * heat value at the proposal
        prob = self.node('Sigmoid', [res['heatmap']])                         # [1,5,500]
        idx3 = self.node('Expand', [self.node('Reshape', [cell, i64([1, 1, NUM_PROPOSALS])]),
                                    i64([1, NUM_CLASSES, NUM_PROPOSALS])])
        qheat = self.node('GatherElements', [heat_cls, idx3], axis=2)        # [1,5,500]
        sc = self.node('Mul', [prob, qheat])
        lab3 = self.node('Reshape', [label, i64([1, 1, NUM_PROPOSALS])])
        sc = self.node('GatherElements', [sc, lab3], axis=1)                  # [1,1,500]
        self.node('Reshape', [sc, i64([NUM_PROPOSALS])], ['score'])
        self.node('Reshape', [label, i64([NUM_PROPOSALS])], ['label_pred'])

    def build(self):
        feat, idx = self.vfe_and_indices()
        x, out_idx = self.sparse_encoder(feat, idx)
        dense = self.to_dense(x, out_idx)
        self.head(self.second_fpn(dense))
        N = 'voxels_num'
        inputs = [helper.make_tensor_value_info('voxels', TensorProto.FLOAT, [N, 10, 4]),
                  helper.make_tensor_value_info('num_points_per_voxel', TensorProto.INT32, [N]),
                  helper.make_tensor_value_info('coors', TensorProto.INT32, [N, 3])]
        outputs = [helper.make_tensor_value_info('bbox_pred', TensorProto.FLOAT, [10, NUM_PROPOSALS]),
                   helper.make_tensor_value_info('score', TensorProto.FLOAT, [NUM_PROPOSALS]),
                   helper.make_tensor_value_info('label_pred', TensorProto.INT64, [NUM_PROPOSALS])]
        vi = self.vinfo + [
              helper.make_tensor_value_info('voxel_features', TensorProto.FLOAT, ['voxels_num', 4]),
              helper.make_tensor_value_info('indices_l0', TensorProto.INT32, ['voxels_num', 4]),
              helper.make_tensor_value_info('spatial_features', TensorProto.FLOAT, [1, 256, BEV, BEV]),
              helper.make_tensor_value_info('neck_features', TensorProto.FLOAT, [1, 512, BEV, BEV])]
        g = helper.make_graph(self.nodes, 'bevfusion_lidar', inputs, outputs, self.inits, value_info=vi)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid('', OPSET),
                                                helper.make_opsetid('autoware', 1)],
                              producer_name='perceive tools/gen/bevfusion_gen.py', ir_version=8)
        m.doc_string = ('Structure-only stand-in for AutowareFoundation/bevfusion v2.0 bevfusion_lidar.onnx '
                        '(random weights: fill with `perceive onnx fill`); BN form %s' % self.bn_form)
        return m


def check_structure(m):
    """onnx.checker on a copy whose data-less initializers hold zeros (the checker wants data)."""
    c = onnx.ModelProto()
    c.CopyFrom(m)
    for t in c.graph.initializer:
        if not t.HasField('raw_data') and not t.float_data and not t.int64_data and not t.int32_data:
            t.raw_data = bytes(4 * int(np.prod(t.dims)))
    onnx.checker.check_model(c, full_check=False)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', required=True)
    ap.add_argument('--bn-form', choices=['batchnorm', 'muladd'], default='batchnorm')
    ap.add_argument('--calib', help='npz of BN running statistics (<bn>.running_mean/_var)')
    ap.add_argument('--fill-seed', type=int, default=1,
                    help='seed the muladd constants assume for the C fill (default 1)')
    a = ap.parse_args(argv)
    calib = None
    if a.calib:
        with np.load(a.calib) as z:
            calib = {k: z[k] for k in z.files}
        missing = [p for p in bn_channels() if p + '.running_mean' not in calib]
        if missing:
            sys.exit('bevfusion_gen: %s lacks statistics for %d BNs, e.g. %s' % (a.calib, len(missing), missing[0]))
    m = Builder(a.bn_form, calib, a.fill_seed).build()
    check_structure(m)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    onnx.save(m, a.out)
    ncustom = sum(1 for n in m.graph.node if n.domain == 'autoware')
    print('bevfusion_gen: wrote %s (%d bytes, %d nodes, %d autoware nodes, %d initializers, BN form %s%s)' %
          (a.out, os.path.getsize(a.out), len(m.graph.node), ncustom, len(m.graph.initializer), a.bn_form,
           ', calibrated' if calib else ', uncalibrated'))


if __name__ == '__main__':
    main()
