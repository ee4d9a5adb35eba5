/* hamer host post-processing: 6D -> rotations, the MANO layer (linear blend skinning), the
 * synthetic MANO-shaped template, and the camera (specs/hamer.md 4.4, 4.5, 5). Prefix
 * pvm_hamer_. Written from the formulas in the spec; no smplx/HaMeR code is used.
 *
 * Example (one crop, after the engine gave pose96, betas10, cam3):
 *
 *     pvm_hamer_mano m;                               // arrays from hamer.safetensors, or:
 *     if (pvm_hamer_mano_alloc(&m) != PV_OK) return PV_ENOMEM;
 *     pvm_hamer_mano_synth(1, &m);                    // generated (not MANO) template
 *     if (pvm_hamer_mano_check(&m, &msg) != PV_OK) ...
 *     float R[16 * 9], verts[778 * 3], kp3[21 * 3], xy[778 * 2];
 *     pvm_hamer_rot6d(pose96, 16, R);
 *     pvm_hamer_mano_forward(&m, R, betas10, verts, kp3);
 *     pvm_hamer_hand_out o;
 *     pvm_hamer_camera(cam3, &g, verts, kp3, R, &o);  // g from pvm_hamer_crop_geometry
 *     pvm_hamer_project(&g, o.cam_t, verts, 778, xy); // mesh in image pixels (renderer)
 *     pvm_hamer_mano_free(&m);
 *
 * Frames and conventions (hamer.h; spec 4.5 and 11):
 *   - The network is right-handed only: rot6d, mano_forward and cam_net are in the right-hand
 *     frame. pvm_hamer_camera then turns a left hand's outputs into its own frame: x of the
 *     vertices and keypoints negated, every rotation R -> M R M with M = diag(-1, 1, 1), tx
 *     negated. Every output of pvm_hamer_camera is in the hand's own frame.
 *   - vertices / keypoints_3d are in the MANO frame (metres, wrist-relative, no translation);
 *     camera-frame points are X + cam_t (OpenCV axes: x right, y down, z forward).
 *   - cam = (s, tx', ty), cam_t = (tx', ty, 2 * 5000 / (256 s + 1e-9)): the crop camera
 *     (focal 5000 for the 256-pixel crop, principal point at the crop centre), tx' = -tx for a
 *     left hand. The normalised projection of a right-frame point X with the right-frame t is
 *     kp_n = (5000 / 256) * (X + t)_{x,y} / (X + t)_z.
 *   - keypoints_2d_crop: pixels of the 256x256 square crop the network saw (u = 256 kp_n.x +
 *     128, v = 256 kp_n.y + 128; on the 192-wide window subtract 32 from u). For a left hand
 *     that crop is the mirrored one, so these are NOT mirrored back; they equal the mirrored
 *     right-hand run's.
 *   - keypoints_2d: image pixels (integer pixel centres), through the same crop camera:
 *     x = cx + b kp_n.x (right) or cx - b kp_n.x (left), y = cy + b kp_n.y; this is the point the
 *     crop sampled at that crop pixel. A left hand is computed as the mirrored right-hand run
 *     (centre (W - 1) - cx) and mirrored back (x -> (W - 1) - x), so a left hand equals the
 *     mirrored right hand bit for bit.
 *   - cam_t_full: the demo's full-image camera, f_full = 5000 / 256 * max(W, H), principal
 *     point ((W - 1) / 2, (H - 1) / 2), bs = b s + 1e-9:
 *       (2 (cx - (W-1)/2) / bs + tx', 2 (cy - (H-1)/2) / bs + ty, 2 f_full / bs)
 *     (for a left hand computed mirrored as above, then x negated: the same formula).
 *   - A degenerate camera (s <= 0, points at the camera plane) is not guarded: outputs may be
 *     non-finite; callers that serialise them must check.
 */
#ifndef PVM_HAMER_MANO_H
#define PVM_HAMER_MANO_H

#include "models/hamer/hamer.h"

/* smplx vertex_ids['mano'] fingertips: thumb, index, middle, ring, pinky (spec 5.2) */
#define PVM_HAMER_TIP_THUMB  744
#define PVM_HAMER_TIP_INDEX  320
#define PVM_HAMER_TIP_MIDDLE 443
#define PVM_HAMER_TIP_RING   554
#define PVM_HAMER_TIP_PINKY  671

/* MANO joint order (spec 5.3): 0 wrist, 1-3 index, 4-6 middle, 7-9 pinky, 10-12 ring,
 * 13-15 thumb; then the 5 tips as 16..20; mano_to_openpose picks the 21 OpenPose keypoints. */
extern const int pvm_hamer_mano_parents[PVM_HAMER_NJ];        /* -1,0,1,2,0,4,5,0,7,8,... */
extern const int pvm_hamer_tip_ids[5];                        /* 744, 320, 443, 554, 671 */
extern const int pvm_hamer_mano_to_openpose[PVM_HAMER_NKP];

