/*
 * Heightmap images as read from and written to files.  io/ converts files to
 * these structs and back and knows nothing of the models.
 *
 * Values are the file's own, converted to float: a GeoTIFF's samples with
 * GDAL's band scale and offset applied (GDAL_METADATA's SCALE and OFFSET
 * items), as GDAL reads them unscaled; the caller applies
 * terrain.vertical_scale/offset after that.  A PNG written by erode reads
 * back to the heights it was written from, within one 16-bit step; one with
 * a GDAL scale or offset in its .aux.xml as sample * scale + offset; any
 * other as 0..1 (value / 255 or / 65535).
 */
#ifndef ER_IMAGE_H
#define ER_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "../core/error.h"

/* GeoTIFF and GDAL tags, kept byte for byte from the input and written
 * unchanged into every GeoTIFF output (erode(1) FILES).  Each array is owned
 * by the struct (NULL / 0 when the tag is absent). */
typedef struct er_georef {
    double *pixel_scale;     size_t n_pixel_scale;    /* ModelPixelScaleTag 33550 */
    double *tiepoints;       size_t n_tiepoints;      /* ModelTiepointTag 33922 */
    double *transformation;  size_t n_transformation; /* ModelTransformationTag 34264 */
    uint16_t *geokeys;       size_t n_geokeys;        /* GeoKeyDirectoryTag 34735 */
    double *geodoubles;      size_t n_geodoubles;     /* GeoDoubleParamsTag 34736 */
    char *geoascii;                                   /* GeoAsciiParamsTag 34737 */
    char *gdal_nodata;                                /* GDAL_NODATA 42113 */
    char *gdal_metadata;                              /* GDAL_METADATA 42112 */
} er_georef;

typedef enum er_file_format { ER_FORMAT_TIFF = 0, ER_FORMAT_PNG = 1 } er_file_format;

typedef struct er_image {
    int width, height;
    float *data;            /* width * height values in file units, row-major */
    uint8_t *nodata;        /* 1 = nodata cell; NULL when the file has none */
    int has_nodata_value;   /* a nodata value is declared (GDAL_NODATA) */
    double nodata_value;    /* the declared value (may be NaN) */
    er_georef georef;       /* PNG: from its .aux.xml or world file, else empty */
    er_file_format format;
    int png_alpha;          /* PNG had an alpha channel */
    char *description;      /* TIFF ImageDescription (erode's provenance in
                             * its outputs); NULL when absent or for PNG */
} er_image;

/* Limits a reader checks before any large allocation. */
typedef struct er_read_opts {
    int band;               /* 1-based band to read; 0 = the file must have one */
    size_t max_bytes;       /* largest allowed float copy of the image (0 = no limit) */
    int png_codes;          /* 1: a PNG without erode's height mapping reads as its
                             * sample values (0..2^depth - 1), not 0..1: a control
                             * raster is never rescaled (erode-recipe(5)) */
} er_read_opts;

/* Progress of one read or write of a large map: fn(user, fraction) with the
 * fraction of the file's blocks (tiles, strips or rows) done so far, 0..1
 * and non-decreasing.  Called on the thread that called the reader or
 * writer, between its parallel regions and never from a worker, so fn may
 * print; once per block or batch of blocks, so fn throttles what it draws.
 * io/ itself prints nothing (CONTRIBUTING.md "Architecture").  NULL or a
 * NULL fn: no calls. */
typedef struct er_io_progress {
    void (*fn)(void *user, double fraction);
    void *user;
} er_io_progress;

static inline void er_io_progress_report(const er_io_progress *pg, double done, double total)
{
    if (pg && pg->fn && total > 0)
        pg->fn(pg->user, done / total);
}

/* Frees everything an image owns; accepts NULL and zeroed structs. */
void er_image_free(er_image *img);
void er_georef_free(er_georef *g);
/* Deep copy; returns ER_ENOMEM on failure (dst is then empty). */
er_status er_georef_copy(er_georef *dst, const er_georef *src, er_error *err);

/* The format of the file at `path` as its first bytes say (PNG or TIFF
 * signature), whatever its name says: 1 and *fmt, or 0 when the file
 * cannot be read, is not a regular file (a FIFO is never opened for
 * reading: nothing blocks) or has neither signature (*fmt untouched). */
int er_image_sniff(const char *path, er_file_format *fmt);

/* Reads a GeoTIFF or PNG, chosen by the file's first bytes (not its name).
 * On failure *img is empty and err names the file and the reason. */
