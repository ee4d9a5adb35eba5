/* Tests for src/models/meteor/decode.c and json.c: the pieces against known values (rotated
 * rectangle overlap, the border peak, yaw flip and EMA, the ground ray on a known camera, the
 * lane reset rule, thin_road_edge, the mode hysteresis), then five synthetic frames regenerated
 * here bit for bit as tools/ref/meteor_decode_synth.py makes them, decoded with one stream state
 * and compared with the numpy reference's JSON (tests/fixtures/meteor/decode/frame<k>.json,
 * `make check-reference`): identical object lists, cells, counts and grids, floats within
 * 1e-5 relative + 1e-6. Also: the readings of decode.h on those frames, bad calls, NaN inputs,
 * out-of-memory at every allocation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "models/meteor/decode.h"
#include "models/meteor/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NFRAMES 5
#define DET_N (400 * 250)
#define BEV_N (800 * 500)
#define OCC_N (16 * 200 * 200)
#define PI_D 3.14159265358979323846

/* ---- the synthetic frames (twin of tools/ref/meteor_decode_synth.py) -------------------------- */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t seed_of(int frame, int id) { return 0x5EED0000ull + (uint64_t)frame * 1000u + (uint64_t)id; }

static float uni(uint64_t seed, size_t i) { return (float)(mix64(seed + (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull) >> 40) * 0x1p-23f - 1.0f; }

static void noise(float *d, size_t n, uint64_t seed, float base, float amp)
{
    for (size_t i = 0; i < n; i++) d[i] = base + amp * uni(seed, i);
}

static const double poses[NFRAMES][3] = { { 0, 0, 0 }, { 2.0, 0.0, 0.05 }, { 3.5, 0.25, 0.0625 }, { 40.0, 0.0, 0.0625 }, { 0, 0, 0 } };
static const bool has_pose[NFRAMES] = { true, true, true, true, false };
static const bool has_logits[NFRAMES] = { true, true, false, true, true };
static const int crosswalk_row[NFRAMES] = { 300, 310, 317, 500, 505 };
static const struct { double p[3], yaw, f; } cams[8] = {
    { { 1.5, 0.0, 1.5 }, 0.0, 400 },   { { 1.25, 0.5, 1.5 }, 0.96, 400 }, { { 1.25, -0.5, 1.5 }, -0.96, 400 },
    { { -1.0, 0.0, 1.5 }, PI_D, 400 }, { { 0.0, 0.75, 1.5 }, 2.2, 400 },  { { 0.0, -0.75, 1.5 }, -2.2, 400 },
    { { 1.625, 0.0, 1.5 }, 0.0, 800 }, { { -1.0, 0.0, 1.5 }, PI_D, 800 },
};

typedef struct obj3 { int frames; int cls, r, c; float lg, o0, o1, ll, lw, s, co, st; int mode; float vx, vy; } obj3;
#define ALLF 0x1f

static int objects3d(int f, obj3 *o)
{
    static const float ayaw[NFRAMES][2] = { { 0.0f, 1.0f }, { 0.125f, -1.0f }, { -0.125f, -1.0f }, { 1.0f, 0.0f }, { 0.25f, 1.0f } };
    const obj3 t[] = {
        { ALLF, 0, 150, 125, 2.0f, 0.25f, 0.5f, 1.5f, 0.625f, ayaw[f][0], ayaw[f][1], 2.0f, 1, 0.5f, 0.125f },
        { ALLF, 0, 152, 125, 1.5f, 0.25f, 0.5f, 1.5f, 0.625f, 0.0f, 1.0f, -2.0f, 0, 0.5f, 0.0f },
        { ALLF, 0, 156, 125, 1.25f, 0.5f, 0.5f, 1.5f, 0.625f, 0.0f, 1.0f, -2.0f, 0, 0.5f, 0.0f },
        { ALLF, 0, 200, 60, 1.75f, 0.5f, 0.5f, 2.0f, 1.0f, 0.0f, 1.0f, 2.0f, 2, 0.0625f, 0.0f },
        { ALLF, 0, 203, 60, 0.5f, 0.5f, 0.5f, 0.25f, 0.0f, 0.5f, 1.0f, -2.0f, 0, 0.5f, 0.25f },
        { ALLF, 1, 150, 126, 0.75f, 0.25f, 0.25f, -0.5f, -0.5f, 0.0f, 1.0f, 2.0f, 0, 0.0625f, 0.0f },
        { ALLF, 0, 250, 30, -0.609375f, 0.5f, 0.5f, 1.5f, 0.625f, 0.25f, 1.0f, -2.0f, 1, 0.5f, 0.0f },
        { ALLF, 0, 250, 200, -0.625f, 0.5f, 0.5f, 1.5f, 0.625f, 0.0f, 1.0f, -2.0f, 1, 0.5f, 0.0f },
        { 0x16, 1, 260, 40, -1.71875f, 0.5f, 0.5f, -0.5f, -0.5f, 0.0f, 1.0f, -2.0f, 0, 0.25f, 0.25f },
        { ALLF, 0, 4, 100, 1.0f, 0.75f, 0.5f, 1.5f, 0.625f, 0.0f, 1.0f, -2.0f, 0, 0.5f, 0.0f },
        { ALLF, 0, 5, 180, 1.0f, 0.0f, 0.5f, 1.5f, 0.625f, 0.0f, 1.0f, 2.0f, 0, 0.5f, 0.0f },
        { ALLF, 0, 395, 90, 1.0f, 0.0f, 0.5f, 1.5f, 0.625f, 0.0f, 1.0f, -2.0f, 0, 0.5f, 0.0f },
        { ALLF, 0, 395, 150, 1.0f, 0.25f, 0.5f, 1.5f, 0.625f, 0.0f, 1.0f, -2.0f, 0, 0.5f, 0.0f },
        { ALLF, 1, 300, 0, -1.0f, 0.5f, 0.5f, -0.5f, -0.5f, 0.0f, 1.0f, -2.0f, 0, 0.0625f, 0.0f },
        { ALLF, 0, 320, 200, 1.0f, 0.5f, 0.5f, 1.5f, 0.625f, 0.0f, 1.0f, -2.0f, 0, 0.5f, 0.0f },
        { ALLF, 0, 320, 201, 1.0f, 0.5f, 0.5f, 1.5f, 0.625f, 0.0f, 1.0f, -2.0f, 0, 0.5f, 0.0f },
        { 0x01, 1, 207, 64, 0.25f, 0.5f, 0.5f, -0.5f, -0.5f, 1.0f, 1.0f, -2.0f, 0, 0.25f, 0.0f },
        { 0x02, 1, 202, 64, 0.25f, 0.5f, 0.5f, -0.5f, -0.5f, 1.25f, 1.0f, -2.0f, 0, 0.25f, 0.0f },
    };
    int n = 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].frames >> f & 1) o[n++] = t[i];
    if (f == 0 || f == 3)
        for (int i = 0; i < 10; i++)
            for (int j = 0; j < 8; j++) {
                obj3 w = { 0, 1, 40 + 10 * i, 152 + 12 * j, (float)(-1.5 + (i * 8 + j) / 256.0), 0.5f, 0.5f, -0.5f, -0.5f,
                           0.0f, 1.0f, -2.0f, 0, 0.25f, 0.0f };
                o[n++] = w;
            }
    return n;
}

