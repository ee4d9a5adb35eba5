/* meteor: the picture of one decoded frame — the bird's-eye view (lanes, occupancy, risk, 3D
 * boxes with their futures, unknown obstacles, the ego car and its path, the traffic light)
 * beside the eight camera thumbnails with their 2D boxes, a legend below, a title band above.
 * Prefix pvm_meteor_render / pvm_meteor_render_. Spec: ../shared/specs/meteor.md 1.5 and 4.
 *
 * Example (what `perceive run meteor MANIFEST --png out.png` does after the decode):
 *
 *     const uint8_t *imgs[PVM_METEOR_NCAM] = { front_wide, front_left, NULL, ... };  // 768x432 RGB
 *     uint8_t *rgb; int w, h; pvc_msg msg;
 *     if (pvm_meteor_render(&out, imgs, 0, generated, &rgb, &w, &h, &msg) != PV_OK) puts(msg.text);
 *     else { pvio_png_encode_rgb(rgb, w, h, NULL, &png, &len, &msg); pvc_free(rgb); }
 *
 * Layout (pvm_meteor_render_layout; every length is the base layout's times f = width /
 * PVM_METEOR_RENDER_DEFAULT_WIDTH, rounded):
 *   - a title band of PVIO_BEV_BAND_ROWS(text_scale) rows: "METEOR", "GENERATED WEIGHTS - NOT A
 *     TRAINED MODEL" when generated, and the counts of 3D boxes, 2D boxes and unknown obstacles;
 *   - the BEV panel (base 500 x 800: one pixel per lane cell), left, below the band;
 *   - the eight camera tiles (base 320 x 180) right of it, two per row, in the spec's slot order
 *     (pvm_meteor_cam_names: row 0 CAM_FRONT_WIDE, CAM_FRONT_LEFT; row 1 CAM_FRONT_RIGHT,
 *     CAM_BACK_WIDE; row 2 CAM_BACK_LEFT, CAM_BACK_RIGHT; row 3 CAM_FRONT_NARROW,
 *     CAM_BACK_NARROW), each labelled with its name;
 *   - the legend band below both, as wide as the picture.
 *
 * BEV panel (spec 1.5 grid: forward up, left on the left): world (x, y) in the ego frame lies at
 * panel column (50 - y) * bev_w / 100 and row (80 - x) * bev_h / 160 (continuous; pixel (c, r)
 * covers [c, c+1) x [r, r+1)); lane cell (r, c) covers rows [r bev_h / 800, (r+1) bev_h / 800).
 * Layers, later ones over earlier ones:
 *   1. lanes: each pixel in the colour of its lane cell's class (pvm_meteor_render_lane_rgb;
 *      a class >= 9 in the invalid ink); lanes NULL: class 0 everywhere;
 *   2. occupancy (perceive's reading: occ[z][r][c], r from x = +40 m down, c from y = +40 m down,
 *      0.4 m; the same orientation as the lane grid, i.e. lane rows 200:600, cols 50:450): the
 *      class of the highest non-free voxel of each column, blended at PVM_METEOR_RENDER_OCC_ALPHA
 *      in pvm_meteor_render_occ_rgb; classes >= 10 count as free;
 *   3. risk over lane rows 200:600, cols 125:375: red blended at alpha 0.55 * risk (risk clamped
 *      to [0, 1], NaN as 0);
 *   4. the ego path: the ribbon as a wide pale-green polyline from the origin, then the chosen
 *      mode's waypoints as a thin bright line with a dot on each;
 *   5. vehicle futures (future_mode >= 0): a polyline from the box centre through the 6
 *      waypoints in the future ink;
 *   6. 3D boxes: rotated rectangle outline in the class colour (pvm_meteor_render_box3d_rgb),
 *      a heading tick from the centre to the middle of the front edge along the smoothed yaw;
 *      stationary boxes also get their interior filled (blended at 0.5 in the class colour)
 *      and no future;
 *   7. unknown obstacles: an X marker in the 2D class-0 ink;
 *   8. the ego car: a white 4.6 x 1.9 m rectangle at the origin (red when brake is on);
 *   9. text on dark plates: the traffic light (a disc in its state's colour and
 *      "TL RED 0.93", the state's probability) top left; bottom left "EGO MODE m  STEER s  ACCEL a"
 *      (rad, m/s^2) and "BRAKE OFF p" or, in red, "BRAKE ON p" (p = brake_prob).
 * Everything drawn is clipped to the panel. Positions that are not finite are skipped.
 *
 * Camera tiles: the 768x432 image scaled to the tile by area averaging (pvio_draw_scale_area);
 * an absent camera (imgs NULL or imgs[i] NULL) is a flat PVM_METEOR_RENDER_ABSENT_RGB tile with
 * "NO IMAGE". 2D box (cx, cy, w, h) of camera i is drawn as the outline of the rectangle
 * [cx - w/2, cx + w/2] x [cy - h/2, cy + h/2] times tile_w / 768 (columns) and tile_h / 432
 * (rows), in pvm_meteor_render_box2d_rgb(cls); class 0 (unknown obstacles) twice as thick.
 * The camera name is written at the tile's top left on a dark plate last.
 *
 * Cost: the picture (3 bytes a pixel), 40,000 bytes for the occupancy projection and 3 * tile_w
 * doubles of scaling scratch, all through pvc_malloc; 25-35 ms at the default width on one
 * core of the 2-core build machine (the thumbnails' scaling is most of it). Thread-safe (no shared state).
 *
 * Ownership: o and imgs are borrowed for the call; *rgb is allocated with pvc_malloc (release
 * with pvc_free) and holds *w x *h RGB pixels, rows top to bottom. On failure *rgb = NULL,
 * *w = *h = 0. Errors: PV_EINPUT names the argument and value (width_px, o->n3d,
 * o->boxes3d[i].cls, o->boxes2d[i].cam, o->tl_state, a NULL pointer); PV_ENOMEM when an
 * allocation fails. Nothing leaks on any path.
 */
