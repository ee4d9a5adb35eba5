/* meteor host decode: the 19 engine outputs of one frame -> 3D boxes, 2D boxes, unknown
 * obstacles, lanes (with temporal fusion), occupancy, risk, traffic light and the ego path
 * (../shared/specs/meteor.md sections 1.5, 4 and 5). Prefix pvm_meteor_. Written from the
 * formulas of the spec; no METEOR code is used.
 *
 * Readings perceive picks where the spec leaves two (spec section 12; README "METEOR
 * conventions"; tests fail under the other reading):
 *   - every "sigmoid(x) > t" is evaluated as x > logit(t) on the float32 logit with logit(t)
 *     computed in double and rounded to float (so C and the numpy reference agree bit for
 *     bit); peak tests and sorts are on the logits; scores reported are sigmoid in double;
 *   - 3x3 peak test: a cell is a peak when no in-map neighbour is strictly greater (cells
 *     outside the map are ignored);
 *   - 3D: top-64 over both classes jointly, ties by (class, row, col) ascending; x range
 *     -78 <= x <= 78 (XR = 80, the grid's extent); NMS same class, greedy, a box is
 *     suppressed only by boxes already kept;
 *   - traj channel of mode m, waypoint k (0..5), axis j (0 dx, 1 dy): m*12 + k*2 + j; mode
 *     logits 36..38;
 *   - yaw smoothing: match the nearest previous box of the same class within 2.5 m, in raw
 *     ego coordinates of each frame (no motion compensation); yaw' = 0.4 new + 0.6 old after
 *     the old one is flipped by pi when |new - old| > 90 degrees (angles wrapped to (-pi, pi]);
 *   - 2D: top-48 per camera and scale over all 10 classes, class 7 (road paint) dropped after
 *     the cut; unknown obstacles: class 0 boxes, ground-ray range measured from the ego origin
 *     (hypot(x, y)); depth_mean is distance along the pixel's ray; dedupe keeps the higher
 *     score (ties: lower camera index, then earlier box); not deduped against the 3D boxes;
 *   - lanes: cells warped from outside the previous grid get 0 (no evidence); the re-argmax
 *     never writes a thin class (3..6) and never overwrites one; a frame without a pose
 *     clears the accumulator; road-edge contact over the 4 neighbours; the reset test uses the
 *     motion expressed in the previous ego frame;
 *   - ego: the +0.35 hysteresis is added before the straight-preference (1.0 lead) test; the
 *     ribbon is 0.55 old + 0.45 new.
 */
#ifndef PVM_METEOR_DECODE_H
#define PVM_METEOR_DECODE_H

#include "core/core.h"

#define PVM_METEOR_NCAM     8
#define PVM_METEOR_IMG_W    768
#define PVM_METEOR_IMG_H    432
#define PVM_METEOR_BEV_H    800      /* lane grid rows (x from +80 m down, 0.2 m) */
#define PVM_METEOR_BEV_W    500      /* lane grid cols (y from +50 m down, 0.2 m) */
#define PVM_METEOR_DET_H    400      /* detection grid, 0.4 m */
#define PVM_METEOR_DET_W    250
#define PVM_METEOR_LANE_CLS 9
#define PVM_METEOR_OCC_C    10
#define PVM_METEOR_OCC_Z    16
#define PVM_METEOR_OCC_XY   200
#define PVM_METEOR_2D_CLS   10
#define PVM_METEOR_MAX_3D   64
#define PVM_METEOR_MAX_2D   48       /* per camera and scale */

/* The camera slots, in the graph's order (spec 1.2). */
extern const char *const pvm_meteor_cam_names[PVM_METEOR_NCAM];

/* The engine outputs of one frame (batch 1), float32 unless said, row-major as in the file.
 * Pointers are borrowed for the call. */