typedef struct obj2 { int cam, s, cls, r, c; float lg, o0, o1, lw, lh; } obj2;

static int objects2d(obj2 *o)
{
    const obj2 t[] = {
        { 0, 1, 0, 27, 48, 1.5f, 0.5f, 0.5f, 1.0f, 2.0f },   { 0, 0, 0, 30, 90, 1.0f, 0.0f, 0.0f, 2.0f, 2.5f },
        { 0, 2, 0, 13, 24, 0.5f, 0.5f, 0.0f, 0.5f, 0.234375f }, { 6, 1, 0, 32, 48, 2.0f, 0.0f, 0.0f, 1.0f, 2.0f },
        { 1, 1, 0, 27, 48, 1.25f, 0.0f, 0.0f, 1.0f, 1.3125f }, { 3, 1, 0, 10, 40, 1.0f, 0.0f, 0.0f, 1.0f, 1.5f },
        { 3, 0, 9, 0, 0, -0.5f, 0.25f, 0.25f, 1.0f, 1.0f },  { 4, 1, 1, 20, 30, 60.0f, 0.5f, 0.5f, 2.0f, 1.5f },
        { 4, 1, 1, 20, 31, 55.0f, 0.5f, 0.5f, 2.0f, 1.5f },  { 4, 0, 6, 50, 100, 0.75f, 0.5f, 0.5f, 1.5f, 2.5f },
        { 5, 0, 2, 60, 60, 1.25f, 0.25f, 0.75f, 3.0f, 2.5f }, { 6, 0, 8, 20, 96, 0.875f, 0.5f, 0.5f, 1.0f, 1.5f },
        { 7, 1, 3, 25, 50, 1.5f, 0.5f, 0.5f, 2.5f, 2.0f },
    };
    int n = 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) o[n++] = t[i];
    for (int i = 0; i < 5; i++) { obj2 p = { 2, 2, 7, 1 + 3 * i, 20, 3.0f, 0.5f, 0.5f, 0.5f, 0.5f }; o[n++] = p; }
    for (int i = 0; i < 9; i++)
        for (int j = 0; j < 5; j++) {
            obj2 p = { 2, 2, 1, 1 + 3 * i, 2 + 3 * j, (float)(2.0 - (i * 5 + j) / 64.0), 0.5f, 0.5f, 0.5f, 0.5f };
            o[n++] = p;
        }
    return n;
}

static void plant_peak(float *m, int h, int w, int r, int c, float v)
{
    for (int dr = -1; dr <= 1; dr++)
        for (int dc = -1; dc <= 1; dc++)
            if ((dr || dc) && r + dr >= 0 && r + dr < h && c + dc >= 0 && c + dc < w) m[(r + dr) * w + c + dc] = (float)((double)v - 1.0);
}

typedef struct frame {
    float *lane_logit, *hm, *reg, *hm2d[3], *reg2d[3], *occ, *traj, *stat, *risk, *dm;
    uint8_t *lane;
    float ego[42], tl[4];
    pvm_meteor_raw raw;
    pvm_meteor_calib cal;
    pvm_meteor_pose pose;
} frame;

static const int s2h[3] = { 108, 54, 27 }, s2w[3] = { 192, 96, 48 };

static void lane_logits(int f, float *lg, uint8_t *lane)
{
    for (int r = 0; r < 800; r++)
        for (int c = 0; c < 500; c++) {
            int band = c >= 100 && c < 140 ? 2 : c >= 140 && c < 143 ? 6 : c >= 143 && c < 357 ? 1 : c >= 357 && c < 360 ? 6
                     : c >= 360 && c < 400 ? 2 : c >= 400 && c < 450 ? 8 : 0;
            bool road = band == 1;
            bool line = road && ((c >= 200 && c < 202) || (c >= 250 && c < 252) || (c >= 300 && c < 302));
            int cw = crosswalk_row[f];
            bool cross = road && r >= cw && r < cw + 15, stop = road && r >= cw - 3 && r < cw && c < 250;
            float add[9] = { 0 }, amp = 0.25f;
            if (!line && !cross && !stop) add[band] = 3.0f;
            if (line && !cross && !stop) {
                if ((r / 25) % 2 == 0) { add[4] = 2.0f; add[1] = 1.5f; }
                else { add[1] = 1.75f; add[4] = 1.5f; }
            }
            if (line) amp = 0.125f;
            if (cross) add[3] = 3.0f;
            if (stop) add[5] = 3.0f;
            int ov = -1;
            if (r >= 600 && r < 610 && c >= 160 && c < 170) ov = 7;
            if (r >= 100 && r < 200 && c >= 470 && c < 473) ov = 6;
            if (r >= 240 && r < 246 && c >= 455 && c < 460) ov = 1;
            if (r == 246 && c == 460) ov = 6;
            if (ov >= 0) { memset(add, 0, sizeof add); add[ov] = 3.0f; }
            if (r >= 400 && r < 440 && c >= 150 && c < 190) {
                memset(add, 0, sizeof add);
                add[1] = add[2] = 2.0f;
                amp = 1.0f;
            }
            size_t i = (size_t)r * 500 + c;
            int best = 0;
            for (int k = 0; k < 9; k++) {
                float v = (-1.0f + amp * uni(seed_of(f, 1), (size_t)k * BEV_N + i)) + add[k];
                lg[(size_t)k * BEV_N + i] = v;
                if (v > lg[(size_t)best * BEV_N + i]) best = k;
            }
            lane[i] = (uint8_t)best;
        }
}

