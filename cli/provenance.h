/*
 * The provenance an output carries (TIFF ImageDescription, PNG iTXt):
 * one JSON object naming the erode version, what it was made from and the
 * effective recipe, so a layer can be traced to the recipe that made it and
 * `erode stitch` can refuse to blend tiles of different recipes.
 */
#ifndef ER_PROVENANCE_H
#define ER_PROVENANCE_H

#include "../core/params.h"
#include "../core/stages.h"

/* {"erode":VERSION,"input":BASE,"recipe":{...}} for a run of `input`
 * (its base name only: an absolute path says nothing to the next machine).
 * NULL when out of memory; the caller frees. */
char *er_provenance_run(const char *input, const er_stages *rc);

/* {"erode":VERSION,"stitch":BASE,"recipe":{...},"from":[...]} for a
 * stitched tile: `recipe` is the compact recipe text of the halo outputs
 * blended (er_provenance_recipe), from[0..n_from) their base names. */
char *er_provenance_stitch(const char *tile, const char *recipe, const char *const *from,
                           int n_from);

/* The recipe of an erode provenance text, as compact JSON (one spelling
 * for equal recipes); NULL when `text` is NULL or not erode's provenance,
 * or when out of memory.  The caller frees. */
char *er_provenance_recipe(const char *text);

#endif