#ifndef PVM_METEOR_RENDER_H
#define PVM_METEOR_RENDER_H

#include "core/core.h"
#include "models/meteor/decode.h"

#define PVM_METEOR_RENDER_DEFAULT_WIDTH 1164
#define PVM_METEOR_RENDER_MIN_WIDTH     600
#define PVM_METEOR_RENDER_MAX_WIDTH     2560    /* tiles stay at most 768 wide (no upscaling) */
#define PVM_METEOR_RENDER_MAX_ITEMS     100000  /* n3d, n2d, nunk at most */
#define PVM_METEOR_RENDER_OCC_ALPHA     0.5
#define PVM_METEOR_RENDER_RISK_ALPHA    0.55    /* alpha = this * risk (spec 4.6) */


/* A rectangle of the picture: [x, x + w) x [y, y + h). */
typedef struct pvm_meteor_render_rect { int x, y, w, h; } pvm_meteor_render_rect;

typedef struct pvm_meteor_render_layout {
    int width, height;                          /* whole picture */
    int band;                                   /* title band rows */
    int text_scale, line_px;                    /* font magnification, box outline width */
    pvm_meteor_render_rect bev;                 /* the BEV panel */
    pvm_meteor_render_rect cam[PVM_METEOR_NCAM];/* the tiles, slot order */
    pvm_meteor_render_rect legend;              /* the legend band */
} pvm_meteor_render_layout;

/* Validates width_px (0: PVM_METEOR_RENDER_DEFAULT_WIDTH; else MIN..MAX) and fills *l. */
pv_status pvm_meteor_render_layout_make(int width_px, pvm_meteor_render_layout *l, pvc_msg *msg);

/* Renders o and the camera images (imgs may be NULL: every camera absent) into a fresh RGB
 * picture; see above. All of o is validated before anything is drawn. */
pv_status pvm_meteor_render(const pvm_meteor_out *o, const uint8_t *const imgs[PVM_METEOR_NCAM],
                            int width_px, bool generated, uint8_t **rgb, int *w, int *h,
                            pvc_msg *msg);

/* The inks; false (rgb untouched) for a class outside the range. */
bool pvm_meteor_render_lane_rgb(int cls, uint8_t rgb[3]);   /* 0..8 lane classes */
bool pvm_meteor_render_occ_rgb(int cls, uint8_t rgb[3]);    /* 1..9 occupancy classes */
bool pvm_meteor_render_box3d_rgb(int cls, uint8_t rgb[3]);  /* 0 vehicle, 1 VRU */
bool pvm_meteor_render_box2d_rgb(int cls, uint8_t rgb[3]);  /* 0..9 2D classes */
bool pvm_meteor_render_tl_rgb(int state, uint8_t rgb[3]);   /* 0 none, 1 green, 2 yellow, 3 red */
extern const uint8_t PVM_METEOR_RENDER_ABSENT_RGB[3];

#endif