static void make_frame(int f, frame *fr)
{
    lane_logits(f, fr->lane_logit, fr->lane);
    noise(fr->hm, 2 * DET_N, seed_of(f, 2), -6.0f, 0.5f);
    noise(fr->reg, 6 * DET_N, seed_of(f, 3), 0.0f, 0.125f);
    noise(fr->traj, 39 * (size_t)DET_N, seed_of(f, 4), 0.0f, 0.125f);
    bool healthy = f != 2;
    noise(fr->stat, DET_N, seed_of(f, 5), healthy ? 0.0f : 0.25f, healthy ? 1.0f : 0.0078125f);
    obj3 ob[128];
    int n = objects3d(f, ob);
    for (int i = 0; i < n; i++) plant_peak(fr->hm + (size_t)ob[i].cls * DET_N, 400, 250, ob[i].r, ob[i].c, ob[i].lg);
    for (int i = 0; i < n; i++) {
        const obj3 *o = &ob[i];
        size_t cell = (size_t)o->r * 250 + o->c;
        fr->hm[(size_t)o->cls * DET_N + cell] = o->lg;
        const float rg[6] = { o->o0, o->o1, o->ll, o->lw, o->s, o->co };
        for (int j = 0; j < 6; j++) fr->reg[(size_t)j * DET_N + cell] = rg[j];
        if (healthy) fr->stat[cell] = o->st;
        for (int m = 0; m < 3; m++) {
            fr->traj[(size_t)(36 + m) * DET_N + cell] = m == o->mode ? 1.0f : 0.0f;
            float vx = m == o->mode ? o->vx : 0.25f, vy = m == o->mode ? o->vy : -0.25f;
            for (int k = 0; k < 6; k++) {
                fr->traj[(size_t)(m * 12 + k * 2) * DET_N + cell] = (float)(k + 1) * vx;
                fr->traj[(size_t)(m * 12 + k * 2 + 1) * DET_N + cell] = (float)(k + 1) * vy;
            }
        }
    }
    obj2 o2[128];
    int n2 = objects2d(o2);
    for (int s = 0; s < 3; s++) {
        int h = s2h[s], w = s2w[s];
        noise(fr->hm2d[s], (size_t)8 * 10 * h * w, seed_of(f, 10 + s), -8.0f, 0.5f);
        noise(fr->reg2d[s], (size_t)8 * 4 * h * w, seed_of(f, 20 + s), 0.0f, 0.125f);
        for (int i = 0; i < n2; i++)
            if (o2[i].s == s) plant_peak(fr->hm2d[s] + ((size_t)o2[i].cam * 10 + o2[i].cls) * h * w, h, w, o2[i].r, o2[i].c, o2[i].lg);
        for (int i = 0; i < n2; i++) {
            if (o2[i].s != s) continue;
            size_t cell = (size_t)o2[i].r * w + o2[i].c;
            fr->hm2d[s][((size_t)o2[i].cam * 10 + o2[i].cls) * h * w + cell] = o2[i].lg;
            const float rg[4] = { o2[i].o0, o2[i].o1, o2[i].lw, o2[i].lh };
            for (int j = 0; j < 4; j++) fr->reg2d[s][((size_t)o2[i].cam * 4 + j) * h * w + cell] = rg[j];
        }
    }
    static const float mode_logits[NFRAMES][3] = { { 0, 0.875f, -1 }, { 0, 1.25f, 0 }, { 0, 1.5f, 0 }, { 0, 0.8125f, 0 }, { 0, 0.5f, 1.375f } };
    static const float brake[NFRAMES] = { -1.0f, 0.25f, 0.0f, 2.0f, -0.5f };
    static const float sp[3] = { 8, 7, 7 }, cv[3] = { 0, 0.0625f, -0.0625f };
    for (int m = 0; m < 3; m++)
        for (int k = 0; k < 6; k++) {
            fr->ego[m * 12 + k * 2] = (float)(k + 1) * (0.5f * sp[m]);
            fr->ego[m * 12 + k * 2 + 1] = (float)((k + 1) * (k + 1)) * cv[m];
        }
    for (int m = 0; m < 3; m++) fr->ego[36 + m] = mode_logits[f][m];
    fr->ego[39] = 0.0625f * (float)f;
    fr->ego[40] = 0.5f - 0.25f * (float)f;
    fr->ego[41] = brake[f];
    noise(fr->occ, (size_t)10 * OCC_N, seed_of(f, 6), -2.0f, 0.5f);
    noise(fr->occ, OCC_N, seed_of(f, 7), 2.0f, 0.5f);
    const int blocks[4][7] = { { 2, 2, 6, 90, 101, 98, 103 }, { 1, 3, 5, 120, 125, 60, 70 }, { 4, 2, 7, 80, 82, 150, 152 },
                               { 3, 2, 4, 100 + 3 * f, 104 + 3 * f, 30, 34 } };
    for (int b = 0; b < 4; b++)
        for (int z = blocks[b][1]; z < blocks[b][2]; z++)
            for (int r = blocks[b][3]; r < blocks[b][4]; r++)
                for (int c = blocks[b][5]; c < blocks[b][6]; c++) fr->occ[(size_t)blocks[b][0] * OCC_N + ((size_t)z * 200 + r) * 200 + c] = 4.0f;
    for (int i = 0; i < DET_N; i++) fr->risk[i] = -6.0f;
    for (int r = 50 + 5 * f; r < 80 + 5 * f; r++)
        for (int c = 100; c < 150; c++) fr->risk[r * 250 + c] = 1.0f;
    for (int r = 200; r < 220; r++)
        for (int c = 0; c < 250; c++) fr->risk[r * 250 + c] = (float)(-3.0 + 0.5 * (c / 25));
    static const float tl[NFRAMES][4] = { { 0.5f, 2, -1, 0.25f }, { 0.5f, 0.25f, 1.75f, 0 }, { -1, -1, -1, -1 }, { 0, 0, 0.5f, 3 }, { 2, 0, 0, 0 } };
    memcpy(fr->tl, tl[f], sizeof fr->tl);
    for (int i = 0; i < 8 * 54 * 96; i++) fr->dm[i] = 40.0f;
    for (int i = 0; i < 25; i++) {
        fr->dm[(0 * 54 + 17 - 2 + i / 5) * 96 + 45 - 2 + i % 5] = (float)(12.0 + 0.25 * i);
        fr->dm[(3 * 54 + 11 - 2 + i / 5) * 96 + 40 - 2 + i % 5] = 55.0f;
    }
    for (int i = 0; i < 8; i++) {
        const float K[9] = { (float)cams[i].f, 0, 384, 0, (float)cams[i].f, 216, 0, 0, 1 };
        memcpy(fr->cal.K[i], K, sizeof K);
        double c = cos(cams[i].yaw), s = sin(cams[i].yaw);
        const double R[3][3] = { { s, -c, 0.0 }, { 0.0, 0.0, -1.0 }, { c, s, 0.0 } };
        for (int k = 0; k < 3; k++) {
            double t = -(R[k][0] * cams[i].p[0] + R[k][1] * cams[i].p[1] + R[k][2] * cams[i].p[2]);
            for (int j = 0; j < 3; j++) fr->cal.T_cam_ego[i][k * 4 + j] = (float)R[k][j];
            fr->cal.T_cam_ego[i][k * 4 + 3] = (float)t;
        }
        for (int j = 0; j < 4; j++) fr->cal.T_cam_ego[i][12 + j] = j == 3 ? 1.0f : 0.0f;
        fr->cal.present[i] = !(f == 1 && i == 7);
    }
    fr->pose.x = poses[f][0];
    fr->pose.y = poses[f][1];
    fr->pose.yaw = poses[f][2];
    pvm_meteor_raw raw = { 0 };
    raw.lane = fr->lane;
    raw.lane_logit = has_logits[f] ? fr->lane_logit : NULL;
    raw.hm = fr->hm;
    raw.reg = fr->reg;
    for (int s = 0; s < 3; s++) { raw.hm2d[s] = fr->hm2d[s]; raw.reg2d[s] = fr->reg2d[s]; }
    raw.ego = fr->ego;
    raw.occ = fr->occ;
    raw.traj = fr->traj;
    raw.stationary = fr->stat;
    raw.tl = fr->tl;
    raw.risk = fr->risk;
    raw.depth_mean = fr->dm;
    fr->raw = raw;
}

