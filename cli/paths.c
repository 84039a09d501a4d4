#include "paths.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../io/mosaic.h"

const char *er_path_base(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* An earlier output's height layer ("dem.height.tif") is named after its
 * own input ("dem"), so eroding it again writes "dem.height.tif" rather
 * than "dem.height.height.tif"; in the input's own directory that name is
 * the input, which the write-target check refuses (targets.c). */
#define HEIGHT_SUFFIX ".height"

int er_path_stem_len(const char *base)
{
    const char *dot = strrchr(base, '.');
    size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    const size_t sl = strlen(HEIGHT_SUFFIX);
    if (len > sl && memcmp(base + len - sl, HEIGHT_SUFFIX, sl) == 0)
        len -= sl;
    return (int)len;
}

const char *er_path_ext(const er_settings *s, er_file_format in)
{
    er_out_format f = s->format;
    if (f == ER_OUT_AS_INPUT)
        f = in == ER_FORMAT_PNG ? ER_OUT_PNG : ER_OUT_TIFF;
    static const char *const ext[] = {"tif", "png", "exr", "r16", "r32"};
    return ext[f];
}

er_file_format er_path_input_format(const char *path)
{
    er_file_format f;
    if (er_image_sniff(path, &f))
        return f;
    const char *dot = strrchr(er_path_base(path), '.');
    return dot && strcasecmp(dot, ".png") == 0 ? ER_FORMAT_PNG : ER_FORMAT_TIFF;
}

const char *er_path_name(const er_settings *s, const char *input)
{
    int k = s->tiles && !s->stitch ? er_tile_set_find(s->tiles, input) : -1;
    return k >= 0 ? s->tiles->paths[k] : input;
}

static int fits(int written, size_t n)
{
    return written >= 0 && (size_t)written < n;
}

int er_path_output(char *buf, size_t n, const er_settings *s, const char *input,
                   const char *layer, const char *ext)
{
    const char *base = er_path_base(input);
    return fits(snprintf(buf, n, "%s/%.*s.%s%s.%s", s->output_dir, er_path_stem_len(base), base,
                         layer, s->tiles && !s->stitch ? ".halo" : "", ext), n);
}

int er_path_pattern(char *buf, size_t n, const char *pattern, const char *input)
{
    const char *base = er_path_base(input);
    const char *tok = strstr(pattern, "{stem}");
    if (!tok)
        return fits(snprintf(buf, n, "%s", pattern), n);
    return fits(snprintf(buf, n, "%.*s%.*s%s", (int)(tok - pattern), pattern,
                         er_path_stem_len(base), base, tok + 6), n);
}

int er_path_frame(char *buf, size_t n, const char *frames_dir, const char *input, long long k)
{
    const char *base = er_path_base(input);
    return fits(snprintf(buf, n, "%s/%.*s.frame-%06lld.png", frames_dir, er_path_stem_len(base),
                         base, k), n);
}

int er_path_stitched(char *buf, size_t n, const char *dir, const char *tile, const char *layer,
                     const char *suffix)
{
    const char *base = er_path_base(tile);
    return fits(snprintf(buf, n, "%s/%.*s.%s%s.tif", dir, er_path_stem_len(base), base, layer,
                         suffix), n);
}

int er_path_layer_metadata(const char *md, unsigned bit, char **out)
{
    *out = NULL;
    char *own = er_gdal_metadata_description(md);
    if (own && bit == ER_LAYER_HEIGHT) {
        free(own);
        return 1;
    }
    free(own);
    *out = er_gdal_metadata_with_description(md, er_layer_name(bit));
    return *out != NULL;
}