er_status er_image_read(const char *path, const er_read_opts *opts, er_image *img, er_error *err);
er_status er_tiff_read(const char *path, const er_read_opts *opts, er_image *img, er_error *err);
er_status er_png_read(const char *path, const er_read_opts *opts, er_image *img, er_error *err);
/* The same, reporting progress through pg (may be NULL). */
er_status er_image_read_progress(const char *path, const er_read_opts *opts, const er_io_progress *pg,
                                 er_image *img, er_error *err);
er_status er_tiff_read_progress(const char *path, const er_read_opts *opts, const er_io_progress *pg,
                                er_image *img, er_error *err);
er_status er_png_read_progress(const char *path, const er_read_opts *opts, const er_io_progress *pg,
                               er_image *img, er_error *err);
/* The same checks as er_tiff_read but stops before the pixels: fills
 * width, height, georef and the nodata value; data and nodata stay NULL. */
er_status er_tiff_read_info(const char *path, const er_read_opts *opts, er_image *img,
                            er_error *err);

/* Cell size from the georeferencing.  Returns 1 and sets *dx, *dy [m] when
 * the tags give one: a projected CRS converted from its linear unit to
 * metres, a geographic CRS in degrees converted to metres at the raster's
 * centre latitude (WGS 84 ellipsoid) and rounded to a micrometre so every
 * machine agrees.  Returns 0 when there is no georeferencing or it is
 * unusable (er_georef_cell_size_why says which, and why). */
int er_georef_cell_size(const er_georef *g, int width, int height, double *dx, double *dy);

/* The same, telling "no georeferencing" from "georeferencing that gives no
 * usable cell size".  width, height: the raster's size in cells (a
 * geographic CRS is converted at its centre).  Returns
 *    1  *dx, *dy [m] set as er_georef_cell_size does; *why = NULL;
 *    0  no georeferencing: g is NULL or has neither ModelPixelScale,
 *       ModelTiepoint nor ModelTransformation (GeoKeys alone place
 *       nothing); the caller uses terrain.cell_size or 1 m; *why = NULL;
 *   -1  georeferencing present but unusable; *why is a static, lowercase,
 *       one-line reason without the file name, e.g. "unknown linear unit
 *       (ProjLinearUnitsGeoKey)": a linear unit other than metre, foot, US
 *       survey foot or another EPSG length unit with a known factor (or a
 *       user-defined one with a positive ProjLinearUnitSizeGeoKey); an
 *       unknown or sexagesimal angular unit; a pixel size that is zero,
 *       not finite or under a micrometre in metres; tie points without a
 *       scale or transformation (ground control points); a geographic
 *       raster with no tie point, a centre latitude off the globe or within
 *       0.5 degree of a pole; a geocentric model; a truncated tag.
 * *dx and *dy are untouched unless 1; why may be NULL.  Thread-safe, pure. */
int er_georef_cell_size_why(const er_georef *g, int width, int height, double *dx, double *dy, const char **why);

/* Removes the input's STATISTICS_* items from GDAL_METADATA (they would be
 * wrong for an eroded layer); drops the tag when nothing else is left. */
void er_georef_drop_statistics(er_georef *g);

/* Takes band `band`'s (1-based; 0 counts as 1) scale and offset out of
 * GDAL_METADATA, the <Item name="SCALE" sample="band - 1" role="scale">
 * and OFFSET items with which GDAL says a band's values mean value *
 * scale + offset: *scale and *offset (1 and 0 when absent) are set, the
 * items removed (the tag too when nothing else is left), since the reader
 * hands on the values it has applied them to.  Returns 0, g unchanged
 * but for the items already taken, when an item is not one finite number
 * (a scale of 0 is one: GDAL reads every cell as the offset). */
int er_georef_take_scale(er_georef *g, int band, double *scale, double *offset);

/* The band description GDAL reads from a GDAL_METADATA tag (md): the text
 * of its <Item name="DESCRIPTION" sample="0" role="description">, with the
 * XML references decoded.  A new string the caller frees; NULL when md is
 * NULL or has no such item (or a malformed one), or out of memory. */
char *er_gdal_metadata_description(const char *md);

/* md (may be NULL) with band 1's description set to desc: the text of its
 * DESCRIPTION item replaced, or the item added before </GDALMetadata>
 * (GDAL's layout, two spaces in), or a new <GDALMetadata> holding only it
 * when md is NULL.  Every other byte of md is kept; an md that is not a
 * <GDALMetadata> element comes back unchanged.  A new string the caller
 * frees; NULL when out of memory. */