static frame *frame_alloc(void)
{
    frame *fr = calloc(1, sizeof *fr);
    assert_non_null(fr);
    fr->lane_logit = malloc(sizeof(float) * 9 * BEV_N);
    fr->lane = malloc(BEV_N);
    fr->hm = malloc(sizeof(float) * 2 * DET_N);
    fr->reg = malloc(sizeof(float) * 6 * DET_N);
    for (int s = 0; s < 3; s++) {
        fr->hm2d[s] = malloc(sizeof(float) * 8 * 10 * s2h[s] * s2w[s]);
        fr->reg2d[s] = malloc(sizeof(float) * 8 * 4 * s2h[s] * s2w[s]);
        assert_true(fr->hm2d[s] && fr->reg2d[s]);
    }
    fr->occ = malloc(sizeof(float) * 10 * OCC_N);
    fr->traj = malloc(sizeof(float) * 39 * DET_N);
    fr->stat = malloc(sizeof(float) * DET_N);
    fr->risk = malloc(sizeof(float) * DET_N);
    fr->dm = malloc(sizeof(float) * 8 * 54 * 96);
    assert_true(fr->lane_logit && fr->lane && fr->hm && fr->reg && fr->occ && fr->traj && fr->stat && fr->risk && fr->dm);
    return fr;
}

static void frame_free(frame *fr)
{
    free(fr->lane_logit); free(fr->lane); free(fr->hm); free(fr->reg);
    for (int s = 0; s < 3; s++) { free(fr->hm2d[s]); free(fr->reg2d[s]); }
    free(fr->occ); free(fr->traj); free(fr->stat); free(fr->risk); free(fr->dm);
    free(fr);
}

/* ---- JSON comparison: integers exactly, other numbers within 1e-5 relative + 1e-6 ------------ */
static int json_diff(const cJSON *a, const cJSON *b, const char *path, int budget)
{
    char p[256];
    if (cJSON_IsNumber(b)) {
        if (!cJSON_IsNumber(a)) { print_message("%s: not a number in C\n", path); return 1; }
        double x = a->valuedouble, y = b->valuedouble;
        bool ints = x == floor(x) && y == floor(y);
        if (ints ? x != y : !(fabs(x - y) <= 1e-6 + 1e-5 * fabs(y))) {
            if (budget > 0) print_message("%s: C %.9g, reference %.9g\n", path, x, y);
            return 1;
        }
        return 0;
    }
    if (cJSON_IsArray(b)) {
        if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) {
            print_message("%s: C has %d entries, reference %d\n", path, cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1, cJSON_GetArraySize(b));
            return 1;
        }
        int bad = 0, i = 0;
        const cJSON *x = a->child;
        for (const cJSON *y = b->child; y; y = y->next, x = x->next, i++) {
            snprintf(p, sizeof p, "%s[%d]", path, i);
            bad += json_diff(x, y, p, budget - bad);
        }
        return bad;
    }
    if (cJSON_IsObject(b)) {
        int bad = 0;
        if (!cJSON_IsObject(a) || cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) {
            print_message("%s: key sets differ\n", path);
            bad++;
        }
        for (const cJSON *y = b->child; y; y = y->next) {
            snprintf(p, sizeof p, "%s.%s", path, y->string);
            const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, y->string);
            if (!x) { print_message("%s: missing in C\n", p); bad++; continue; }
            bad += json_diff(x, y, p, budget - bad);
        }
        return bad;
    }
    if (cJSON_IsString(b)) {
        if (!cJSON_IsString(a) || strcmp(a->valuestring, b->valuestring)) { print_message("%s: C \"%s\", reference \"%s\"\n", path, cJSON_IsString(a) ? a->valuestring : "?", b->valuestring); return 1; }
        return 0;
    }
    if ((a->type & 0xff) != (b->type & 0xff)) { print_message("%s: types differ (%d vs %d)\n", path, a->type & 0xff, b->type & 0xff); return 1; }
    return 0;
}

