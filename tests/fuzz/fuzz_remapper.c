/* Fuzz target: detection_class_remapper.param.yaml (pvm_bevfusion_params_parse_remapper).
 * On success every allow entry is 0 or 1, areas are finite and >= 0, min <= max where allowed,
 * and the remapper returns a label in range for any box. */
#include "fuzz.h"
#include "models/bevfusion/post.h"

#include <math.h>

#define FZ_PARSE pvm_bevfusion_params_parse_remapper
#define FZ_FILE  "detection_class_remapper.param.yaml"
#include "yaml_params.h"

static void check_parsed(const pvm_bevfusion_params *p)
{
    for (int r = 0; r < PVM_BF_NLABELS; r++)
        for (int c = 0; c < PVM_BF_NLABELS; c++) {
            int a = p->remap_allow[r][c];
            float mn = p->remap_min[r][c], mx = p->remap_max[r][c];
            FZ_CHECK(a == 0 || a == 1, "remapper: allow[%d][%d] = %d", r, c, a);
            FZ_CHECK(mn >= 0 && mx >= 0 && !isnan(mn) && !isnan(mx), "remapper: [%d][%d] area %g..%g", r, c,
                     (double)mn, (double)mx);
            FZ_CHECK(!a || mn <= mx, "remapper: allowed [%d][%d] has min %g > max %g", r, c, (double)mn,
                     (double)mx);
        }
    static const float sizes[][2] = { { 0, 0 }, { 1, 1 }, { 4.5f, 1.9f }, { 12, 2.5f }, { 1e30f, 1e30f } };
    for (int l = 0; l < PVM_BF_NLABELS + 2; l++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            uint8_t out = pvm_bevfusion_remap_label(p, (uint8_t)l, sizes[k][0], sizes[k][1]);
            FZ_CHECK(l >= PVM_BF_NLABELS ? out == l : out < PVM_BF_NLABELS, "remapper: label %d -> %u", l, out);
        }
}
