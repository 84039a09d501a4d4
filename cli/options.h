/*
 * Command-line settings (erode(1) OPTIONS).  One option table in options.c
 * drives both getopt_long parsing and --help.
 */
#ifndef ER_OPTIONS_H
#define ER_OPTIONS_H

#include <stddef.h>

#include "../io/image.h"

enum er_layer_bit {
    ER_LAYER_HEIGHT = 1u << 0,
    ER_LAYER_SEDIMENT = 1u << 1,
    ER_LAYER_WATER = 1u << 2,
    ER_LAYER_EROSION = 1u << 3,
    ER_LAYER_DEPOSIT = 1u << 4,
    ER_LAYER_FLOW = 1u << 5,
    ER_LAYER_WEAR = 1u << 6
};
#define ER_LAYER_COUNT 7

typedef enum er_backend_choice { ER_BACKEND_CPU, ER_BACKEND_VULKAN, ER_BACKEND_AUTO } er_backend_choice;
typedef enum er_out_format {
    ER_OUT_AS_INPUT = -1, ER_OUT_TIFF = 0, ER_OUT_PNG = 1,
    ER_OUT_EXR = 2, ER_OUT_R16 = 3, ER_OUT_R32 = 4 /* render pipelines: no georeferencing */
} er_out_format;

typedef struct er_settings {
    const char *recipe_path;     /* NULL: the built-in default recipe */
    const char **overrides;      /* -s KEY=VALUE strings, in order */
    int n_overrides;
    const char *output_dir;      /* "." by default */
    er_out_format format;
    unsigned layers;             /* er_layer_bit mask */
    int threads;                 /* 0 = all cores */
    er_backend_choice backend;
    int device;                  /* --device N: Vulkan device index (default 0) */
    int device_set;              /* --device was given */
    int list_devices;            /* --list-devices: print the Vulkan devices and exit */
    int json;
    int print_recipe;
    int plan;                    /* --plan (--dry-run): check and describe each run, write nothing */
    int progress;                /* er_progress_mode (cli/msg.h): ER_PROGRESS_UNSET without -q or --progress */
    int band;                    /* 0 = the file must have one band */
    const char *preview;         /* shaded-relief PNG path ("{stem}" replaced); NULL = none */
    int preview_pair;            /* the preview shows before | after */
    size_t max_memory;           /* bytes; 0 = the machine's memory */
    const char *checkpoint;      /* checkpoint path ("{stem}" replaced); NULL = none */
    long long checkpoint_every;  /* Mei steps / droplet batches between checkpoints; 0 = only when stopped */
    const char *resume;          /* checkpoint to continue from ("{stem}" replaced); NULL = none */
    const char *frames;          /* directory of time-lapse frames; NULL = none */
    long long frame_every;       /* Mei steps / droplet batches between frames */
    int frame_every_given;       /* --frame-every was given (needs --frames) */
    const char **inputs;         /* from argv and --inputs-from */
    int n_inputs;
    const char **inputs_from;    /* --inputs-from files of input paths in order, "-" = stdin */
    int n_inputs_from;
    char **inputs_bufs;          /* owned: the texts the --inputs-from paths point into */
    int n_inputs_from_read;      /* of inputs_bufs */
    const char *tile_set;        /* --tile-set LIST: the tiles of a mosaic; NULL = none */
    int halo;                    /* --halo N [cells]; -1 = not given */
    int stitch;                  /* 1: `erode stitch` (cross-fade halo outputs) */
    int layers_given;            /* --layers was on the command line */
    const struct er_tile_set *tiles; /* the loaded --tile-set (main.c owns it); NULL = none */
    er_tiff_create co;           /* --co KEY=VALUE: GeoTIFF creation options */
    int exr_half;                /* --co PIXEL_TYPE=HALF: -f exr writes half, not float32 */
    int exr_type_given;          /* --co PIXEL_TYPE was given (needs -f exr) */
    int raw_bottom_up;           /* --co ROW_ORDER=BOTTOM_UP: -f r16/r32 write the bottom row first */
    int raw_order_given;         /* --co ROW_ORDER was given (needs -f r16 or r32) */
    const char *compress_co;     /* the last --co COMPRESS=..., read by the output
                                  * format's codec table once the format is known */
    er_exr_compress exr_compress; /* -f exr's codec (COMPRESS with -f exr) */
    er_nodata_fill nodata_fill;  /* --co NODATA_FILL: -f exr, r16, r32 write it in nodata cells */
    double precision[ER_LAYER_COUNT]; /* --precision: rounding step per layer bit index, file units; 0 = exact */
} er_settings;

/* Parses argv into *s.  Returns 0 to go on; -1 after --help or --version
 * (printed to stdout: exit 0); 2 after a usage error (one line printed to
 * stderr); 1 when stdout could not be written.  s->overrides and s->inputs point into
 * argv and an array the caller frees with er_settings_free. */
int er_options_parse(int argc, char **argv, er_settings *s);
void er_settings_free(er_settings *s);

/* --inputs-from bounds: an endless stream (`yes | erode --inputs-from -`)
 * is refused, not read until memory runs out. */
#define ER_INPUTS_FROM_MAX_BYTES (64u << 20)  /* a list's text */
#define ER_MAX_INPUTS 1000000                 /* inputs of one run, all lists and argv */

/* Names of layer bits, in output order. */
const char *er_layer_name(unsigned bit);

#endif
