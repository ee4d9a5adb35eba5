/* serve/viewer: the files of the viewer page (GET /), embedded at build time by CMake
 * (cmake/embed.cmake over web/ and, when tools/deps.sh installed it, three.js from
 * web/node_modules; PV_HAVE_THREE says which). Served as they are, never copied. */
#include "serve/serve.h"

#include <string.h>

#define WEB_FILE(sym) extern const unsigned char sym[]; extern const size_t sym##_len;
WEB_FILE(pvsv_web_index)
WEB_FILE(pvsv_web_js)
WEB_FILE(pvsv_web_css)
WEB_FILE(pvsv_web_meteor)
#ifdef PV_HAVE_THREE
WEB_FILE(pvsv_web_three)
WEB_FILE(pvsv_web_three_core)
WEB_FILE(pvsv_web_orbit)
#endif

static const pvsv_asset assets[] = {
    { "/", "text/html; charset=utf-8", pvsv_web_index, &pvsv_web_index_len },
    { "/viewer/viewer.js", "text/javascript; charset=utf-8", pvsv_web_js, &pvsv_web_js_len },
    { "/viewer/viewer.css", "text/css; charset=utf-8", pvsv_web_css, &pvsv_web_css_len },
    { "/viewer/meteor.js", "text/javascript; charset=utf-8", pvsv_web_meteor, &pvsv_web_meteor_len },
#ifdef PV_HAVE_THREE
    /* three.module.min.js imports "./three.core.min.js"; OrbitControls.js imports "three",
     * which the page's import map points at /viewer/three.module.min.js */
    { "/viewer/three.module.min.js", "text/javascript; charset=utf-8", pvsv_web_three, &pvsv_web_three_len },
    { "/viewer/three.core.min.js", "text/javascript; charset=utf-8", pvsv_web_three_core, &pvsv_web_three_core_len },
    { "/viewer/OrbitControls.js", "text/javascript; charset=utf-8", pvsv_web_orbit, &pvsv_web_orbit_len },
#endif
};

const pvsv_asset *pvsv_asset_find(const char *url)
{
    if (!strcmp(url, "/index.html")) url = "/";
    for (size_t i = 0; i < sizeof assets / sizeof assets[0]; i++)
        if (!strcmp(url, assets[i].path)) return &assets[i];
    return NULL;
}

bool pvsv_viewer_has_3d(void)
{
#ifdef PV_HAVE_THREE
    return true;
#else
    return false;
#endif
}
