/*
 * Shaded-relief previews: a heightmap and its layers as an RGB8 picture, the
 * way Mei et al. (2007, §5) show their results: terrain lit from one
 * direction, water blue, suspended sediment green, deposits red.  Pure
 * computation on caller-owned buffers; cli/ writes the bytes out with
 * er_png_write_rgb (io/image.h).
 *
 * Deterministic: the same input gives the same bytes on any machine and for
 * any thread count (only + - * / sqrt min max per pixel, integer histograms
 * for the scales, every output pixel computed independently).
 *
 * Picture: row-major, top row first (north up for a north-up raster), three
 * bytes R, G, B per pixel, no padding.
 */
#ifndef ER_PREVIEW_H
#define ER_PREVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Largest output side er_preview_style_default() asks for: a 16384^2 map
 * becomes a 2048^2 picture (box filter 8x8). */
#define ER_PREVIEW_MAX_SIDE_DEFAULT 2048

/* How the picture looks.  Start from er_preview_style_default(). */
typedef struct er_preview_style {
    double exaggeration;    /* vertical exaggeration of the hillshade; 0 = auto:
                             * max(1, 0.1 * extent / relief), at most 1000, so
                             * a map of 0..1 heights on 1 m cells still shows
                             * its relief */
    int max_side;           /* largest output width and height [px] of one
                             * picture (each half of a pair); larger maps are
                             * shrunk by an integer factor k = ceil(side /
                             * max_side) with a k x k box filter; 0 = no limit */
    int gap;                /* [px] space between the halves of a pair */
    int show_erosion;       /* 1: tint eroded cells dark orange (off by default) */
    uint8_t wall_rgb[3];    /* colour of nodata cells (walls), unshaded */
    uint8_t gap_rgb[3];     /* colour of the gap of a pair */
} er_preview_style;

/* One map to draw.  Every array holds width * height values, row-major; the
 * arrays are only read.  Layers in metres (of water or material per cell);
 * values <= 0 or non-finite draw nothing. */
typedef struct er_preview_in {
    int width, height;
    const float *elevation; /* [m] terrain height (required) */
    const uint8_t *wall;    /* 1 = nodata cell; NULL = none */
    double cell_x, cell_y;  /* [m] cell size along a row / between rows (> 0) */
    const float *water;     /* [m] water depth, blue; NULL = none */
    const float *sediment;  /* [m] suspended sediment, green; NULL = none */
    const float *deposit;   /* [m] max(0, b - b0), red; NULL = none */
    const float *erosion;   /* [m] max(0, b0 - b), orange if style.show_erosion */
    const er_preview_style *style; /* NULL = er_preview_style_default() */
} er_preview_in;

/* The colour scales of one picture (or of both halves of a pair, or of every
 * frame of an animation when the caller keeps one).  Plain values: a caller
 * may compute them once and edit them (e.g. fix water_max in metres so
 * frames do not flicker). */
typedef struct er_preview_scale {
    double height_min, height_max; /* [m] range of the hypsometric tint (valid cells) */
    double exaggeration;           /* resolved vertical exaggeration (>= 1 when auto) */
    double water_max;              /* [m] amount drawn at full opacity; 0 = none */
    double sediment_max;
    double deposit_max;
    double erosion_max;            /* 0 unless the style shows erosion */
} er_preview_scale;

/* The default style: auto exaggeration, max_side 2048, gap 8 px, no erosion
 * tint, dark grey walls, white gap.  Thread-safe. */
er_preview_style er_preview_style_default(void);

/*
 * Output size [px] of er_preview_render for `in` (after the box filter), or
 * of er_preview_render_pair when `pair` is non-zero (2 * w + gap by h).
 * Returns ER_EINVAL (with err set) for a bad size or style.  The caller
 * allocates *out_w * *out_h * 3 bytes.  Thread-safe.
 */
er_status er_preview_size(const er_preview_in *in, int pair, int *out_w, int *out_h, er_error *err);

/*
 * Scales shared by `n` maps of the same size (n >= 1): the height range of
 * their valid finite cells, the exaggeration (in[0]'s style; auto from the
 * combined relief and in[0]'s extent), and for each layer its robust
 * maximum: the 99th percentile of the positive finite values of all maps
 * together, from a histogram of their float bit patterns (16384 bins, 1.6 %
 * wide; the bin's upper edge, at most the largest value), so it does not
 * depend on the thread count.  Returns ER_EINVAL for bad input.
 * Thread-safe; parallel inside (OpenMP).
 */
er_status er_preview_scale_compute(const er_preview_in *const *in, int n, er_preview_scale *scale, er_error *err);

/*
 * Draws `in` with the given scales into rgb (caller-owned, the size from
 * er_preview_size with pair = 0).  Hillshade (Horn's 3x3 slope, edges and
 * walls clamped to the centre cell, real cell size times the exaggeration,
 * light from the north-west 45 degrees above the horizon) modulates a
 * hypsometric tint over [height_min, height_max] (heights outside clamp);
 * the layers are blended on top, opacity growing as sqrt(min(1, v / max)):
 * deposits red, erosion orange (if on), water blue, suspended sediment
 * green.  Walls and non-finite heights get style.wall_rgb.
 * Returns ER_OK or ER_EINVAL (bad size, cell size or scale).
 * Thread-safe for distinct rgb buffers; parallel inside (OpenMP).
 */
er_status er_preview_render_scaled(const er_preview_in *in, const er_preview_scale *scale, uint8_t *rgb,
                                   er_error *err);

/*
 * er_preview_scale_compute on `in` alone, then er_preview_render_scaled.
 * Same returns (and ER_ENOMEM for the histograms).
 */
er_status er_preview_render(const er_preview_in *in, uint8_t *rgb, er_error *err);

/*
 * Before | gap | after, each half drawn with the same scales (computed from
 * both maps together) and after's style, so colours compare across the
 * halves.  Both maps must have the same width and height.  rgb is
 * caller-owned, the size from er_preview_size(after, 1, ...).  The left
 * half equals er_preview_render_scaled(before) with those scales and that
 * style.  Returns as er_preview_render.
 */
er_status er_preview_render_pair(const er_preview_in *before, const er_preview_in *after, uint8_t *rgb,
                                 er_error *err);

#endif
