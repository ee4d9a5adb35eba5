/* hamer host pre-processing: hand box -> crop geometry -> 256x192 network window (spec
 * specs/hamer.md sections 2.1-2.5). Prefix pvm_hamer_. Written from the maths in the spec.
 *
 * Example (one hand):
 *
 *     pvm_hamer_box box = { .x1 = 410, .y1 = 220, .x2 = 520, .y2 = 350, .is_right = false };
 *     pvm_hamer_crop_geom g;
 *     pvc_msg msg;
 *     float pix[PVM_HAMER_H_IN * PVM_HAMER_W_IN * 3], chw[3 * PVM_HAMER_H_IN * PVM_HAMER_W_IN];
 *     if (pvm_hamer_crop_geometry(&box, 0, W, H, &g, &msg) != PV_OK ||
 *         pvm_hamer_crop(rgb, W, H, &g, pix, &msg) != PV_OK) { puts(msg.text); return; }
 *     pvm_hamer_normalise(pix, chw);          // -> the engine's [3, 256, 192] input
 *
 * Geometry (spec 2.1, 2.2; conventions of hamer.h):
 *   centre (cx, cy) = ((x1 + x2) / 2, (y1 + y2) / 2); (w, h) = PVM_HAMER_RESCALE * (x2 - x1,
 *   y2 - y1) (no +1); aspect expansion to w:h = 192:256: if h / w < 256 / 192 then h = w * 4 / 3,
 *   else w = h * 3 / 4; b = max(w, h). Blur: d = b / 256 / 2; sigma = (d - 1) / 2 when d > 1.1
 *   (b > 563.2 px), else 0. All in double.
 *
 * Sampling (spec 2.3, 2.4): pixel centres are integers. A left hand is cropped from the image
 *   mirrored about x = (W - 1) / 2: the crop works on the virtual image V(x, y) = I(W-1-x, y)
 *   with centre cxv = (W - 1) - cx (for a right hand V = I and cxv = cx), so a left box on I
 *   gives, bit for bit, the crop of the mirrored box (W-1-x2, y1, W-1-x1, y2) as a right hand on
 *   the mirrored image (whenever both give the same cxv, e.g. integer or half-integer boxes).
 *   Window pixel (row r in 0..255, column c in 0..191) is square-crop pixel (u = c + 32, v = r):
 *       x = cxv + (u - 128) * b / 256,   y = cy + (v - 128) * b / 256     (in V's frame)
 *   and is the bilinear interpolation of the four neighbours floor(x), floor(x)+1 (same in y);
 *   neighbours outside the image count as 0 (cv2 BORDER_CONSTANT 0), weights in double.
 *   - sigma == 0: the value is rounded to the nearest integer, ties away from zero
 *     (floor(v + 0.5); v >= 0), like cv2's uint8 warp (not cv2's 1/32-pixel fixed point).
 *   - sigma > 0: V is first blurred with a Gaussian (skimage/scipy defaults: separable, rows
 *     first then columns, mode 'nearest' at the image edges, truncate 4.0 so the radius is
 *     (int)(4 sigma + 0.5), kernel exp(-x^2 / (2 sigma^2)) normalised to sum 1, in double),
 *     only at the pixels the window reads, and the result is not rounded.
 *
 * Output layouts: pix is HWC [256][192][3] in pixel units (0..255, RGB order as given);
 *   chw is [3][256][192], (p - 255 mean) / (255 std), RGB mean (0.485, 0.456, 0.406), std
 *   (0.229, 0.224, 0.225), computed in double and stored as float.
 */
#ifndef PVM_HAMER_PRE_H
#define PVM_HAMER_PRE_H

#include "models/hamer/hamer.h"

/* A box side longer than this many times the image's longer side is refused (keeps the blur
 * kernel and every coordinate in range; a real hand box is at most the image). */
#define PVM_HAMER_BOX_MAX_RATIO 16.0

/* Crop geometry of box number `index` (used in messages only) on a W x H image.
 * Refused with PV_EINPUT, the message naming box[index] and the value: a non-finite number,
 * x2 <= x1 or y2 <= y1, a box that does not overlap the image (x2 <= 0, x1 >= W, y2 <= 0 or
 * y1 >= H), a side longer than PVM_HAMER_BOX_MAX_RATIO * max(W, H); W or H < 1 also PV_EINPUT.
 * A box partly outside the image is fine. box and msg are borrowed; g is written on success. */
pv_status pvm_hamer_crop_geometry(const pvm_hamer_box *box, int index, int W, int H,
                                  pvm_hamer_crop_geom *g, pvc_msg *msg);

/* The 256x192x3 network window of g from rgb (W x H x 3 uint8, row-major HWC, RGB), in pixel
 * units (see above), into pix (caller-owned, PVM_HAMER_H_IN * PVM_HAMER_W_IN * 3 floats).
 * W, H must equal g->W, g->H (else PV_EINPUT). Without blur nothing is allocated; with blur a
 * kernel and one row buffer (O(W) doubles) are allocated and freed (PV_ENOMEM on failure; pix
 * is then unspecified). Reentrant. */
pv_status pvm_hamer_crop(const uint8_t *rgb, int W, int H, const pvm_hamer_crop_geom *g,
                         float *pix, pvc_msg *msg);

/* HWC pixel-space [256][192][3] -> CHW ImageNet-normalised [3][256][192] (both caller-owned). */
void pvm_hamer_normalise(const float *pix, float *chw);

#endif