static char *read_text(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *t = malloc((size_t)n + 1);
    if (t && fread(t, 1, (size_t)n, fp) != (size_t)n) { free(t); t = NULL; }
    if (t) t[n] = 0;
    fclose(fp);
    return t;
}

/* decode -> JSON text -> parsed back (so the comparison also checks the text parses) */
static cJSON *decoded_json(const pvm_meteor_out *o)
{
    cJSON *root = cJSON_CreateObject();
    pvc_msg msg = { "" };
    assert_int_equal(pvm_meteor_json_add(root, o, &msg), PV_OK);
    char *t = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    assert_non_null(t);
    cJSON *back = cJSON_Parse(t);
    cJSON_free(t);
    assert_non_null(back);
    return back;
}

static const pvm_meteor_box3d *find3d(const pvm_meteor_out *o, int cls, int r, int c)
{
    for (int i = 0; i < o->n3d; i++)
        if (o->boxes3d[i].cls == cls && o->boxes3d[i].row == r && o->boxes3d[i].col == c) return &o->boxes3d[i];
    return NULL;
}

/* the readings of decode.h, as they show on the synthetic frames */
static void check_readings(int f, const pvm_meteor_out *o)
{
    if (f == 0) {
        assert_non_null(find3d(o, 0, 150, 125));
        assert_null(find3d(o, 0, 152, 125));      /* IoU > 0.3 with the first */
        assert_non_null(find3d(o, 0, 156, 125));  /* suppressed only by kept boxes (the second is not) */
        assert_null(find3d(o, 0, 203, 60));       /* intersection / smaller > 0.6 */
        assert_non_null(find3d(o, 1, 150, 126));  /* other class: no NMS across classes */
        assert_non_null(find3d(o, 0, 250, 30));   /* logit -0.609375 > logit(0.35) */
        assert_null(find3d(o, 0, 250, 200));      /* -0.625 below */
        assert_non_null(find3d(o, 0, 5, 180));    /* x = 78.0 kept, 78.1 not */
        assert_null(find3d(o, 0, 4, 100));
        assert_non_null(find3d(o, 0, 395, 90));   /* x = -78.0 kept, -78.1 not */
        assert_null(find3d(o, 0, 395, 150));
        assert_non_null(find3d(o, 1, 300, 0));    /* border peak: outside cells ignored */
        assert_non_null(find3d(o, 0, 320, 200));  /* plateau: ties by (class, row, col) */
        assert_null(find3d(o, 0, 320, 201));
        int vru = 0;
        for (int i = 0; i < o->n3d; i++) vru += o->boxes3d[i].cls == 1;
        assert_int_equal(o->n3d, 58);             /* top-64 over both classes: 14 vehicle candidates */
        assert_int_equal(vru, 51);
        /* traj layout m*12 + k*2 + j: waypoint k of the first box at x + (k+1)*0.5, y + (k+1)*0.125 */
        const pvm_meteor_box3d *a = find3d(o, 0, 150, 125);
        assert_int_equal(a->future_mode, 1);
        assert_true(fabsf(a->future[5][0] - (a->x + 3.0f)) < 1e-4f && fabsf(a->future[5][1] - (a->y + 0.75f)) < 1e-4f);
        /* 2D: road paint hidden after the top-48 cut (43 cars, not 45) */
        int cars = 0;
        for (int i = 0; i < o->n2d; i++) cars += o->boxes2d[i].cam == 2;
        assert_int_equal(cars, 43);
        /* unknowns: the narrow camera's copy wins by score; the 60.8 m ground ray (59.3 m from the
         * camera) falls back to depth_mean (40 m along the ray) */
        assert_int_equal(o->nunk, 3);
        assert_int_equal(o->unknowns[0].cam, 6);
        assert_true(o->unknowns[0].from_ground_ray);
        assert_false(o->unknowns[2].from_ground_ray);
        assert_true(fabsf(o->unknowns[2].x - 41.5f) < 0.05f);
    }
    if (f == 1) {
        /* yaw flip + EMA 0.4 on the new yaw: old 0 flipped to pi, new = pi - atan(0.125) */
        const pvm_meteor_box3d *a = find3d(o, 0, 150, 125);
        double want = PI_D + 0.4 * (atan2(0.125, -1.0) - PI_D);
        assert_true(fabs(a->yaw - want) < 1e-5);
        /* same class only: the VRU matches the previous VRU (2.0 m), not the vehicle at 1.79 m */
        const pvm_meteor_box3d *q = find3d(o, 1, 202, 64);
        assert_true(fabs(q->yaw - (atan2(1.0, 1.0) + 0.4 * (atan2(1.25, 1.0) - atan2(1.0, 1.0)))) < 1e-5);
        assert_int_equal(o->ego.mode, 0);         /* +0.35 on mode 0 before the 1.0 lead test */
    }
    if (f == 2) {
        assert_false(o->stationary_head_healthy);
        assert_false(find3d(o, 0, 150, 125)->stationary);  /* traj fallback: |wp6| = 3.09 m */
        assert_true(find3d(o, 0, 200, 60)->stationary);    /* |wp6| = 0.375 m */
    }
    if (f == 2) {
        /* ribbon 0.55 old (mode 0: x = 24 at 3 s) + 0.45 new (mode 1: x = 21); the reverse gives 22.35 */
        assert_int_equal(o->ego.mode, 1);
        assert_true(fabsf(o->ego.ribbon[5][0] - 22.65f) < 1e-5f);
    }
    if (f == 3) assert_int_equal(o->ego.mode, 1);            /* hysteresis keeps mode 1 */
    if (f == 4) { assert_false(o->lanes_fused); assert_int_equal(o->ego.mode, 2); }
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void test_fixtures(void **unused)
{
    (void)unused;
    const char *root = getenv("PV_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/meteor/decode/frame0.json", root ? root : ".");
    char *probe = read_text(path);
    if (!probe) fail_msg("missing %s (make check-reference regenerates it)", path);
    free(probe);
    frame *fr = frame_alloc();
    pvm_meteor_state *st = NULL;
    assert_int_equal(pvm_meteor_state_create(&st), PV_OK);
    pvm_meteor_params prm;
    pvm_meteor_params_default(&prm);
    int bad = 0;
    for (int f = 0; f < NFRAMES; f++) {
        make_frame(f, fr);
        pvm_meteor_out o;
        pvc_msg msg = { "" };
        double t0 = cpu_ms();
        assert_int_equal(pvm_meteor_decode(&fr->raw, &fr->cal, has_pose[f] ? &fr->pose : NULL, &prm, st, &o, &msg), PV_OK);
        double t1 = cpu_ms();
        print_message("frame %d: %d 3D, %d 2D, %d unknown, lanes fused %d, decode %.1f ms CPU\n", f, o.n3d, o.n2d, o.nunk,
                      o.lanes_fused, t1 - t0);
        check_readings(f, &o);
        snprintf(path, sizeof path, "%s/tests/fixtures/meteor/decode/frame%d.json", root ? root : ".", f);
        char *text = read_text(path);
        assert_non_null(text);
        cJSON *ref = cJSON_Parse(text);
        free(text);
        assert_non_null(ref);
        cJSON *mine = decoded_json(&o);
        char name[32];
        snprintf(name, sizeof name, "frame%d", f);
        int d = json_diff(mine, ref, name, 20);
        if (d) print_message("frame %d: %d differences from the reference\n", f, d);
        bad += d;
        cJSON_Delete(mine);
        cJSON_Delete(ref);
        pvm_meteor_out_free(&o);
    }
    pvm_meteor_state_free(st);
    frame_free(fr);
    assert_int_equal(bad, 0);
}

/* ---- pieces ---------------------------------------------------------------------------------- */
static double inter(float x0, float y0, float l0, float w0, float t0, float x1, float y1, float l1, float w1, float t1)
{
    const float a[5] = { x0, y0, l0, w0, t0 }, b[5] = { x1, y1, l1, w1, t1 };
    double aa, ab;
    return pvm_meteor_rect_intersection(a, b, &aa, &ab);
}

static void test_rect_overlap(void **unused)
{
    (void)unused;
    assert_true(fabs(inter(0, 0, 2, 2, 0, 1, 0, 2, 2, 0) - 2.0) < 1e-12);
    assert_true(fabs(inter(0, 0, 1, 1, 0, 0, 0, 1, 1, (float)(PI_D / 4)) - 2 * (sqrt(2.0) - 1)) < 1e-6);
    assert_true(inter(0, 0, 1, 1, 0, 3, 0, 1, 1, 0) == 0.0);
    assert_true(fabs(inter(0, 0, 4, 2, 0.3f, 0, 0, 1, 1, 1.0f) - 1.0) < 1e-9);          /* contained */
    assert_true(fabs(inter(0, 0, 4, 2, 0, 0, 0, 4, 2, (float)(PI_D / 2)) - 4.0) < 1e-6); /* cross: 2 x 2 */
    assert_true(fabs(inter(0, 0, 2, 2, 0, 2, 2, 2, 2, 0)) < 1e-12);                      /* corner touch */
    /* the NMS pair of the fixtures: IoU 0.284 (kept), 0.45 (would suppress) */
    double i1 = inter(19.9f, 0, expf(1.5f), expf(0.625f), 0, 17.4f, 0, expf(1.5f), expf(0.625f), 0);
    double a = exp(1.5) * exp(0.625);
    assert_true(i1 / (2 * a - i1) < 0.3);
    double i2 = inter(19.1f, 0, expf(1.5f), expf(0.625f), 0, 17.4f, 0, expf(1.5f), expf(0.625f), 0);
    assert_true(i2 / (2 * a - i2) > 0.3);
}

static void test_peak_and_threshold(void **unused)
{
    (void)unused;
    float m[9] = { -1, -5, -5, -5, -5, -5, -5, -5, -5 };
    assert_true(pvm_meteor_is_peak(m, 3, 3, 0, 0));   /* zero padding would reject it */
    assert_false(pvm_meteor_is_peak(m, 3, 3, 1, 1));
    float p[4] = { 2, 2, 1, 1 };
    assert_true(pvm_meteor_is_peak(p, 2, 2, 0, 0) && pvm_meteor_is_peak(p, 2, 2, 0, 1)); /* plateau */
    float t = pvm_meteor_logit_threshold(0.35f);
    assert_true(t == (float)log(0.35f / (1.0 - 0.35f)));
    assert_true(pvm_meteor_logit_threshold(0.5f) == 0.0f);
    assert_true(fabsf(pvm_meteor_logit_threshold(0.15f) - -1.7346011f) < 1e-6f);
}

static void test_yaw(void **unused)
{
    (void)unused;
    assert_true(fabsf(pvm_meteor_yaw_smooth(0.5f, 0.0f, 0.4f) - 0.2f) < 1e-6f);  /* 0.4 on the new one */
    float y = pvm_meteor_yaw_smooth(3.0f, 0.0f, 0.4f);                              /* flip, then EMA */
    assert_true(fabs(y - (PI_D + 0.4 * (3.0 - PI_D))) < 1e-6);
    y = pvm_meteor_yaw_smooth(-3.1f, 3.1f, 0.4f);                                   /* across +-pi */
    assert_true(fabs(y - pvm_meteor_wrap(3.1 + 0.4 * (2 * PI_D - 6.2))) < 1e-5);
    y = pvm_meteor_yaw_smooth(1.6f, 0.0f, 0.4f);                                    /* 91.7 deg: flipped */
    assert_true(fabs(y - pvm_meteor_wrap(PI_D + 0.4 * (1.6 - PI_D))) < 1e-5);
    assert_true(fabs(pvm_meteor_wrap(-PI_D) - PI_D) < 1e-12 && fabs(pvm_meteor_wrap(3 * PI_D) - PI_D) < 1e-9);
}

static void test_ground_ray(void **unused)
{
    (void)unused;
    frame *fr = frame_alloc();
    make_frame(0, fr);
    double x, y;
    /* front camera at (1.5, 0, 1.5), f = 400: pixel row 216 + 400 * 1.5 / 18.5 meets the ground 20 m ahead */
    assert_true(pvm_meteor_ground_ray(fr->cal.K[0], fr->cal.T_cam_ego[0], 384.0, 216.0 + 600.0 / 18.5, &x, &y));
    assert_true(fabs(x - 20.0) < 1e-5 && fabs(y) < 1e-5);
    /* 40 px right of the centre at that row: y = -(40 / 400) * 18.5 */
    assert_true(pvm_meteor_ground_ray(fr->cal.K[0], fr->cal.T_cam_ego[0], 424.0, 216.0 + 600.0 / 18.5, &x, &y));
    assert_true(fabs(y + 1.85) < 1e-5);
    assert_false(pvm_meteor_ground_ray(fr->cal.K[0], fr->cal.T_cam_ego[0], 384.0, 200.0, &x, &y)); /* above the horizon */
    /* back camera (yaw pi at x = -1): 10 m behind it */
    assert_true(pvm_meteor_ground_ray(fr->cal.K[3], fr->cal.T_cam_ego[3], 384.0, 216.0 + 60.0, &x, &y));
    assert_true(fabs(x + 11.0) < 1e-4 && fabs(y) < 1e-4);
    float sing[16] = { 0 };
    assert_false(pvm_meteor_ground_ray(fr->cal.K[0], sing, 384.0, 300.0, &x, &y));
    frame_free(fr);
}

static void test_lane_motion(void **unused)
{
    (void)unused;
    double tx, ty, dy;
    pvm_meteor_pose a = { 0, 0, PI_D / 2 }, b = { 0, 9.5, PI_D / 2 };
    assert_false(pvm_meteor_lane_motion(&a, &b, &tx, &ty, &dy));   /* 9.5 m forward in the old frame */
    assert_true(fabs(tx - 9.5) < 1e-9 && fabs(ty) < 1e-9);
    pvm_meteor_pose c = { 0, 0, 0 }, d = { 7, 3.5, 0.4 };
    /* previous frame: |7| + |3.5| = 10.5 -> reset; in the current frame it would be 8.3 */
    assert_true(pvm_meteor_lane_motion(&c, &d, &tx, &ty, &dy));
    pvm_meteor_pose e = { 0, 0, 0.49 }, g = { 0, 0, 0.5 }, h = { 0, 0, 3.0 }, k = { 0, 0, -3.0 };
    assert_false(pvm_meteor_lane_motion(&c, &e, &tx, &ty, &dy));
    assert_true(pvm_meteor_lane_motion(&c, &g, &tx, &ty, &dy));
    assert_false(pvm_meteor_lane_motion(&h, &k, &tx, &ty, &dy));    /* 0.28 rad across pi: wrapped, no reset */
    assert_true(fabs(dy - (2 * PI_D - 6.0)) < 1e-12);
}

static void test_thin_road_edge(void **unused)
{
    (void)unused;
    uint8_t *g = calloc(BEV_N, 1);
    assert_non_null(g);
    g[10 * 500 + 10] = 6; g[10 * 500 + 11] = 1;                     /* touches road: kept */
    g[20 * 500 + 20] = 6; g[21 * 500 + 21] = 1;                     /* diagonal only: removed */
    g[30 * 500 + 30] = 6; g[30 * 500 + 31] = 2;                     /* sidewalk only: removed */
    g[40 * 500 + 40] = 6; g[41 * 500 + 40] = 3;                     /* crosswalk: kept */
    g[0] = 6; g[500] = 5;                                           /* corner, stopline below: kept */
    g[799 * 500 + 499] = 6;                                         /* corner, alone: removed */
    pvm_meteor_thin_road_edge(g);
    assert_int_equal(g[10 * 500 + 10], 6);
    assert_int_equal(g[20 * 500 + 20], 0);
    assert_int_equal(g[30 * 500 + 30], 0);
    assert_int_equal(g[40 * 500 + 40], 6);
    assert_int_equal(g[0], 6);
    assert_int_equal(g[799 * 500 + 499], 0);
    free(g);
}

static void test_ego_mode(void **unused)
{
    (void)unused;
    float adj[3];
    const float l1[3] = { 0, 1.25f, 0 }, l2[3] = { 0, 0.8125f, 0 }, l3[3] = { 0, 1.2f, 1.3f }, l4[3] = { 0.5f, 1.5f, 0 };
    assert_int_equal(pvm_meteor_ego_mode(l1, 0, 0.35f, 1.0f, adj), 0);   /* hysteresis first: lead 0.9 */
    assert_true(adj[0] == 0.35f);
    assert_int_equal(pvm_meteor_ego_mode(l1, -1, 0.35f, 1.0f, NULL), 1);
    assert_int_equal(pvm_meteor_ego_mode(l2, 1, 0.35f, 1.0f, NULL), 1);  /* kept by +0.35 */
    assert_int_equal(pvm_meteor_ego_mode(l2, -1, 0.35f, 1.0f, NULL), 0);
    assert_int_equal(pvm_meteor_ego_mode(l3, -1, 0.35f, 1.0f, NULL), 2);
    assert_int_equal(pvm_meteor_ego_mode(l4, -1, 0.35f, 1.0f, NULL), 1); /* lead exactly 1.0 switches */
}

/* stateless decode, bad calls, NaN everywhere, out of memory at every allocation */
static void test_calls(void **unused)
{
    (void)unused;
    frame *fr = frame_alloc();
    make_frame(1, fr);
    pvm_meteor_params prm;
    pvm_meteor_params_default(&prm);
    pvm_meteor_out o;
    pvc_msg msg = { "" };
    assert_int_equal(pvm_meteor_decode(&fr->raw, &fr->cal, &fr->pose, &prm, NULL, &o, &msg), PV_OK);
    assert_false(o.lanes_fused);
    uint8_t *plain = malloc(BEV_N);                                  /* no fusion: argmax + thin_road_edge */
    assert_non_null(plain);
    memcpy(plain, fr->lane, BEV_N);
    pvm_meteor_thin_road_edge(plain);
    assert_memory_equal(o.lanes, plain, BEV_N);
    free(plain);
    assert_true(find3d(&o, 0, 150, 125)->yaw == find3d(&o, 0, 150, 125)->yaw_raw);
    assert_int_equal(o.ego.mode, 1);                                 /* no hysteresis */
    pvm_meteor_out_free(&o);

    /* a frame without a pose clears the accumulator: the next posed frame fuses from nothing and
     * equals the stateless result (keeping it would change 374 cells of frame 1, see the fixtures) */
    {
        frame *f0 = frame_alloc();
        make_frame(0, f0);
        pvm_meteor_state *st = NULL;
        assert_int_equal(pvm_meteor_state_create(&st), PV_OK);
        pvm_meteor_out a, b, c;
        assert_int_equal(pvm_meteor_decode(&f0->raw, &f0->cal, &f0->pose, &prm, st, &a, &msg), PV_OK);
        assert_int_equal(pvm_meteor_decode(&f0->raw, &f0->cal, NULL, &prm, st, &b, &msg), PV_OK);
        assert_false(b.lanes_fused);
        assert_int_equal(pvm_meteor_decode(&fr->raw, &fr->cal, &fr->pose, &prm, st, &c, &msg), PV_OK);
        assert_true(c.lanes_fused);
        assert_int_equal(pvm_meteor_decode(&fr->raw, &fr->cal, &fr->pose, &prm, NULL, &o, &msg), PV_OK);
        assert_memory_equal(c.lanes, o.lanes, BEV_N);
        pvm_meteor_out_free(&a);
        pvm_meteor_out_free(&b);
        pvm_meteor_out_free(&c);
        pvm_meteor_out_free(&o);
        pvm_meteor_state_free(st);
        frame_free(f0);
    }

    pvm_meteor_raw bad = fr->raw;
    bad.hm = NULL;
    assert_int_equal(pvm_meteor_decode(&bad, &fr->cal, NULL, &prm, NULL, &o, &msg), PV_EINTERNAL);
    assert_non_null(strstr(msg.text, "'hm'"));
    assert_int_equal(pvm_meteor_decode(NULL, &fr->cal, NULL, &prm, NULL, &o, &msg), PV_EINTERNAL);
    assert_int_equal(pvm_meteor_decode(&fr->raw, &fr->cal, NULL, &prm, NULL, NULL, &msg), PV_EINTERNAL);

    /* out of memory at every allocation of a stateful frame: clean failure, nothing leaked */
    for (long k = 1;; k++) {
        pvm_meteor_state *st = NULL;
        pvc_alloc_test_begin(k);
        pv_status s = pvm_meteor_state_create(&st);
        if (s == PV_OK) s = pvm_meteor_decode(&fr->raw, &fr->cal, &fr->pose, &prm, st, &o, &msg);
        bool fired = pvc_alloc_failed();
        if (s == PV_OK) pvm_meteor_out_free(&o);
        pvm_meteor_state_free(st);
        long live = pvc_alloc_live();
        pvc_alloc_test_end();
        assert_int_equal(live, 0);
        if (!fired) { assert_int_equal(s, PV_OK); break; }
        assert_int_equal(s, PV_ENOMEM);
        assert_true(k < 100);
    }

    /* NaN in every float output and the pose: no crash, no NaN index */
    const float nan = NAN;
    for (int i = 0; i < DET_N; i += 7) { fr->hm[i] = nan; fr->reg[i] = nan; fr->traj[i] = nan; fr->stat[i] = nan; fr->risk[i] = nan; }
    for (int i = 0; i < 9 * BEV_N; i += 5) fr->lane_logit[i] = nan;
    for (int i = 0; i < 10 * OCC_N; i += 3) fr->occ[i] = nan;
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < 8 * 4 * s2h[s] * s2w[s]; i += 3) fr->reg2d[s][i] = nan;
    for (int i = 0; i < 8 * 54 * 96; i += 2) fr->dm[i] = nan;
    fr->ego[36] = nan;
    fr->ego[3] = nan;
    fr->tl[1] = nan;
    fr->cal.K[0][0] = nan;
    fr->cal.T_cam_ego[1][3] = nan;
    pvm_meteor_state *st = NULL;
    assert_int_equal(pvm_meteor_state_create(&st), PV_OK);
    pvm_meteor_pose pn = { nan, 0, 0 };
    for (int f = 0; f < 3; f++) {
        assert_int_equal(pvm_meteor_decode(&fr->raw, &fr->cal, f == 1 ? &pn : &fr->pose, &prm, st, &o, &msg), PV_OK);
        cJSON *j = decoded_json(&o);
        cJSON_Delete(j);
        pvm_meteor_out_free(&o);
        fr->pose.x += 0.5;
    }
    pvm_meteor_state_free(st);
    frame_free(fr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rect_overlap), cmocka_unit_test(test_peak_and_threshold), cmocka_unit_test(test_yaw),
        cmocka_unit_test(test_ground_ray),   cmocka_unit_test(test_lane_motion),        cmocka_unit_test(test_thin_road_edge),
        cmocka_unit_test(test_ego_mode),     cmocka_unit_test(test_calls),              cmocka_unit_test(test_fixtures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
