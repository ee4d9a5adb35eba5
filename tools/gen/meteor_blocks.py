"""meteor_blocks.py: reduced-size sub-blocks of the METEOR graph for models.py (CI fixtures).

Written from ../shared/specs/meteor.md (sections 2.2, 2.3 and 3.4) at small sizes; the op forms
follow what the skeleton re-export (meteor_skeleton.onnx) shows around each block: the lift
projects a constant grid of homogeneous ground points with a MatMul, samples with GridSample
(bilinear, zeros, align_corners=0) and GatherElements; the heads carry the in-place ScatterND
writes, CumSum, an nn.MultiheadAttention over tokens pooled by two constant MatMuls, a native
LayerNormalization, the border-padded risk GridSample, ArgMax outputs cast to uint8 and the
float16 depth_mean.

  meteor_lift   K [1,C,3,3], T_cam_ego [1,C,4,4] (ego -> camera), ctx [C,CH,h,w], dprob logits
                [C,D,h,w] -> bev_lift [1,CH,GX,GY] (the camera-normalised lift) and bev (its x2
                bilinear Resize). Image IMG_W x IMG_H = 4x the feature map, as 768x432 is to
                192x108; the lift grid keeps the spec's +-80 m x +-50 m extent at 4 m cells, and the
                depth bins keep its 80 m range (D bins of 80/D m).
  meteor_heads  bev [1,16,40,25], depth_logits [1,2,16,12,20], v0 [1] -> lane_logit, lane (uint8),
                risk, ego [1,42], depth (uint8), depth_mean (float16).

Structure that is not weights (the ground points, the pooling matrices) is listed in each
module's `structural` (buffer names): models.py keeps the data of the initializers holding those
values. `fill_hints` maps parameter names to a fill range ("fill=uniform:LO:HI").
"""
import math

import numpy as np

# lift geometry (reduced)
LIFT_CAMS = 3
IMG_W, IMG_H = 192, 108            # reduced 768x432
FEAT_W, FEAT_H = 48, 27            # stride 4, as 192x108 is to 768x432
LIFT_CH, LIFT_BINS = 16, 16
LIFT_GX, LIFT_GY = 40, 25          # cells of 4 m over x in [80,-80], y in [50,-50]
BIN_M = 80.0 / LIFT_BINS           # spec: 1.25 m for 64 bins


def pool_matrix(n_in, n_out):
    """Adaptive average pooling n_in -> n_out as a matrix [n_out, n_in] (torch's windows:
    start floor(i*n_in/n_out), end ceil((i+1)*n_in/n_out))."""
    m = np.zeros((n_out, n_in), np.float32)
    for i in range(n_out):
        a, b = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
        m[i, a:b] = 1.0 / (b - a)
    return m