/* 6D -> rotation (spec 4.4): per joint a1 = v[0..2], a2 = v[3..5]; b1 = a1 / max(|a1|, 1e-12),
 * b2 = normalise(a2 - (b1 . a2) b1) (same eps), b3 = b1 x b2; R = [b1 | b2 | b3] (columns),
 * row-major 3x3 per joint. v6: n * 6 floats, R: n * 9 floats (caller-owned). Double inside. */
void pvm_hamer_rot6d(const float *v6, int n, float *R);

/* The arrays of m (hamer.h) through pvc_malloc; parents set to MANO's tree. PV_ENOMEM leaves m
 * with NULL arrays. free accepts a zeroed or freed struct and NULLs the pointers. */
pv_status pvm_hamer_mano_alloc(pvm_hamer_mano *m);
void      pvm_hamer_mano_free(pvm_hamer_mano *m);

/* Checks loaded arrays: parents[0] == -1 and 0 <= parents[i] < i, face indices in [0, 778),
 * every float finite. PV_EFORMAT naming the array and the flat index ("mano.posedirs[123]"). */
pv_status pvm_hamer_mano_check(const pvm_hamer_mano *m, pvc_msg *msg);

/* MANO forward (spec 5.2, pose2rot = False, no translation): R = 16 row-major 3x3 rotations
 * (joint 0 = global orientation), betas = 10 shape coefficients. Writes verts [778][3] and
 * joints21 [21][3] (OpenPose order: 16 posed joints + tips [744,320,443,554,671], reordered by
 * mano_to_openpose). Accumulates in double; reads m (shared, read-only); allocates nothing
 * (about 40 KB of stack). verts and joints21 are caller-owned. */
void pvm_hamer_mano_forward(const pvm_hamer_mano *m, const float *R, const float *betas,
                            float *verts, float *joints21);

/* A SYNTHETIC MANO-shaped right hand (not MANO data, which may not be redistributed), into the
 * arrays of an allocated m: 778 vertices (palm tube of 6 rings x 32, four 8-sided finger tubes
 * with 17/18/16/14 rings, a 6-sided thumb tube of 10 rings, 5 apex tips at the MANO tip ids, a
 * wrist centre), 1538 consistently wound triangles forming one surface with a 16-edge wrist
 * hole (like MANO's), metres, y up the fingers, x across (thumb and index at +x), z through the
 * palm (front +z). J_regressor rows average the vertex ring at each joint; LBS weights bind each
 * vertex to 1-2 joints in multiples of 1/16; shapedirs (size, finger length, width, thickness,
 * and 6 seeded smooth offsets, |.| <= 1e-2) and posedirs (seeded, smooth per bone, |.| <= 1e-3).
 * Deterministic on every IEEE-754 machine: the seeded part is integer (splitmix64) scaled by
 * powers of two, the geometry uses + - * / sqrt only and is rounded to multiples of 2^-20 m. */
void pvm_hamer_mano_synth(uint64_t seed, pvm_hamer_mano *m);

/* Camera outputs of one hand (all in the hand's own frame; see the conventions above). */
typedef struct pvm_hamer_hand_out {
    float cam[3];                                   /* (s, tx', ty) */
    float cam_t[3];                                 /* crop camera translation (f = 5000) */
    float cam_t_full[3];                            /* full-image camera translation */
    float focal_full;                               /* 5000 / 256 * max(W, H) */
    float keypoints_2d[PVM_HAMER_NKP][2];           /* image pixels */
    float keypoints_2d_crop[PVM_HAMER_NKP][2];      /* pixels of the 256x256 crop seen */
} pvm_hamer_hand_out;

/* Camera (spec 4.5): cam_net = the network's (s, tx, ty) (right-hand frame); joints21 (21x3)
 * from pvm_hamer_mano_forward. For a left hand (g->is_right false), verts (778x3), joints21 and
 * R16 (16 row-major 3x3) are mirrored in place into the left hand's frame (verts or R16 may be
 * NULL to skip them). Fills o. Allocates nothing. */
void pvm_hamer_camera(const float cam_net[3], const pvm_hamer_crop_geom *g, float *verts,
                      float *joints21, float *R16, pvm_hamer_hand_out *o);

/* Image pixels of n points pts (n x 3, in the hand's own frame, as pvm_hamer_camera leaves
 * them) through the crop camera cam_t (pvm_hamer_hand_out.cam_t): xy = n x 2. The same
 * arithmetic as keypoints_2d, so projecting joints21 reproduces it exactly. */
void pvm_hamer_project(const pvm_hamer_crop_geom *g, const float cam_t[3], const float *pts,
                       int n, float *xy);

#endif
