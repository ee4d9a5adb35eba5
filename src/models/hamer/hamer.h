/* hamer bundle: HaMeR (Pavlakos et al., CVPR 2024) 3D hand meshes from an image and hand boxes.
 * Prefix pvm_hamer_. Facts (shapes, conventions, sources): ../shared/specs/hamer.md.
 *
 *   image + boxes --pre.c--> 3x256x192 crops (ImageNet-normalised), one per box
 *                 --net.c--> engine plan (ViT-H 32 blocks + 6-layer cross-attention decoder)
 *                            -> pose 6D (96), betas (10), weak-perspective camera (3) per crop
 *                 --mano.c-> rot6d -> 16 rotations -> MANO skinning -> 778 vertices, 21 keypoints
 *                            -> camera translations and 2D keypoints (crop and image pixels)
 *
 * Conventions perceive picks where the spec leaves two readings (spec section 11; README):
 *   - pixel centres are integers: pixel (x, y) covers [x-0.5, x+0.5]; a left hand is cropped from
 *     the image mirrored about x = (W-1)/2 (cv2's W - 1 - cx), and the full-image camera's principal
 *     point is ((W-1)/2, (H-1)/2), so a left hand equals the mirrored right-hand run exactly;
 *   - vertices / keypoints_3d are in the MANO frame (metres, no translation); cam_t is the crop
 *     camera translation (f = 5000 on the 256 crop), cam_t_full the full-image one;
 *   - left hands: vertices, keypoints_3d and the rotations are mirrored back (x negated; R -> M R M
 *     with M = diag(-1, 1, 1)), tx negated: every output is in the left hand's own frame;
 *   - keypoints_2d are image pixels through the crop's perspective camera (x = cx +- b kp_n.x,
 *     y = cy + b kp_n.y), keypoints_2d_crop the same points in 256x256 crop pixels.
 */
#ifndef PVM_HAMER_H
#define PVM_HAMER_H

#include "core/core.h"

#define PVM_HAMER_PATCH      256     /* square crop side */
#define PVM_HAMER_H_IN       256     /* network input rows */
#define PVM_HAMER_W_IN       192     /* network input columns (square crop columns 32..223) */
#define PVM_HAMER_NV         778     /* MANO vertices */
#define PVM_HAMER_NF         1538    /* MANO faces */
#define PVM_HAMER_NJ         16      /* MANO joints (wrist + 15) */
#define PVM_HAMER_NKP        21      /* OpenPose keypoints */
#define PVM_HAMER_NBETAS     10
#define PVM_HAMER_NPOSEDIRS  135     /* 15 joints x 9 */
#define PVM_HAMER_NPOSE      96      /* 16 joints x 6D */
#define PVM_HAMER_FOCAL      5000.0  /* EXTRA.FOCAL_LENGTH, for the 256-pixel crop */
#define PVM_HAMER_RESCALE    2.0     /* demo.py --rescale_factor */
#define PVM_HAMER_MAX_BATCH  8       /* boxes per image (one engine batch) */

/* One hand box in image pixels (x2 > x1, y2 > y1; no +1 for integer boxes). */
typedef struct pvm_hamer_box { double x1, y1, x2, y2; bool is_right; } pvm_hamer_box;

/* Where a crop comes from: the square window of side b centred on (cx, cy) in image pixels,
 * sampled mirrored when !is_right. Blur: the demo's anti-alias Gaussian (sigma > 0 when
 * b > 563.2 px). */
typedef struct pvm_hamer_crop_geom {
    double cx, cy, b;
    bool   is_right;
    double sigma;        /* 0: no blur */
    int    W, H;         /* the image's size */
} pvm_hamer_crop_geom;

/* MANO arrays (the user's MANO_RIGHT.pkl through tools/convert/hamer.py, or generated), fp32.
 * Stored in hamer.safetensors as mano.v_template [778,3], mano.shapedirs [778,3,10],
 * mano.posedirs [778,3,135], mano.J_regressor [16,778], mano.weights [778,16] (F32),
 * mano.faces [1538,3], mano.parents [16] (I32, root -1). */
typedef struct pvm_hamer_mano {
    float   *v_template;    /* [778][3] */
    float   *shapedirs;     /* [778][3][10] */
    float   *posedirs;      /* [778][3][135] */
    float   *J_regressor;   /* [16][778] */
    float   *weights;       /* [778][16] */
    int32_t *faces;         /* [1538][3] */
    int32_t  parents[PVM_HAMER_NJ];
} pvm_hamer_mano;

#endif
