/*
 * Output naming (erode(1) FILES): every name a run derives from an input's
 * name.  One place, so the run, the stitch and the write-target check
 * (targets.c) cannot disagree about a name.
 */
#ifndef ER_CLI_PATHS_H
#define ER_CLI_PATHS_H

#include <stddef.h>

#include "../io/image.h"
#include "options.h"

/* The file name part of a path (after the last '/'). */
const char *er_path_base(const char *path);

/* The length of a file name's stem: the name less its last extension and
 * then a final ".height" (erode(1) FILES). */
int er_path_stem_len(const char *base);

/* "tif", "png", "exr", "r16" or "r32": the output format's extension for
 * an input of format `in` (an r16/r32 layer's sidecar is "<name>.json"). */
const char *er_path_ext(const er_settings *s, er_file_format in);

/* The input's format, for naming outputs before the input is read: what
 * its first bytes say, as the reader decides (a "dem.png" holding a TIFF
 * is a TIFF); only a file that cannot be read, and so will fail its run,
 * is named by its extension (".png" or else TIFF). */
er_file_format er_path_input_format(const char *path);

/* The name an input's outputs are named after: the input as given, or
 * for a tile of a --tile-set run its entry in the list (the name erode
 * stitch looks for), whatever spelling of the file (a symbolic or hard
 * link) the command line used. */
const char *er_path_name(const er_settings *s, const char *input);

/* "<dir>/<stem>.<layer>.<ext>", or "<dir>/<stem>.<layer>.halo.<ext>" for a
 * tile of a --tile-set run (erode stitch makes the final outputs).
 * Returns 0 when the name did not fit in n bytes. */
int er_path_output(char *buf, size_t n, const er_settings *s, const char *input,
                   const char *layer, const char *ext);

/* `pattern` with "{stem}" replaced by the input's stem (--preview,
 * --checkpoint, --resume).  Returns 0 when it did not fit. */
int er_path_pattern(char *buf, size_t n, const char *pattern, const char *input);

/* "<frames>/<stem>.frame-NNNNNN.png".  Returns 0 when it did not fit. */
int er_path_frame(char *buf, size_t n, const char *frames_dir, const char *input, long long k);

/* "<dir>/<stem>.<layer>.tif" (suffix "") or "...<layer>.halo.tif": the
 * files of erode stitch. */
int er_path_stitched(char *buf, size_t n, const char *dir, const char *tile, const char *layer,
                     const char *suffix);

/* The GDAL_METADATA of layer `bit` written from an input whose
 * GDAL_METADATA is md (may be NULL), so that its band description says
 * what the layer is: height keeps the input's own description ("DEM",
 * "elevation"), the eroded terrain being the quantity the input
 * described, and is "height" when the input has none; every other layer
 * is described by its name ("water", "sediment", ...).  Sets *out to a
 * new string the caller frees, or to NULL when md serves as it is;
 * returns 0 when out of memory. */
int er_path_layer_metadata(const char *md, unsigned bit, char **out);

#endif
