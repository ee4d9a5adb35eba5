/* hamer: the picture of a result — the input image with each hand's projected MANO mesh, its 21
 * keypoints and skeleton, and its box; an optional title band above. Prefix pvm_hamer_render_.
 *
 * Example (what `perceive run hamer IMAGE --box ... --png out.png` does):
 *
 *     const pv_hand *hands;
 *     const int32_t *faces;
 *     int n = pv_result_hands(r, &hands);
 *     pv_result_mesh_faces(r, &faces);
 *     void *png; size_t len; pvc_msg msg;
 *     if (pvm_hamer_render_png(img.rgb, img.w, img.h, hands, n, faces,
 *                              "HAMER  GENERATED WEIGHTS - NOT A TRAINED MODEL", 0, &png, &len,
 *                              &msg) != PV_OK) puts(msg.text);
 *     else { save(png, len); pvc_free(png); }
 *
 * Projection (the mapping of pv_hand.keypoints_2d; the same for left and right hands, because
 * every pv_hand field is in the hand's own frame): with f = 5000 / 256, t = cam_t,
 * (cx, cy) = crop_center, b = crop_size, a point P = (X, Y, Z) of vertices / keypoints_3d lands on
 * image pixel u = cx + b f (X + t0) / (Z + t2), v = cy + b f (Y + t1) / (Z + t2). Pixel centres
 * are integers (pixel (x, y) covers [x-0.5, x+0.5]); a point is drawn on its nearest pixel.
 *
 * Layout: the image is scaled down (area average, never up) to at most max_width columns, the
 * rows following the aspect ratio (rounded, at least 1); image pixel (u, v) maps to picture
 * column (u + 0.5) sx - 0.5 and row band + (v + 0.5) sy - 0.5 (pvm_hamer_render_geom). A title
 * takes a band of PVIO_BEV_BAND_ROWS(text_scale) rows above the image (perceive's 5x7 font,
 * upper case, the bird's-eye view's band and title inks) and is stored as a PNG tEXt "Title".
 *
 * What is drawn over the image, in this order (later layers cover earlier ones; all of it
 * clipped to the image, none of it in the band):
 *   1. the meshes: every face as a flat-shaded triangle, alpha PVM_HAMER_RENDER_ALPHA over the
 *      image, light blue for right hands and pink for left ones (pvm_hamer_render_mesh_rgb),
 *      Lambert-shaded by the angle between the face normal (camera frame: vertex + cam_t; either
 *      winding) and the ray to the camera; one z-buffer for all hands, nearer wins, with the
 *      depth (Z + t2) / b (the camera-frame depth for one hand, comparable across hands'
 *      crop cameras); a pixel is covered when its centre is inside the triangle;
 *   2. each hand's box (x1, y1, x2, y2 of pv_hand.box), a thin rectangle in its side's ink;
 *   3. the OpenPose skeleton from keypoints_2d: the wrist (0) to each finger's base, then along
 *      each finger (1-4 thumb, 5-8 index, 9-12 middle, 13-16 ring, 17-20 pinky), line_px wide,
 *      one colour per finger (pvm_hamer_render_keypoint_rgb);
 *   4. the 21 keypoints as discs of radius dot_r in the same colours (the wrist white) with a
 *      one-pixel dark rim.
 * Robust to any numbers a generated model gives: non-finite points and points off by more than
 * 1e6 pixels are skipped, so are faces with a vertex behind the camera (Z + t2 <= 0), faces
 * whose bounding box exceeds 4x the image's area, and a hand's whole mesh when its crop_size is
 * not finite and > 0. Mesh work is bounded by PVM_HAMER_RENDER_WORK x the image's pixels per
 * call (faces beyond it are skipped), so no input can hang the renderer.
 *
 * Cost: the picture (3 bytes a pixel), a z-buffer and a colour layer over the meshes' bounding
 * rectangle (7 bytes a pixel), a row of floats for the scaling, libpng/zlib state, all through
 * pvc_malloc. Thread-safe (no shared state).
 *
 * Ownership: every argument is borrowed for the call; *png is allocated with pvc_malloc (release
 * with pvc_free); on any failure *png = NULL, *len = 0. Errors: PV_EINPUT names the argument and
 * value (W, H, max_width, nhands, title, faces[i][k], a NULL pointer); PV_ENOMEM when an
 * allocation fails; PV_EINTERNAL if libpng reports an error (a bug). Nothing leaks on any path.
 */
