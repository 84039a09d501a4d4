/*
 * The write targets of a run (erode(1) FILES): every path a run will create,
 * rename or remove — layers, their temporaries, previews, frames,
 * checkpoints, the output lock, stitched tiles — listed before any work and
 * checked against every input (and --resume file, the recipe, the lists of
 * inputs and tiles, the control rasters) and against each other,
 * by name (the directory's real path plus the file name) and by file
 * identity (device and inode, symlinks followed).  Linear in the number of
 * inputs: two hash tables, one stat() per path, one realpath() per distinct
 * directory, one readdir() per directory that receives outputs.
 */
#ifndef ER_CLI_TARGETS_H
#define ER_CLI_TARGETS_H

#include "../core/params.h"
#include "../core/stages.h"
#include "options.h"

struct er_tile_set;

struct er_stitch_tile;

/* Checks the run's write targets.  Returns 0, or exit status 2 after
 * printing one error line naming the input and the clashing paths: an
 * output that is (or would replace) an input, two outputs that are one
 * file, an existing target that is a directory or not a regular file, a
 * name too long for its temporary.  Unless --plan, removes, with a warning line each,
 * the temporaries and backups a killed run left next to a target (never a
 * live one: er_atomic_remove_stale).
 * ts (may be NULL): the --tile-set, every tile of which a run may read.
 * recipe (may be NULL): the loaded recipe, whose control rasters are read. */
int er_targets_check(const er_settings *s, const struct er_tile_set *ts, const er_stages *recipe);

/* The same for `erode stitch` of the n tiles sel[] of the set ts: it
 * reads every tile, the list and the halo outputs of the layers asked for,
 * and writes each selected tile's stitched layers and the output lock. */
int er_targets_check_stitch(const er_settings *s, const struct er_tile_set *ts,
                            const struct er_stitch_tile *sel, int n);

#endif