typedef struct pvm_meteor_raw {
    const uint8_t *lane;            /* [800][500] argmax */
    const float   *lane_logit;      /* [9][800][500], NULL: the lane fusion falls back (spec 4.4) */
    const float   *hm, *reg;        /* [2][400][250], [6][400][250] */
    const float   *hm2d[3];         /* [8][10][h_s][w_s], (h,w) = (108,192), (54,96), (27,48) */
    const float   *reg2d[3];        /* [8][4][h_s][w_s] */
    const float   *ego;             /* [42] */
    const float   *occ;             /* [10][16][200][200] logits */
    const float   *traj;            /* [39][400][250] */
    const float   *stationary;      /* [400][250] */
    const float   *tl;              /* [4] */
    const float   *risk;            /* [400][250] logits (0.2 m, BEV rows 200:600, cols 125:375) */
    const float   *depth_mean;      /* [8][54][96] metres (the file's f16 widened) */
} pvm_meteor_raw;

/* The rig (the graph's K and T_cam_ego inputs, at 768x432). */
typedef struct pvm_meteor_calib {
    float K[PVM_METEOR_NCAM][9];            /* row-major 3x3 */
    float T_cam_ego[PVM_METEOR_NCAM][16];   /* row-major 4x4, ego -> camera */
    bool  present[PVM_METEOR_NCAM];         /* absent cameras give no 2D boxes / unknowns */
} pvm_meteor_calib;

/* Ego pose in a world frame (x, y metres, yaw rad), for the temporal logic. */
typedef struct pvm_meteor_pose { double x, y, yaw; } pvm_meteor_pose;

/* Tunables (spec section 4 defaults via pvm_meteor_params_default; runtime params). */
typedef struct pvm_meteor_params {
    float cand_3d;          /* 0.15 candidate peaks */
    float keep_vehicle;     /* 0.35 */
    float keep_vru;         /* 0.15 */
    float nms_iou;          /* 0.3 */
    float nms_ios;          /* 0.6 intersection / smaller area */
    float yaw_match_m;      /* 2.5 */
    float yaw_alpha;        /* 0.4 */
    float th_2d;            /* 0.30; logit(th_2d) must lie inside (-50, 50) (the 2D logit clip) */
    int   hide_2d;          /* 7; -1 none */
    float lane_decay;       /* 0.7 */
    float mode_hysteresis;  /* 0.35 */
    float straight_lead;    /* 1.0 */
    float stat_logit;       /* 0.0 */
} pvm_meteor_params;
void pvm_meteor_params_default(pvm_meteor_params *p);

typedef struct pvm_meteor_box3d {
    int   cls;              /* 0 vehicle, 1 VRU */
    float score;            /* sigmoid(hm) */
    int   row, col;         /* detection cell */
    float x, y;             /* ego frame, m */
    float length, width;    /* m */
    float yaw, yaw_raw;     /* smoothed / this frame's, rad */
    bool  stationary;
    bool  stationary_from_head;  /* false: the traj fallback decided */
    int   future_mode;      /* argmax of traj 36..38; -1 for VRU (not drawn) */
    float future[6][2];     /* waypoints (x, y) in the ego frame, m (vehicles only) */
} pvm_meteor_box3d;

typedef struct pvm_meteor_box2d {
    int   cam, scale;       /* camera slot 0..7, stride 4/8/16 as 0/1/2 */
    int   cls;              /* 0..9 (spec 1.5 hm2d classes) */
    float score;
    float cx, cy, w, h;     /* 768x432 pixels */
} pvm_meteor_box2d;

typedef struct pvm_meteor_unknown {
    int   cam, box;         /* source 2D box (index into boxes2d) */
    float score, x, y;      /* ego frame, m */
    bool  from_ground_ray;  /* false: depth_mean fallback */
} pvm_meteor_unknown;

typedef struct pvm_meteor_ego {
    int   mode;                 /* chosen mode 0..2 */
    float mode_logits[3];       /* after hysteresis */
    float waypoints[6][2];      /* chosen mode, x forward / y left, m, t = 0.5 .. 3.0 s */
    float ribbon[6][2];         /* display EMA */
    float steer, accel, brake_prob;
    bool  brake;
} pvm_meteor_ego;