char *er_gdal_metadata_with_description(const char *md, const char *desc);

/* Whether a and b state one coordinate reference system: 1 yes, 0 no, -1
 * cannot tell (one has no GeoKeys).  Both with EPSG codes: the
 * horizontal codes decide (er_georef_epsg); otherwise every key but the citations and the raster type must
 * have the same value in both. */
int er_georef_same_crs(const er_georef *a, const er_georef *b);

/* Pixel (column, row) of a map coordinate; returns 0 without georeferencing
 * or with a rotated transformation. */
int er_georef_map_to_pixel(const er_georef *g, double mx, double my, double *px, double *py);

/* The raster -> model affine map of the georeferencing, GDAL's geotransform
 * convention: model x = m[0] + col * m[1] + row * m[2], model y = m[3] +
 * col * m[4] + row * m[5] at the cell corner (col, row) (PixelIsPoint
 * rasters are shifted half a cell so corners are corners).  Returns 0
 * without an affine map. */
int er_georef_affine(const er_georef *g, double m[6]);

/* 1 when the raster's points are cell centres (GTRasterTypeGeoKey
 * PixelIsPoint, GDAL's AREA_OR_POINT=Point), else 0. */
int er_georef_pixel_is_point(const er_georef *g);

/* The CRS as an EPSG code in GDAL's user-input syntax, "EPSG:<h>" or, with
 * a coded VerticalCSTypeGeoKey, the compound "EPSG:<h>+<v>": h is the
 * ProjectedCSTypeGeoKey of a projected model (GTModelTypeGeoKey 1) or the
 * GeographicTypeGeoKey of a geographic one (2).  Writes it to buf (n
 * bytes) and returns 1; returns 0 when the keys name no code (a
 * user-defined CRS, a geocentric model, no keys). */
int er_georef_epsg(const er_georef *g, char *buf, size_t n);

/* Reads a GDAL_NODATA string as GDAL writes it ("%.18g", "nan", "inf"):
 * a number and optional trailing white space.  Returns 1 and sets *v, or
 * 0 for anything else (an empty string, trailing garbage), which would
 * otherwise read as 0 and turn every sea-level cell into nodata. */
int er_nodata_parse(const char *s, double *v);

/* A deep copy of src for a raster whose top-left cell is cell (dx, dy) of
 * src's raster: the tie point (or transformation) is moved, everything
 * else is kept.  ER_EINVAL without an affine map, ER_ENOMEM. */
er_status er_georef_shifted(er_georef *dst, const er_georef *src, int dx, int dy, er_error *err);

/* One output layer to write. */
typedef struct er_layer_out {
    int width, height;
    const float *data;        /* values in file units */
    const uint8_t *nodata;    /* cells to write as nodata; NULL = none */
    double nodata_value;      /* the value that marks them where the format
                               * has one (GeoTIFF's GDAL_NODATA): the input's,
                               * NaN when it declared none; the writer takes
                               * NaN when a valid cell holds it */
    const er_georef *georef;  /* copied into the TIFF unchanged (band 1's
                               * description is GDAL_METADATA's); a PNG's
                               * .aux.xml and world file come from it; may
                               * be NULL */
    const char *provenance;   /* erode version + effective recipe; may be NULL */
} er_layer_out;

/* GeoTIFF creation options, after GDAL's GTiff/COG creation options
 * (COMPRESS, LEVEL, PREDICTOR, BLOCKSIZE, COG). */
typedef enum er_compress {
    ER_COMPRESS_DEFLATE, ER_COMPRESS_ZSTD, ER_COMPRESS_LZW, ER_COMPRESS_NONE
} er_compress;

typedef struct er_tiff_create {
    er_compress compress;
    int level;          /* DEFLATE 1..12 (libdeflate), ZSTD 1..22; 0 = the
                         * codec's default; ignored by LZW and NONE */
    int predictor;      /* 1 none, 2 horizontal, 3 floating point; NONE
                         * writes 1 whatever is asked */
    int blocksize;      /* tile side [cells], a multiple of 16 from 16 to
                         * 4096; smaller maps get a tile of their own size */
    int cog;            /* 1: Cloud Optimized GeoTIFF layout (internal
                         * averaged overviews, IFDs before the data) */
    double precision;   /* > 0: cells rounded to a multiple of the largest
                         * power of two not above this, in file units (error
                         * at most precision / 2); 0 = exact */
} er_tiff_create;

/* The defaults: see io/tiff_write.c for why. */
er_tiff_create er_tiff_create_defaults(void);

