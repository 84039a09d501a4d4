/*
 * GeoTIFF creation options in GDAL's style (io/image.h er_tiff_create).
 *
 * Defaults: DEFLATE with the floating-point predictor, level 1, 256-cell
 * tiles.  DEFLATE because every GeoTIFF reader decodes it (ZSTD needs
 * GDAL >= 2.3 and a libtiff built with it); predictor 3 because it turns
 * smooth float terrain into runs of small byte differences.  Level 1
 * because on a 1-step Mei run's three layers (scripts/bench io,
 * erode-models(7) BENCHMARKS) libdeflate's level 1 writes about 5 % more
 * bytes than level 6 in clearly less time: the noise in the sediment and
 * water layers does not compress at any level, --precision is what
 * shrinks it.  ZSTD's default is 1 for the same reason.
 */
#include "text.h"
#include "tiff_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

er_tiff_create er_tiff_create_defaults(void)
{
    return (er_tiff_create){ER_COMPRESS_DEFLATE, 0, 3, 256, 0, 0.0};
}

static int parse_compress(const char *v, er_compress *out)
{
    static const char *const names[] = {"DEFLATE", "ZSTD", "LZW", "NONE"};
    for (int i = 0; i < 4; i++)
        if (strcasecmp(v, names[i]) == 0) {
            *out = (er_compress)i;
            return 1;
        }
    return 0;
}

static int parse_yes_no(const char *v, int *out)
{
    if (strcasecmp(v, "YES") == 0 || strcasecmp(v, "ON") == 0 || strcasecmp(v, "TRUE") == 0)
        *out = 1;
    else if (strcasecmp(v, "NO") == 0 || strcasecmp(v, "OFF") == 0 || strcasecmp(v, "FALSE") == 0)
        *out = 0;
    else
        return 0;
    return 1;
}

int er_tiff_create_set(er_tiff_create *co, const char *key_value, const char **why)
{
    const char *eq = strchr(key_value, '=');
    size_t klen = eq ? (size_t)(eq - key_value) : 0;
    const char *v = eq ? eq + 1 : "";
#define KEY(name) (klen == sizeof name - 1 && strncasecmp(key_value, name, klen) == 0)
    if (!eq) {
        *why = "expected KEY=VALUE";
        return 0;
    }
    if (KEY("COMPRESS")) {
        *why = "expected COMPRESS=DEFLATE, ZSTD, LZW or NONE";
        return parse_compress(v, &co->compress);
    }
    if (KEY("LEVEL")) {
        *why = "expected LEVEL=1..12 (DEFLATE) or 1..22 (ZSTD)";
        return er_parse_int(v, 1, 22, &co->level);
    }
    if (KEY("PREDICTOR")) {
        *why = "expected PREDICTOR=1 (none), 2 (horizontal) or 3 (floating point)";
        return er_parse_int(v, 1, 3, &co->predictor);
    }
    if (KEY("BLOCKSIZE")) {
        *why = "expected BLOCKSIZE=a multiple of 16 from 16 to 4096";
        return er_parse_int(v, 16, 4096, &co->blocksize) && co->blocksize % 16 == 0;
    }
    if (KEY("COG")) {
        *why = "expected COG=YES or NO";
        return parse_yes_no(v, &co->cog);
    }
#undef KEY
    *why = "unknown creation option (COMPRESS, LEVEL, PREDICTOR, BLOCKSIZE, COG)";
    return 0;
}

int er_tiff_create_check(const er_tiff_create *co, const char **why)
{
    int max_level = co->compress == ER_COMPRESS_DEFLATE ? 12 : co->compress == ER_COMPRESS_ZSTD ? 22 : 0;
    if (co->level && !max_level) {
        *why = "LEVEL needs COMPRESS=DEFLATE or ZSTD";
        return 0;
    }
    if (co->level > max_level || co->level < 0) {
        *why = "LEVEL is 1..12 for DEFLATE";
        return 0;
    }
    if (co->predictor < 1 || co->predictor > 3 || co->blocksize < 16 || co->blocksize > 4096
        || co->blocksize % 16 || (unsigned)co->compress > ER_COMPRESS_NONE || !(co->precision >= 0)) {
        *why = "invalid creation options";
        return 0;
    }
    return 1;
}
