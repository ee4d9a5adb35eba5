/* Fuzz target: ml_package_bevfusion_lidar.param.yaml (pvm_bevfusion_params_parse_ml_package).
 * On success the values are those post.h documents: 1..8 printable, distinct class names,
 * 1 <= voxels min <= opt <= max, a non-empty range, 1 to 2^20 cells per axis. */
#include "fuzz.h"
#include "models/bevfusion/post.h"

#include <math.h>
#include <string.h>

#define FZ_PARSE pvm_bevfusion_params_parse_ml_package
#define FZ_FILE  "ml_package_bevfusion_lidar.param.yaml"
#include "yaml_params.h"

static void check_parsed(const pvm_bevfusion_params *p)
{
    FZ_CHECK(p->nclass >= 1 && p->nclass <= PVM_BF_MAX_CLASSES, "ml_package: nclass %d", p->nclass);
    for (int c = 0; c < PVM_BF_MAX_CLASSES; c++) {
        size_t k = strnlen(p->class_names[c], sizeof p->class_names[c]);
        FZ_CHECK(k < sizeof p->class_names[c], "ml_package: class name %d not NUL-terminated", c);
        FZ_CHECK(c < p->nclass ? k > 0 : k == 0, "ml_package: class name %d has %zu characters", c, k);
        for (int d = 0; d < c && c < p->nclass; d++)
            FZ_CHECK(strcmp(p->class_names[c], p->class_names[d]) != 0, "ml_package: duplicate class name");
    }
    FZ_CHECK(1 <= p->voxels_num[0] && p->voxels_num[0] <= p->voxels_num[1] &&
             p->voxels_num[1] <= p->voxels_num[2] && p->voxels_num[2] <= INT32_MAX,
             "ml_package: voxels_num %lld %lld %lld", (long long)p->voxels_num[0],
             (long long)p->voxels_num[1], (long long)p->voxels_num[2]);
    for (int i = 0; i < 3; i++) {
        FZ_CHECK(p->pc_range[i] < p->pc_range[i + 3], "ml_package: range axis %d empty", i);
        float cells = (p->pc_range[i + 3] - p->pc_range[i]) / p->voxel_size[i];
        FZ_CHECK(p->voxel_size[i] > 0 && cells >= 1.0f && cells <= 1048576.0f,
                 "ml_package: axis %d voxel %g gives %g cells", i, (double)p->voxel_size[i], (double)cells);
    }
    FZ_CHECK(p->num_proposals >= 1 && p->num_proposals <= 100000, "ml_package: num_proposals %d", p->num_proposals);
    FZ_CHECK(p->out_size_factor >= 1 && p->out_size_factor <= 1024, "ml_package: out_size_factor %d",
             p->out_size_factor);
    FZ_CHECK(p->max_points_per_voxel >= 1 && p->max_points_per_voxel <= 1024,
             "ml_package: max_points_per_voxel %d", p->max_points_per_voxel);
}