/* Applies one "KEY=VALUE" creation option (keys and names case-
 * insensitive: COMPRESS, LEVEL, PREDICTOR, BLOCKSIZE, COG).  Returns 1, or
 * 0 with *why set to a static one-line reason.  LEVEL is range-checked
 * against the codec by er_tiff_create_check once all options are in. */
int er_tiff_create_set(er_tiff_create *co, const char *key_value, const char **why);
/* 1 when the options agree with each other, else 0 and *why. */
int er_tiff_create_check(const er_tiff_create *co, const char **why);

/* Writers go through io/atomic.h: a temporary file in the target directory,
 * flushed and renamed into place, removed on any failure. */
er_status er_tiff_write(const char *path, const er_layer_out *layer, er_error *err);
/* er_tiff_write with creation options (co checked by er_tiff_create_check;
 * ER_EINVAL otherwise).  Tiles are encoded on all OpenMP threads; the bytes
 * are the same for any thread count. */
er_status er_tiff_write_co(const char *path, const er_layer_out *layer, const er_tiff_create *co, er_error *err);
er_status er_png_write(const char *path, const er_layer_out *layer, er_error *err);
/* The same, reporting progress through pg (may be NULL): per batch of
 * encoded tiles handed to libtiff, per PNG row. */
er_status er_tiff_write_progress(const char *path, const er_layer_out *layer, const er_tiff_create *co,
                                 const er_io_progress *pg, er_error *err);
er_status er_png_write_progress(const char *path, const er_layer_out *layer, const er_io_progress *pg,
                                er_error *err);

/* The sidecars er_png_write writes beside a georeferenced PNG `png`:
 * GDAL's PAM file "<png>.aux.xml" into aux and the world file (the name
 * with its extension replaced by ".pgw", as GDAL's PNG driver looks for
 * it) into world.  Returns 0 when a name does not fit its buffer. */
int er_png_sidecar_paths(const char *png, char *aux, size_t aux_n, char *world, size_t world_n);

/* The k-th name (0, 1, 2) under which GDAL's PNG driver looks for a world
 * file beside `png`: the extension's first and last letters and 'w'
 * (".pgw"), the extension and 'w' (".pngw"), ".wld".  Returns 0 when the
 * name has no extension, k is out of range or the name does not fit. */
int er_png_world_path(const char *png, int k, char *buf, size_t n);

/* OpenEXR (OpenEXRCore): one scanline part, one "Y" channel, ZIP (a chunk
 * that compression does not shrink stored raw), the provenance in the
 * string attribute "erode".  half = 0: float32, nodata cells NaN, every
 * value exact; half = 1: IEEE half, rounded to nearest even: the error is
 * at most 2^-11 of |v| for |v| >= 2^-14, at most 2^-25 below 2^-14
 * (subnormal halves), and |v| <= 2^-25 becomes a zero of v's sign; nodata
 * NaN, and ER_EINVAL naming the cell when a value lies beyond +-65504
 * (refused, never clamped).  Byte-identical for the same layer. */
er_status er_exr_write(const char *path, const er_layer_out *layer, int half, er_error *err);

/* The EXR codecs erode writes: the lossless ones, for the pixel type
 * (PXR24 rounds float32 to 24 bits and keeps halves exact). */
typedef enum er_exr_compress {
    ER_EXR_ZIP, ER_EXR_NONE, ER_EXR_RLE, ER_EXR_ZIPS, ER_EXR_PIZ, ER_EXR_PXR24
} er_exr_compress;

/* Where a render format (EXR, RAW) writes a value in nodata cells instead
 * of its nodata mark (NaN, r16 code 0): --co NODATA_FILL. */
typedef struct er_nodata_fill {
    int on;            /* 0: nodata cells keep the format's mark */
    float value;       /* finite, in the layer's file units */
} er_nodata_fill;

/* EXR creation options (--co COMPRESS, PIXEL_TYPE, NODATA_FILL with -f exr). */
typedef struct er_exr_create {
    int half;                  /* 1: IEEE half pixels, 0: float32 */
    er_exr_compress compress;  /* default ER_EXR_ZIP */
    er_nodata_fill fill;
} er_exr_create;

/* The EXR codec named `name` (any case) for the pixel type: 1 and *out,
 * or 0 with *why a static one-line reason that names the EXR codecs: a
 * name OpenEXR does not have (LZW, ZSTD, DEFLATE are GeoTIFF's), a lossy
 * codec (B44, B44A, DWAA, DWAB), PXR24 with float32 pixels. */
