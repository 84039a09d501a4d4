/*
 * What io/png_read.c and io/png_write.c agree on: erode's own PNG chunks.
 * Private to io/ (and the PNG unit tests).
 *
 * erode writes 16-bit greyscale PNGs (grey + alpha when some cells are
 * nodata) and records in an iTXt chunk how the raw samples map to heights:
 *
 *     keyword ER_PNG_KEY_MAPPING, text "min=<%.17g> max=<%.17g>"
 *     value = min + raw / (2^bit_depth - 1) * (max - min)   (in double)
 *
 * The chunk may come before or after the image data (erode writes it
 * before).  A PNG without this chunk reads as raw / (2^bit_depth - 1),
 * i.e. 0..1; one whose mapping chunk is damaged, repeated or cannot be read
 * (a bad zlib stream, over ER_PNG_CHUNK_MAX inflated, past
 * ER_PNG_TEXT_CHUNKS_MAX text chunks) is refused.
 * The effective recipe and erode version go, as JSON, into a second iTXt
 * chunk (ER_PNG_KEY_PROVENANCE) that the reader ignores.
 */
#ifndef ER_PNG_COMMON_H
#define ER_PNG_COMMON_H

#include "image.h"

#define ER_PNG_KEY_MAPPING "erode:height-mapping"
#define ER_PNG_KEY_PROVENANCE "erode:provenance"

/* The sidecars of a georeferenced PNG (io/png_sidecar.c): GDAL's PAM
 * file "<name>.png.aux.xml", whose metadata domain ER_PNG_DOMAIN holds the
 * input's GeoTIFF tags verbatim (keys RASTER_SIZE "<w> <h>",
 * MODEL_PIXEL_SCALE, MODEL_TIEPOINT, MODEL_TRANSFORMATION and
 * GEO_DOUBLE_PARAMS as %.17g numbers, GEO_KEY_DIRECTORY as integers,
 * GEO_ASCII_PARAMS, GDAL_NODATA and GDAL_METADATA as text), and the world
 * file "<name>.pgw". */
#define ER_PNG_AUX_SUFFIX ".aux.xml"
#define ER_PNG_WORLD_EXT "pgw"
#define ER_PNG_DOMAIN "ERODE_GEOTIFF"

/* Writes the sidecars of the PNG `png` holding layer, whose valid cells
 * span [min, max] (the mapping of its iTXt chunk), through io/atomic.h:
 * members of the current output set.  The PAM file always (band 1's
 * scale and offset; the georeferencing and ER_PNG_DOMAIN when
 * layer->georef places the raster or names its CRS); the world file only
 * with an affine map, else one an earlier output left under its name is
 * removed.  ER_OK, or
 * ER_EIO / ER_ENOMEM / ER_EINVAL (a name too long) with err set. */
er_status er_png_sidecars_write(const char *png, const er_layer_out *layer, double min, double max,
                                er_error *err);

/* Band 1's scale, offset and nodata value as GDAL's PAM file declares
 * them (GDAL reads sample * scale + offset, and masks the samples equal
 * to the nodata value). */
typedef struct er_png_pam {
    int has_scale;          /* a <Scale> or an <Offset> was given */
    double scale, offset;   /* 1 and 0 unless given */
    int has_nodata;         /* a <NoDataValue> was given */
    double nodata;          /* in samples, as GDAL compares it; may be NaN */
} er_png_pam;

/* Reads the georeferencing of the PNG `png` (img->width and height set,
 * img->georef empty) and band 1's scale, offset and nodata value into
 * *pam (zeroed first).  The georeferencing, in this order of precedence:
 * the ER_PNG_DOMAIN of its PAM file (erode's own outputs: the GeoTIFF
 * tags verbatim, and from its GDAL_NODATA img->has_nodata_value and
 * nodata_value), else GDAL's <GeoTransform> and <SRS> in the PAM file,
 * else a world file (io/png_pam.c).  No sidecar, or a PAM file with
 * nothing of these (GDAL's statistics), changes nothing.  ER_EFORMAT when
 * a sidecar is damaged or the domain describes a raster of another size,
 * ER_EIO when one cannot be read: img->georef is then empty again. */
er_status er_png_sidecars_read(const char *png, er_image *img, er_png_pam *pam, er_error *err);

/* GDAL's georeferencing of a PNG erode did not write (io/png_pam.c): band
 * 1 of the PAM text (NULL: no PAM file) into *pam, and unless
 * georef_taken, its GeoTransform (else a world file's) and SRS into
 * img->georef as GeoTIFF tags.  aux names the PAM file in messages.
 * ER_OK, ER_EFORMAT (a damaged element or world file), ER_EIO, ER_ENOMEM. */
er_status er_png_pam_read(const char *png, const char *aux, const char *text, int georef_taken, er_image *img,
                          er_png_pam *pam, er_error *err);

/* The sidecar at path of the PNG png (png_pam.c), NUL-terminated, in *text (the
 * caller frees); *text NULL and ER_OK when there is no such file.  Refuses
 * what is not a regular file or is over 64 MiB. */
er_status er_png_sidecar_slurp(const char *png, const char *path, char **text, er_error *err);

/* Largest ancillary chunk libpng may allocate while reading, inflated text
 * included (a provenance recipe is a few KiB), and the most text chunks it
 * keeps (libpng's chunk cache; later ones are dropped).  Together they bound
 * what text costs: libpng keeps every text chunk until the read ends, and
 * with its defaults (1000 chunks) a 2 MB PNG of zTXt bombs cost 8 GB.  A
 * mapping chunk libpng drops is an error (io/png_read.c). */
#define ER_PNG_CHUNK_MAX (1u << 20)
#define ER_PNG_TEXT_CHUNKS_MAX 64

/* Widest and tallest PNG accepted (the PNG format's own limit, 2^31 - 1);
 * the real guard against huge images is er_read_opts.max_bytes, checked on
 * the header before any allocation. */
#define ER_PNG_SIDE_MAX 0x7fffffffu

#endif
