/*
 * Checkpoint files: a run state (core/model.h er_run_state) on disk, so a
 * run killed or stopped part-way can go on from its last boundary and
 * produce the same bytes as an uninterrupted one.  io/ knows the state
 * struct only, not what the arrays mean.
 *
 * Format 6, every number little-endian:
 *   0   8  magic "ERODECKP"
 *   8   4  u32 format version (6)
 *   12 16  erode version, NUL-padded ASCII
 *   28  4  u32 model (er_model_kind)
 *   32  4  u32 width      36 4 u32 height
 *   40  4  u32 n_arrays   44 4 u32 mask of the arrays present (bit i = array i),
 *          bit 31: a model section follows the arrays, bit 30: a stage
 *          section does, bit 29: a budget terms section does
 *   48  8  u64 recipe hash  56 8 u64 input hash
 *   64 32  i64 boundary, boundaries, done, total
 *   96 48  f64 budget: material_before, eroded, deposited, left_map,
 *          water_added, water_left
 *   144 16 i64 budget: work_done, substeps
 *   160 64 the backend that ran it, NUL-padded ASCII: "cpu", or "vulkan "
 *          and the device and driver (backends agree only within a
 *          tolerance, and their budget sums differ in rounding, so a run
 *          goes on only where it started; er_checkpoint_same_backend)
 *   224 8  0 (formats 3 to 5: a budget value of a model's own,
 *          er_run_state.legacy_slot)
 *   232 8  u64 FNV-1a 64 of bytes 0..231
 *   240    the present arrays in index order, width * height f32 each
 *   end 8  u64 FNV-1a 64 of the array values, folding one float's 32 bits
 *          (not one byte) at a time
 * then, when bit 29 of the mask says so, the budget terms (er_budget.term):
 *   u32 n (1 to ER_BUDGET_TERMS), n times its name (16 bytes, printable
 *   ASCII, NUL-padded) and its value (f64), u64 FNV-1a 64 of the section's
 *   bytes before it
 * then, when bit 30 of the mask says so, the stage section of a staged
 * run (er_run_state.stage; its meaning is core/stages.c's):
 *   u32 stage, u32 stages, u32 n_arrays, u32 mask of the arrays present,
 *   the present arrays in index order (width * height f32 each), u64 n,
 *   n f64 values, u64 FNV-1a 64 of the section (the arrays folded one
 *   float at a time, as the data checksum, the rest byte by byte)
 * then, when bit 31 of the mask says so, the model's own section
 * (er_run_state.extra; its meaning is the model's, core/<model>/state.h):
 *   u64 count[0], u64 count[1], the doubles (f64, as many as the bytes
 *   left hold), u64 FNV-1a 64 of the section's bytes before it
 * Format 5 is format 6 without bit 29, with a model's budget value at
 * 224 (the droplets' withheld erosion) and stage reports of 16 values
 * each (core/stages.c).
 * Format 4 is format 5 without bit 30 (no stages).
 * Format 3 is format 4 with the section after the arrays whenever bytes
 * remain there (only SPH runs wrote one) and no bit 31.
 * Format 2 (erode before the snapshot schedule) is format 3 without bytes
 * 224..231, its header checksum at 224 over bytes 0..223 and its arrays
 * from 232; its withheld reads as 0.  Format 1 (erode before the backend
 * was recorded) is format 2 without bytes 160..223, its header checksum
 * at 160 over bytes 0..159 and its arrays from 168; it reads as a "cpu"
 * checkpoint.
 */
#ifndef ER_CHECKPOINT_H
#define ER_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "../core/error.h"
#include "../core/model.h"

#define ER_CHECKPOINT_FORMAT 6
#define ER_CHECKPOINT_HEADER 240
#define ER_CHECKPOINT_HEADER_V2 232
#define ER_CHECKPOINT_HEADER_V1 168
#define ER_CHECKPOINT_BACKEND 64 /* bytes of the backend name, its NUL included */
#define ER_FNV1A64_INIT UINT64_C(0xcbf29ce484222325)