int er_exr_compress_parse(const char *name, int half, er_exr_compress *out, const char **why);
/* The codec's name as OpenEXR spells it ("ZIP"). */
const char *er_exr_compress_name(er_exr_compress c);

/* er_exr_write with creation options; byte-identical for the same layer
 * and options.  Nodata cells (masked, or NaN) hold co->fill.value when
 * co->fill.on (rounded to half with co->half). */
er_status er_exr_write_co(const char *path, const er_layer_out *layer, const er_exr_create *co, er_error *err);

/* The order of a RAW file's rows: the layer's top row first, or its
 * bottom row first (what Unity's Import Raw reads as north up without
 * "Flip Vertically"). */
typedef enum er_row_order { ER_ROWS_TOP_DOWN = 0, ER_ROWS_BOTTOM_UP = 1 } er_row_order;

/* Headerless RAW for game engines, row-major in the order `rows`.
 * bits = 16: little-endian uint16, valid cells coded 1..65535 by
 * er_raw_r16_code over the range [min, max] of the valid cells, nodata
 * cells (masked or not finite) code 0 and nothing else.  bits = 32:
 * float32 little-endian, values exact, nodata NaN.  Also writes the JSON
 * sidecar "<path>.json": size, byte order, row order, type, min, max,
 * scale, nodata and nodata_cells, the decoding, the numbers Unity's,
 * Unreal's and Terrain3D's importers ask for (or why an engine cannot
 * import the file, and the nearest size it can), and the provenance.
 * Both files go through io/atomic.h as one output set member each. */
er_status er_raw_write(const char *path, const er_layer_out *layer, int bits, er_row_order rows, er_error *err);

/* RAW creation options and what the sidecar needs to say the layer in
 * metres (er_raw_write: no fill, no cell size, values in metres). */
typedef struct er_raw_create {
    int bits;                 /* 16 or 32 */
    er_row_order rows;
    er_nodata_fill fill;      /* on: nodata cells (masked or not finite)
                               * hold the valid value fill.value (in r16 it
                               * joins the range the codes span) */
    double cell_x, cell_y;    /* cell size [m]; 0 = unknown */
    int lengths;              /* 1: metres = value * z_scale + z_offset;
                               * 0: the values are no lengths (a flow area) */
    double z_scale, z_offset;
} er_raw_create;

/* er_raw_write with options; the sidecar adds the cell size, extent and
 * range of the valid cells in metres (null where unknown), Unity's
 * terrain width, length and height and Unreal's X, Y and Z scale in those
 * metres, and with a fill its value and the cells it filled. */
er_status er_raw_write_co(const char *path, const er_layer_out *layer, const er_raw_create *co, er_error *err);

/* Game engines' heightmap sizes, from one table in io/raw_write.c: Unity
 * takes a square of 2^n + 1 cells a side, 33 to 4097 (Unity's
 * TerrainData.heightmapResolution); Unreal's recommended landscape sizes
 * are 127, 253, 505, 1009, 2017, 4033 and 8129 a side (its Landscape
 * Technical Guide: whole components of 2x2 sections; the first six share
 * 126-quad components and pair into rectangles, 8129 is square). */
enum { ER_ENGINE_UNITY = 1u, ER_ENGINE_UNREAL = 2u };
/* The engines (ER_ENGINE_* bits) that take a width x height map as it is. */
unsigned er_raw_engines_fit(int width, int height);
/* The sizes nearest to width x height that each takes: Unity's square
 * side, Unreal's width and height (each side the nearest, ties up). */
void er_raw_engines_nearest(int width, int height, int *unity, int *unreal_w, int *unreal_h);
/* The r16 code of value v for the range [lo, hi] of a layer's valid
 * cells: 1 + round((v - lo) / (hi - lo) * 65534), clamped to 1..65535;
 * 1 for every value when hi <= lo (a flat layer); 0, the nodata code,
 * when v is not finite.  A reader gets v back as lo + (code - 1) * scale
 * with scale = (hi - lo) / 65534, within half a step (exactly for a flat
 * layer). */
uint16_t er_raw_r16_code(float v, double lo, double hi);

/* An 8-bit RGB picture (a preview from core/preview.h): width * height
 * pixels of 3 bytes, row-major, top row first; provenance (may be NULL) goes
 * into an iTXt chunk.  Byte-identical for the same input. */
er_status er_png_write_rgb(const char *path, int width, int height, const uint8_t *rgb, const char *provenance,
                           er_error *err);

#endif
