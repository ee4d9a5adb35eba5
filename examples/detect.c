/* detect.c: run BEVFusion-L on one lidar file and print the objects (the README's C example).
 *   cc detect.c -Iinclude build/libperceive.a $(pkg-config ...) -o detect    (CMake builds it)
 *   ./detect cloud.pcd [pcd|kitti|nuscenes|npy|npz] */
#include "perceive.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: detect FILE [FORMAT]\n"); return 2; }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 1; }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *bytes = malloc(n > 0 ? (size_t)n : 1);
    if (!bytes || fread(bytes, 1, (size_t)n, f) != (size_t)n) { fclose(f); free(bytes); return 1; }
    fclose(f);

    pv_model *m = NULL;
    pv_model_options opt = { .threads = 2 };          /* weights: PERCEIVE_WEIGHTS_DIR, the HF cache, or generated */
    if (pv_model_open("bevfusion", &opt, &m) != PV_OK) {
        fprintf(stderr, "open: %s\n", pv_last_error());
        free(bytes);
        return 1;
    }
    pv_input in = { .name = "points", .format = argc > 2 ? argv[2] : "auto", .data = bytes, .len = (size_t)n };
    pv_param params[] = { { "score_threshold", "0.2" } };
    pv_result *r = NULL;
    int rc = 0;
    if (pv_model_run(m, &in, 1, params, 1, &r) != PV_OK) {
        fprintf(stderr, "run: %s\n", pv_model_errmsg(m));
        rc = 1;
    } else {
        const pv_object3d *o;
        int count = pv_result_objects3d(r, &o);
        pv_timing t;
        pv_result_timing(r, &t);
        printf("%d objects in %.1f ms\n", count, t.total);
        for (int i = 0; i < count; i++)
            printf("label %u score %.3f at (%.2f, %.2f, %.2f) size %.2f x %.2f x %.2f yaw %.3f\n", o[i].label,
                   o[i].existence_probability, o[i].position[0], o[i].position[1], o[i].position[2], o[i].dimensions[0],
                   o[i].dimensions[1], o[i].dimensions[2], o[i].yaw);
        pv_result_free(r);
    }
    pv_model_close(m);
    free(bytes);
    return rc;
}