/* FNV-1a 64 of n bytes, continuing from h (start with ER_FNV1A64_INIT). */
uint64_t er_fnv1a64(uint64_t h, const void *data, size_t n);

/* Hash of the run's input as the model sees it: dimensions, cell size
 * [m], the working heights (float bits, little-endian) and the wall mask
 * (NULL = none, hashed as all 0).  Thread-safe. */
uint64_t er_checkpoint_input_hash(int width, int height, double cell_x, double cell_y,
                                  const float *heights, const uint8_t *wall);

/* FNV-1a 64 of a control map's n values (float bits, little-endian, as
 * the input hash folds the heights); 0 for a map not given (NULL). */
uint64_t er_checkpoint_map_hash(const float *map, size_t n);

/* The input hash h with the control maps' hashes folded in, in the order
 * hardness, rain, mask, sources, uplift (each er_checkpoint_map_hash,
 * 0 = none): the first four together when any is given, then the uplift
 * map's alone when it is; h itself when none is given, so runs without
 * maps (or without an uplift map) keep their hash. */
uint64_t er_checkpoint_fold_maps(uint64_t h, const uint64_t maps[5]);

/* What a checkpoint must match to be resumed. */
typedef struct er_checkpoint_id {
    er_model_kind model;    /* a run of one model: its model */
    int width, height;
    uint64_t recipe_hash;   /* er_fnv1a64 of the canonical recipe text */
    uint64_t input_hash;    /* er_checkpoint_input_hash */
    char backend[ER_CHECKPOINT_BACKEND]; /* what runs it (written; "" = "cpu") */
    int staged;             /* 1: a staged run, whose states carry their stage (and
                             * its model, the stage's, is checked by the plan) */
} er_checkpoint_id;

/*
 * Writes `state` (and id's hashes) to `path` atomically (io/atomic.h: a
 * temporary beside it, fsync, rename), so a kill at any moment leaves the
 * previous checkpoint intact.  Arrays that are NULL are left out.
 * Returns ER_OK, ER_EIO or ER_ENOMEM.  Thread-safe for distinct paths.
 */
er_status er_checkpoint_write(const char *path, const er_run_state *state,
                              const er_checkpoint_id *id, er_error *err);

/* A checkpoint read back: state.array[i] point into buf (owned). */
typedef struct er_checkpoint {
    er_run_state state;
    float *buf;
    er_run_extra *extra; /* the model section state.extra points to, its doubles after it (owned) */
    er_run_stage stage;  /* the stage section state.stage points to (a staged run's) */
    float *stage_buf;    /* its arrays (owned) */
    double *stage_values; /* its values (owned) */
    char backend[ER_CHECKPOINT_BACKEND]; /* the backend that wrote it ("cpu" for format 1) */
} er_checkpoint;

/*
 * Reads `path` and checks it, in this order: the magic, the format, the
 * header checksum, the erode version (must be ERODE_VERSION), id->model
 * (of a run of one model; a staged run's states carry a stage section),
 * the size, the recipe and input hashes, the counters, the file length and
 * the array and model section checksums.  Whether the section's lengths
 * fit the model is the model's check (er_plan_check_resume).  Any failure is ER_EINVAL (ER_EIO when the file
 * cannot be read, ER_ENOMEM) with one line naming the file and the reason;
 * *out is then empty.  Free with er_checkpoint_free.
 */
er_status er_checkpoint_read(const char *path, const er_checkpoint_id *id, er_checkpoint *out,
                             er_error *err);

/* ER_OK when checkpoint c (read from `path`) was written by `backend`
 * (an er_checkpoint_id.backend), else ER_EINVAL naming both: a run goes
 * on only on the backend (and device and driver) it started on. */
er_status er_checkpoint_same_backend(const er_checkpoint *c, const char *path,
                                     const char *backend, er_error *err);

/* 1 when `path` can be read and starts with the checkpoint magic: an
 * existing file that a --checkpoint may replace (and remove after
 * success); 0 otherwise. */
int er_checkpoint_looks_like_one(const char *path);

/* Frees what er_checkpoint_read allocated; accepts a zeroed struct. */
void er_checkpoint_free(er_checkpoint *c);

#endif