typedef struct pvm_meteor_out {
    pvm_meteor_box3d   *boxes3d;   int n3d;
    pvm_meteor_box2d   *boxes2d;   int n2d;
    pvm_meteor_unknown *unknowns;  int nunk;
    uint8_t *lanes;          /* [800][500] classes after fusion + thin_road_edge */
    bool     lanes_fused;    /* the temporal fusion ran */
    uint8_t *occupancy;      /* [16][200][200] argmax classes */
    float   *risk;           /* [400][250] sigmoid */
    float    tl_prob[4];     /* softmax: none, green, yellow, red */
    int      tl_state;
    bool     stationary_head_healthy;
    pvm_meteor_ego ego;
} pvm_meteor_out;

/* Per-stream temporal state (yaw tracks, lane accumulator, previous ego mode and ribbon). */
typedef struct pvm_meteor_state pvm_meteor_state;
pv_status pvm_meteor_state_create(pvm_meteor_state **out);
void      pvm_meteor_state_reset(pvm_meteor_state *st);
void      pvm_meteor_state_free(pvm_meteor_state *st);

/* Decodes one frame. st NULL: stateless (no smoothing, no fusion, no hysteresis); pose NULL:
 * no lane fusion (the accumulator is cleared). out is filled (pvm_meteor_out_free). */
pv_status pvm_meteor_decode(const pvm_meteor_raw *raw, const pvm_meteor_calib *cal,
                            const pvm_meteor_pose *pose, const pvm_meteor_params *prm,
                            pvm_meteor_state *st, pvm_meteor_out *out, pvc_msg *msg);
void      pvm_meteor_out_free(pvm_meteor_out *o);

/* ---- pieces of the decode, exposed for the unit tests -------------------------------------- */
/* float32(logit(t)) computed in double: "sigmoid(x) > t" is evaluated as x > this. */
float pvm_meteor_logit_threshold(float t);
/* 3x3 peak test on map[h][w] at (r, c): no in-map neighbour strictly greater. */
bool  pvm_meteor_is_peak(const float *map, int h, int w, int r, int c);
/* Rotated rectangles (x, y, length along yaw, width, yaw): intersection area (exact convex
 * polygon clipping) and the two areas. */
double pvm_meteor_rect_intersection(const float a[5], const float b[5], double *area_a, double *area_b);
/* Wraps an angle to (-pi, pi]; non-finite values come back unchanged. */
double pvm_meteor_wrap(double a);
/* One yaw EMA step: old flipped by pi when |new - old| > 90 degrees, then old + alpha *
 * wrap(new - old) (the short arc between the two; = alpha new + (1 - alpha) old). */
float pvm_meteor_yaw_smooth(float yaw_new, float yaw_old, float alpha);
/* Ego-frame point where the ray through pixel (u, v) of a camera (K row-major 3x3,
 * T_cam_ego row-major 4x4) meets z = 0; false when it does not (ray not going down, camera
 * not above ground, T singular). */
bool  pvm_meteor_ground_ray(const float K[9], const float T_cam_ego[16], double u, double v, double *x, double *y);
/* The motion from the previous pose to the current one expressed in the previous ego frame
 * (tx, ty, dyaw wrapped); returns true when the lane accumulator resets (|tx| + |ty| >= 10 m
 * or |dyaw| >= 0.5 rad). */
bool  pvm_meteor_lane_motion(const pvm_meteor_pose *prev, const pvm_meteor_pose *cur, double *tx, double *ty,
                             double *dyaw);
/* thin_road_edge in place on lanes[800][500]: a road_edge (6) cell with no 4-neighbour in
 * {1, 3, 4, 5} becomes 0. */
void  pvm_meteor_thin_road_edge(uint8_t *lanes);
/* The ego mode choice: logits[3] in, prev_mode -1 (none) or 0..2; writes the logits after the
 * hysteresis into adj (may be NULL). */
int   pvm_meteor_ego_mode(const float logits[3], int prev_mode, float hysteresis, float straight_lead, float adj[3]);

#endif