#ifndef PVM_HAMER_RENDER_H
#define PVM_HAMER_RENDER_H

#include "core/core.h"

#define PVM_HAMER_RENDER_MAX_SIDE  20000   /* W and H at most */
#define PVM_HAMER_RENDER_MAX_HANDS 1024    /* nhands at most */
#define PVM_HAMER_RENDER_MAX_TITLE 200     /* bytes of title */
#define PVM_HAMER_RENDER_ALPHA     0.6     /* mesh opacity */
#define PVM_HAMER_RENDER_FAR_PX    1.0e6   /* |u|, |v| beyond this: the point is skipped */
#define PVM_HAMER_RENDER_WORK      16      /* mesh pixel tests per call: this x the image's pixels
                                            * (+ 2^20) */

/* The picture's layout for an input of W x H pixels. */
typedef struct pvm_hamer_render_geom {
    int width, height;      /* whole picture: the band and the image below it */
    int band;               /* title band rows (0 without a title); the image starts at this row */
    int img_w, img_h;       /* the image in the picture (width == img_w) */
    double sx, sy;          /* picture pixels per input pixel (img_w / W, img_h / H; 1 unscaled) */
    int text_scale;         /* title font magnification: 1 + width / 800 */
    int line_px;            /* skeleton width: 1 + max(img_w, img_h) / 800 */
    int dot_r;              /* keypoint radius: 2 + max(img_w, img_h) / 400 */
} pvm_hamer_render_geom;

/* Validates W, H (1..PVM_HAMER_RENDER_MAX_SIDE), max_width (>= 0; 0 or >= W: unscaled) and title
 * (NULL or at most PVM_HAMER_RENDER_MAX_TITLE bytes; NULL or "": no band) and fills *g. */
pv_status pvm_hamer_render_geometry(int W, int H, const char *title, int max_width,
                                    pvm_hamer_render_geom *g, pvc_msg *msg);

/* Renders and encodes an 8-bit RGB PNG into *png (pvc_malloc'ed, *len bytes).
 * rgb: the input image, W x H pixels, RGB8 row-major (3 * W * H bytes). hands: nhands results
 * (0..PVM_HAMER_RENDER_MAX_HANDS; may be NULL when 0). faces: PV_HAND_FACES x 3 vertex indexes
 * in [0, PV_HAND_VERTICES) (either winding), or NULL to draw no meshes. title, max_width: as in
 * pvm_hamer_render_geometry. All of it is validated before anything is drawn. */
pv_status pvm_hamer_render_png(const uint8_t *rgb, int W, int H, const pv_hand *hands, int nhands,
                               const int32_t *faces, const char *title, int max_width, void **png,
                               size_t *len, pvc_msg *msg);

/* Image pixel (uv[0], uv[1]) of a point p (x, y, z in the hand's frame, as vertices and
 * keypoints_3d) by the projection above; false (uv untouched) when it is behind the camera, not
 * finite or farther than PVM_HAMER_RENDER_FAR_PX. */
bool pvm_hamer_render_project(const pv_hand *h, const float p[3], double uv[2]);

/* Mesh colour (before shading) of a right (is_right != 0) or left hand into rgb. */
void pvm_hamer_render_mesh_rgb(int is_right, uint8_t rgb[3]);
/* Colour of keypoint k (0 wrist, 1..20 OpenPose order) and of the bone that ends at it; false
 * (rgb untouched) for k outside 0..20. */
bool pvm_hamer_render_keypoint_rgb(int k, uint8_t rgb[3]);

#endif