def networks(torch):
    nn = torch.nn
    F = torch.nn.functional

    class MeteorLift(nn.Module):
        """Spec 2.2 at reduced size (no parameters)."""
        structural = ['bev_pts']

        def __init__(self):
            super().__init__()
            xs = np.linspace(80 - 2.0, -80 + 2.0, LIFT_GX)
            ys = np.linspace(50 - 2.0, -50 + 2.0, LIFT_GY)
            gx, gy = np.meshgrid(xs, ys, indexing='ij')
            pts = np.stack([gx.ravel(), gy.ravel(), np.zeros(gx.size), np.ones(gx.size)])
            self.register_buffer('bev_pts', torch.tensor(pts[None], dtype=torch.float32))

        def forward(self, K, T_cam_ego, ctx, dprob_logits):
            c, n = ctx.shape[0], LIFT_GX * LIFT_GY
            dprob = torch.softmax(dprob_logits, dim=1)
            pc = torch.matmul(T_cam_ego.reshape(c, 4, 4), self.bev_pts.expand(c, 4, n))
            x, y, z = pc[:, 0], pc[:, 1], pc[:, 2]
            k = K.reshape(c, 3, 3)
            zc = z.clamp(min=0.5)
            u = k[:, 0, 0].unsqueeze(-1) * x / zc + k[:, 0, 2].unsqueeze(-1)
            v = k[:, 1, 1].unsqueeze(-1) * y / zc + k[:, 1, 2].unsqueeze(-1)
            dist = torch.sqrt(x * x + y * y + z * z)
            valid = (z > 0.5) & (u >= 0) & (u < IMG_W) & (v >= 0) & (v < IMG_H) & (dist < 90.0)
            # the W-1 normalisation against the feature map is the spec's quirk, kept
            gu = (u / (IMG_W - 1) * 2 - 1).clamp(-2.0, 2.0)
            gv = (v / (IMG_H - 1) * 2 - 1).clamp(-2.0, 2.0)
            grid = torch.cat([gu.unsqueeze(-1), gv.unsqueeze(-1)], dim=-1).unsqueeze(2)
            fs = F.grid_sample(ctx, grid, mode='bilinear', padding_mode='zeros',
                               align_corners=False).squeeze(3)
            ps = F.grid_sample(dprob, grid, mode='bilinear', padding_mode='zeros',
                               align_corners=False).squeeze(3)
            b = ((dist - 1.0) / BIN_M).clamp(0.0, LIFT_BINS - 1 - 1e-4)
            b0 = torch.floor(b).long()
            fr = (b - b0.float()).unsqueeze(1)
            p0 = torch.gather(ps, 1, b0.unsqueeze(1))
            p1 = torch.gather(ps, 1, (b0 + 1).clamp(max=LIFT_BINS - 1).unsqueeze(1))
            w = (p0 * (1 - fr) + p1 * fr + 0.05) * valid.unsqueeze(1).float()
            fs = fs.reshape(1, c, ctx.shape[1], n)
            w = w.reshape(1, c, 1, n)
            bev = (fs * w).sum(1) / w.sum(1).clamp(min=1e-4)
            bev = bev.reshape(1, ctx.shape[1], LIFT_GX, LIFT_GY)
            up = F.interpolate(bev, size=(2 * LIFT_GX, 2 * LIFT_GY), mode='bilinear',
                               align_corners=False)
            return bev, up

    def block(cin, cout, s=1):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, s, 1), nn.ReLU())

    class MeteorHeads(nn.Module):
        """Spec 2.3 at reduced size: temporal gate, lane head + seg refiner, risk, the E2E
        planner (steps 1-7) and the depth outputs of the export's _finish."""
        structural = ['pool_h', 'pool_w', 'gap_h', 'gap_w']
        # waypoints in metres (tens of m), so the risk samples fall inside and outside the crop
        fill_hints = {'ego_mlp.4.bias': (-30.0, 30.0)}

        def __init__(self, ch=16, classes=9, modes=3, steps=6, heads=4, queries=3):
            super().__init__()
            self.modes, self.steps = modes, steps
            self.tgate = nn.Conv2d(ch, 4, 1)
            self.tfuse = nn.Sequential(nn.Conv2d(ch, ch, 1), nn.ReLU(), block(ch, ch))
            self.lane = nn.Sequential(block(ch, ch), nn.Conv2d(ch, classes, 1))
            self.ref_enc1 = block(classes + 1, 16)
            self.ref_enc2 = block(16, 24, 2)
            self.ref_u1 = nn.Conv2d(24, 16, 1)
            self.ref_out = nn.Sequential(block(16, 16), nn.Conv2d(16, classes, 1))
            self.risk_head = nn.Sequential(block(ch, 8), nn.Conv2d(8, 1, 1))
            self.ego_stem = nn.Sequential(block(ch, 16, 2), block(16, 24, 2))
            self.ego_mlp = nn.Sequential(nn.Linear(24 + 1, 32), nn.ReLU(), nn.Linear(32, 32),
                                         nn.ReLU(), nn.Linear(32, 42))
            self.ego_q = nn.Parameter(torch.zeros(queries, 1, ch))
            self.ego_attn = nn.MultiheadAttention(ch, heads)
            self.ego_delta = nn.Linear(queries * ch, 42)
            self.kin_delta = nn.Linear(7, 42)
            self.risk_gate = nn.Parameter(torch.tensor(0.7))
            self.dec_head = nn.Linear(ch, 2 * modes * steps)
            self.dec_gate = nn.Parameter(torch.tensor(0.4))
            self.e2e_norm = nn.LayerNorm(42 + ch + 1)
            self.e2e_mlp = nn.Sequential(nn.Linear(42 + ch + 1, 32), nn.ReLU(), nn.Linear(32, 32),
                                         nn.ReLU(), nn.Linear(32, 2 * modes * steps))
            # adaptive average pools of the 40x25 BEV as constant matrices (spec 3.1)
            self.register_buffer('pool_h', torch.tensor(pool_matrix(40, 6)))
            self.register_buffer('pool_w', torch.tensor(pool_matrix(25, 4).T.copy()))
            self.register_buffer('gap_h', torch.tensor(pool_matrix(40, 1)))
            self.register_buffer('gap_w', torch.tensor(pool_matrix(25, 1).T.copy()))

        def refine(self, logits):
            x = logits.clamp(-20.0, 20.0)
            h, w = x.shape[2], x.shape[3]
            rows = torch.arange(h).float()
            rng = (80.0 - (rows + 0.5) * (160.0 / h)) / 80.0       # the range channel x/80
            rng = rng.reshape(1, 1, h, 1).expand(1, 1, h, w)
            e1 = self.ref_enc1(torch.cat([x, rng], dim=1))
            e2 = self.ref_enc2(e1)
            d = F.interpolate(self.ref_u1(e2), size=e1.shape[-2:], mode='bilinear',
                              align_corners=False) + e1
            return x + 8.0 * torch.tanh(self.ref_out(d) / 8.0)

        def forward(self, bev, depth_logits, v0):
            g = torch.softmax(self.tgate(bev), dim=1)
            fused = bev + self.tfuse(bev * 4.0 * g[:, 0:1])
            lane_logit = self.refine(self.lane(bev))
            risk = self.risk_head(fused[:, :, 10:30, 6:19])
            # 1-2: ego stem, global pool, MLP on [feat, v0]
            v = v0.reshape(1, 1)
            feat = self.ego_stem(fused).mean(dim=(2, 3))
            ego = self.ego_mlp(torch.cat([feat, v], dim=1))
            # 3: MHA of learned queries over 6x4 pooled tokens
            tok = torch.matmul(self.pool_h, torch.matmul(fused, self.pool_w))
            tok = tok.flatten(2).permute(2, 0, 1)
            att, _ = self.ego_attn(self.ego_q.expand(-1, 1, -1), tok, tok, need_weights=False)
            ego = ego + self.ego_delta(att.permute(1, 0, 2).reshape(1, -1))
            # 4: kinematic feature [v0/15, 0...]
            kin = torch.zeros(1, 7)
            kin[:, 0] = v0 / 15.0
            ego = ego + self.kin_delta(kin)
            # 5: risk line integral along each mode's waypoints (border padding)
            wp = ego[:, :36].reshape(1, self.modes, self.steps, 2)
            grid = torch.stack([-wp[..., 1] / 12.5, -wp[..., 0] / 20.0], dim=-1)
            line = F.grid_sample(torch.sigmoid(risk), grid, mode='bilinear',
                                 padding_mode='border', align_corners=False).mean(dim=3)
            ego[:, 36:39] = ego[:, 36:39] - self.risk_gate * line.squeeze(1)
            # 6: decoupled path: heading and speed per mode, integrated, blended in
            gap = torch.matmul(self.gap_h, torch.matmul(fused, self.gap_w)).flatten(1)
            dec = self.dec_head(gap).reshape(1, self.modes, self.steps, 2)
            phi, sp = dec[..., 0], dec[..., 1]
            sp = (sp.clamp(min=0) + torch.log(1 + torch.exp(-sp.abs()))).clamp(max=25.0) * 0.5
            path = torch.stack([torch.cumsum(sp * torch.cos(phi), dim=2),
                                torch.cumsum(sp * torch.sin(phi), dim=2)], dim=-1)
            base = ego[:, :36].reshape(1, self.modes, self.steps, 2)
            ego[:, :36] = (base + torch.tanh(self.dec_gate) * (path - base)).reshape(1, 36)
            # 7: refiner.e2e: LayerNorm -> MLP, residual 3 tanh on the waypoints
            r = self.e2e_mlp(self.e2e_norm(torch.cat([ego, gap, v], dim=1)))
            ego[:, :36] = ego[:, :36] + 3.0 * torch.tanh(r)
            # depth outputs: modal-bin window mean over log-spaced centres, as float16
            b, c, d, h, w = depth_logits.shape
            p = F.avg_pool2d(depth_logits.reshape(b * c, d, h, w), 2)
            p = torch.softmax(p.reshape(b, c, d, h // 2, w // 2), dim=2)
            k = p.argmax(dim=2, keepdim=True)
            centres = torch.exp(torch.arange(d).float() * (math.log(79.75) / (d - 1)) + 0.0)
            idx = torch.arange(d).reshape(1, 1, d, 1, 1)
            pm = p * ((idx - k).abs() <= 2).float()
            mean = (pm * centres.reshape(1, 1, d, 1, 1)).sum(2) / pm.sum(2).clamp(min=1e-6)
            lane = lane_logit.argmax(dim=1).to(torch.uint8)
            depth = depth_logits.argmax(dim=2).to(torch.uint8)
            return lane_logit, lane, risk, ego, depth, mean.half()

    return {
        'meteor_lift': (MeteorLift, [('K', [1, LIFT_CAMS, 3, 3]), ('T_cam_ego', [1, LIFT_CAMS, 4, 4]),
                                     ('ctx', [LIFT_CAMS, LIFT_CH, FEAT_H, FEAT_W]),
                                     ('dprob_logits', [LIFT_CAMS, LIFT_BINS, FEAT_H, FEAT_W])],
                        ['bev_lift', 'bev']),
        'meteor_heads': (MeteorHeads, [('bev', [1, 16, 40, 25]),
                                       ('depth_logits', [1, 2, 16, 12, 20]), ('v0', [1])],
                         ['lane_logit', 'lane', 'risk', 'ego', 'depth', 'depth_mean']),
    }


def rig(cams):
    """K [1,C,3,3] (pixels of IMG_W x IMG_H) and T_cam_ego [1,C,4,4] (ego -> camera) of cameras
    1.6 m up, spread in yaw around the car, optical axis outward and level."""
    K = np.zeros((1, cams, 3, 3), np.float32)
    T = np.zeros((1, cams, 4, 4), np.float32)
    for c in range(cams):
        f = 125.0 * (1 + 0.1 * c)             # 500 px at 768 wide, a little different per camera
        K[0, c] = [[f, 0, IMG_W / 2 - 0.5 + c], [0, f, IMG_H / 2 + 0.25 * c], [0, 0, 1]]
        yaw = 2 * np.pi * c / cams + 0.1
        fwd = np.array([np.cos(yaw), np.sin(yaw), 0.0])
        right = np.array([np.sin(yaw), -np.cos(yaw), 0.0])
        down = np.array([0.0, 0.0, -1.0])
        R = np.stack([right, down, fwd], 1)    # camera axes in ego: camera -> ego rotation
        pos = np.array([1.0 + 0.8 * np.cos(yaw), 0.6 * np.sin(yaw), 1.6])
        T[0, c, :3, :3] = R.T                  # ego -> camera
        T[0, c, :3, 3] = -R.T @ pos
        T[0, c, 3, 3] = 1.0
    return K, T


def smooth(r, shape, scale, cell=4):
    """A smooth random field on a 1/16 grid (compresses well): coarse noise, upsampled."""
    lead, (h, w) = shape[:-2], shape[-2:]
    coarse = r.standard_normal(tuple(lead) + (h // cell + 2, w // cell + 2))
    v = np.kron(coarse, np.ones((cell, cell)))[..., :h, :w] * scale
    return (np.round(v * 16) / 16).astype(np.float32)


def make_input(r, model, name, shape):
    """The committed inputs of the two models (None: not one of theirs)."""
    if model == 'meteor_lift':
        K, T = rig(shape[1]) if name in ('K', 'T_cam_ego') else (None, None)
        if name == 'K':
            return K
        if name == 'T_cam_ego':
            return T
        return smooth(r, shape, 1.0 if name == 'ctx' else 2.0, cell=3)
    if model == 'meteor_heads':
        if name == 'v0':
            return np.array([11.5], np.float32)
        return smooth(r, shape, 1.0 if name == 'bev' else 2.5, cell=2)
    return None
