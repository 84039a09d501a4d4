/* realpath() is an XSI function. */
#define _XOPEN_SOURCE 700
#include "targets.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../io/atomic.h"
#include "../io/checkpoint.h"
#include "backends.h"
#include "job.h"
#include "msg.h"
#include "paths.h"
#include "tiles.h"

/* What an entry is: something read, or something written. */
enum role { ROLE_INPUT, ROLE_RESUME, ROLE_TARGET };

typedef struct entry {
    char *key;          /* owned: the directory's real path, '/', the file name */
    char *path;         /* owned: as given, for messages */
    const char *what;   /* "the height layer", "the preview", ... */
    const char *owner;  /* the input it belongs to */
    int role;
    int lock;           /* an output directory's lock file (shared by all) */
    int written;        /* also a target: --checkpoint F --resume F */
    int has_id;         /* exists: dev and ino valid */
    dev_t dev;
    ino_t ino;
} entry;

/* Open addressing: slot holds an index + 1, 0 is empty. */
typedef struct table {
    size_t *slot;
    size_t cap;
} table;

/* A directory as given and as resolved, with its file name limit. */
typedef struct dir_info {
    char *given, *real;
    long name_max;
} dir_info;

typedef struct plan {
    entry *e;
    size_t n, cap;
    table by_key, by_id;
    dir_info *d;
    size_t n_dirs, cap_dirs;
    table dirs;
    char **stems;       /* the inputs' stems (for frame names) */
    size_t n_stems;
    table stem_set;
    const char *frames_real; /* --frames resolved, or NULL */
    int failed;
} plan;

enum { TEMP_EXTRA = ER_ATOMIC_TEMP_EXTRA };

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * UINT64_C(0x100000001b3);
    return h;
}

static uint64_t hash_str(const char *s)
{
    return hash_bytes(s, strlen(s), UINT64_C(0xcbf29ce484222325));
}

static uint64_t hash_id(dev_t dev, ino_t ino)
{
    uint64_t d = (uint64_t)dev, i = (uint64_t)ino;
    return hash_bytes(&i, sizeof i, hash_bytes(&d, sizeof d, UINT64_C(0xcbf29ce484222325)));
}

/* Makes room for one more key at load <= 1/2; `rehash` gives each stored
 * index's hash.  Returns 0 when out of memory. */
static int table_reserve(table *t, size_t count, uint64_t (*rehash)(const plan *, size_t),
                         const plan *p)
{
    if (2 * (count + 1) <= t->cap)
        return 1;
    size_t cap = t->cap ? 2 * t->cap : 64;
    size_t *slot = calloc(cap, sizeof *slot);
    if (!slot)
        return 0;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slot[i])
            continue;
        size_t h = (size_t)rehash(p, t->slot[i] - 1) & (cap - 1);
        while (slot[h])
            h = (h + 1) & (cap - 1);
        slot[h] = t->slot[i];
    }
    free(t->slot);
    t->slot = slot;
    t->cap = cap;
    return 1;
}

static uint64_t entry_key_hash(const plan *p, size_t i) { return hash_str(p->e[i].key); }
static uint64_t entry_id_hash(const plan *p, size_t i) { return hash_id(p->e[i].dev, p->e[i].ino); }
static uint64_t dir_hash(const plan *p, size_t i) { return hash_str(p->d[i].given); }
static uint64_t stem_hash(const plan *p, size_t i) { return hash_str(p->stems[i]); }

static void out_of_memory(plan *p)
{
    if (!p->failed)
        er_msg_error("out of memory");
    p->failed = 1;
}

/* The real path of `dir` (cached per spelling); the spelling itself when it
 * cannot be resolved (a missing directory is reported elsewhere). */
static const dir_info *resolve_dir(plan *p, const char *dir)
{
    uint64_t h = hash_str(dir);
    for (size_t s = p->dirs.cap ? (size_t)h & (p->dirs.cap - 1) : 0; p->dirs.cap && p->dirs.slot[s];
         s = (s + 1) & (p->dirs.cap - 1))
        if (strcmp(p->d[p->dirs.slot[s] - 1].given, dir) == 0)
            return &p->d[p->dirs.slot[s] - 1];
    if (p->n_dirs == p->cap_dirs) {
        size_t cap = p->cap_dirs ? 2 * p->cap_dirs : 16;
        dir_info *d = realloc(p->d, cap * sizeof *d);
        if (!d)
            return NULL;
        p->d = d;
        p->cap_dirs = cap;
    }
    if (!table_reserve(&p->dirs, p->n_dirs, dir_hash, p))
        return NULL;
    dir_info *di = &p->d[p->n_dirs];
    char *real = realpath(dir, NULL);
    di->given = strdup(dir);
    di->real = real ? real : strdup(dir);
    if (!di->given || !di->real) {
        free(di->given);
        free(di->real);
        return NULL;
    }
    long nm = pathconf(di->real, _PC_NAME_MAX);
    di->name_max = nm > 0 ? nm : 255;
    size_t s = (size_t)h & (p->dirs.cap - 1);
    while (p->dirs.slot[s])
        s = (s + 1) & (p->dirs.cap - 1);
    p->dirs.slot[s] = ++p->n_dirs;
    return di;
}

/* Splits `path` into its directory (resolved) and file name. */
static const dir_info *dir_of(plan *p, const char *path, const char **base)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    return resolve_dir(p, dir);
}

/* Two entries may be the same file: an input listed twice, a checkpoint
 * its own input resumes from, the lock file every input shares. */
static int may_share(const entry *a, const entry *b)
{
    if (a->role != ROLE_TARGET && b->role != ROLE_TARGET)
        return 1;
    if (a->lock && b->lock)
        return 1;
    if (a->owner == b->owner && ((a->role == ROLE_RESUME && b->role == ROLE_TARGET) ||
                                 (b->role == ROLE_RESUME && a->role == ROLE_TARGET)))
        return strcmp(a->what, "the checkpoint") == 0 || strcmp(b->what, "the checkpoint") == 0;
    return 0;
}

/* One line for a clash between the new entry x and an earlier one y. */
static void report_clash(plan *p, const entry *x, const entry *y)
{
    const entry *t = x->role == ROLE_TARGET ? x : y, *o = t == x ? y : x;
    if (o->role == ROLE_INPUT)
        er_msg_error("%s: %s '%s' would replace %s '%s'", t->owner, t->what, t->path, o->what,
                     o->path);
    else if (o->role == ROLE_RESUME)
        er_msg_error("%s: %s '%s' would replace the --resume file '%s'", t->owner, t->what,
                     t->path, o->path);
    else if (strcmp(t->what, o->what) == 0 && t->owner != o->owner)
        er_msg_error("%s: writes the same outputs as '%s' (%s '%s')", t->owner, o->owner,
                     t->what, t->path);
    else
        er_msg_error("%s: %s '%s' is also %s '%s'%s%s%s", t->owner, t->what, t->path, o->what,
                     o->path, t->owner != o->owner ? " of '" : "",
                     t->owner != o->owner ? o->owner : "", t->owner != o->owner ? "'" : "");
    p->failed = 1;
}

static size_t find_key(const plan *p, const char *key)
{
    if (!p->by_key.cap)
        return 0;
    for (size_t s = (size_t)hash_str(key) & (p->by_key.cap - 1); p->by_key.slot[s];
         s = (s + 1) & (p->by_key.cap - 1))
        if (strcmp(p->e[p->by_key.slot[s] - 1].key, key) == 0)
            return p->by_key.slot[s];
    return 0;
}

static size_t find_id(const plan *p, dev_t dev, ino_t ino)
{
    if (!p->by_id.cap)
        return 0;
    for (size_t s = (size_t)hash_id(dev, ino) & (p->by_id.cap - 1); p->by_id.slot[s];
         s = (s + 1) & (p->by_id.cap - 1)) {
        const entry *e = &p->e[p->by_id.slot[s] - 1];
        if (e->dev == dev && e->ino == ino)
            return p->by_id.slot[s];
    }
    return 0;
}

static void insert(table *t, uint64_t h, size_t index)
{
    size_t s = (size_t)h & (t->cap - 1);
    while (t->slot[s])
        s = (s + 1) & (t->cap - 1);
    t->slot[s] = index + 1;
}

/* A target that exists must be a regular file that rename() may replace:
 * never a directory, a device or a FIFO (`--preview /dev/null` as root
 * would otherwise replace the device node). */
static int check_existing(plan *p, const entry *x, const struct stat *st)
{
    /* A checkpoint is removed after success: only ever one of erode's. */
    if (S_ISREG(st->st_mode) && strcmp(x->what, "the checkpoint") == 0 &&
        !er_checkpoint_looks_like_one(x->path)) {
        er_msg_error("%s: %s '%s' exists and is not an erode checkpoint", x->owner, x->what,
                     x->path);
        p->failed = 1;
        return 0;
    }
    if (S_ISREG(st->st_mode))
        return 1;
    er_msg_error("%s: %s '%s' exists and is %s", x->owner, x->what, x->path,
                 S_ISDIR(st->st_mode) ? "a directory" : "not a regular file");
    p->failed = 1;
    return 0;
}

/* Adds one path: checks it against everything listed so far by name and
 * by identity, then lists it. */
static void add(plan *p, const char *path, const char *what, const char *owner, int role,
                int lock)
{
    if (p->failed)
        return;
    const char *base;
    const dir_info *d = dir_of(p, path, &base);
    if (!d) {
        out_of_memory(p);
        return;
    }
    entry x = {.what = what, .owner = owner, .role = role, .lock = lock};
    size_t keylen = strlen(d->real) + strlen(base) + 2;
    x.key = malloc(keylen);
    x.path = strdup(path);
    if (!x.key || !x.path) {
        free(x.key);
        free(x.path);
        out_of_memory(p);
        return;
    }
    snprintf(x.key, keylen, "%s%s%s", d->real, strcmp(d->real, "/") ? "/" : "", base);
    if (role == ROLE_TARGET && !lock && (long)strlen(base) + TEMP_EXTRA > d->name_max) {
        er_msg_error("%s: %s '%s': file name too long (at most %ld characters, so that its "
                     "temporary name fits)", owner, what, path, d->name_max - TEMP_EXTRA);
        p->failed = 1;
    }
    struct stat st;
    if (!p->failed && stat(path, &st) == 0) {
        x.has_id = 1;
        x.dev = st.st_dev;
        x.ino = st.st_ino;
    }
    size_t y = p->failed ? 0 : find_key(p, x.key);
    if (!y && x.has_id && !p->failed)
        y = find_id(p, x.dev, x.ino);
    if (y && !may_share(&x, &p->e[y - 1]))
        report_clash(p, &x, &p->e[y - 1]);
    else if (y && role == ROLE_TARGET)
        p->e[y - 1].written = 1;
    else if (!y && x.has_id && role == ROLE_TARGET)
        check_existing(p, &x, &st);
    if (p->failed || y) {
        free(x.key);
        free(x.path);
        return;
    }
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        entry *e = realloc(p->e, cap * sizeof *e);
        if (!e) {
            free(x.key);
            free(x.path);
            out_of_memory(p);
            return;
        }
        p->e = e;
        p->cap = cap;
    }
    if (!table_reserve(&p->by_key, p->n, entry_key_hash, p) ||
        !table_reserve(&p->by_id, p->n, entry_id_hash, p)) {
        free(x.key);
        free(x.path);
        out_of_memory(p);
        return;
    }
    p->e[p->n] = x;
    insert(&p->by_key, hash_str(x.key), p->n);
    if (x.has_id)
        insert(&p->by_id, hash_id(x.dev, x.ino), p->n);
    p->n++;
}

static int is_stem(const plan *p, const char *stem);

/* The stems of the run's inputs, for telling a frame's name.  Frames are
 * named by stem alone, so two inputs of one stem ("dem.png", "dem.tif")
 * would write one series of frames over the other. */
static void add_stem(plan *p, const char *input)
{
    const char *base = er_path_base(input);
    char *stem = strndup(base, (size_t)er_path_stem_len(base));
    if (stem && is_stem(p, stem)) {
        er_msg_error("%s: --frames: its frames '%s.frame-*.png' would replace those of another "
                     "input of the same stem; give them separate runs or names", input, stem);
        free(stem);
        p->failed = 1;
        return;
    }
    char **more = realloc(p->stems, (p->n_stems + 1) * sizeof *more);
    if (!stem || !more || !table_reserve(&p->stem_set, p->n_stems, stem_hash, p)) {
        free(stem);
        if (more)
            p->stems = more;
        out_of_memory(p);
        return;
    }
    p->stems = more;
    p->stems[p->n_stems] = stem;
    insert(&p->stem_set, hash_str(stem), p->n_stems++);
}

static int is_stem(const plan *p, const char *stem)
{
    if (!p->stem_set.cap)
        return 0;
    for (size_t s = (size_t)hash_str(stem) & (p->stem_set.cap - 1); p->stem_set.slot[s];
         s = (s + 1) & (p->stem_set.cap - 1))
        if (strcmp(p->stems[p->stem_set.slot[s] - 1], stem) == 0)
            return 1;
    return 0;
}

/* 1 when `base` is "<stem>.frame-<six or more digits>.png" for a stem of
 * the run: a name some input's --frames may write. */
static int frame_name(const plan *p, const char *base)
{
    const char *tag = strstr(base, ".frame-");
    while (tag) {
        const char *d = tag + 7, *e = d;
        while (*e >= '0' && *e <= '9')
            e++;
        if (e - d >= 6 && strcmp(e, ".png") == 0) {
            char stem[PATH_MAX];
            snprintf(stem, sizeof stem, "%.*s", (int)(tag - base), base);
            return is_stem(p, stem);
        }
        tag = strstr(tag + 1, ".frame-");
    }
    return 0;
}

/* Frames are numbered, so they are checked by name: nothing listed (an
 * input, a layer, a preview) may lie in the frames directory under a
 * frame's name. */
static void check_frames(plan *p)
{
    for (size_t i = 0; p->frames_real && i < p->n && !p->failed; i++) {
        const entry *x = &p->e[i];
        const char *slash = strrchr(x->key, '/');
        size_t dl = (size_t)(slash - x->key);
        if (!(dl == strlen(p->frames_real) && strncmp(x->key, p->frames_real, dl) == 0) &&
            !(dl == 0 && strcmp(p->frames_real, "/") == 0))
            continue;
        if (!frame_name(p, slash + 1))
            continue;
        if (x->role == ROLE_TARGET)
            er_msg_error("%s: %s '%s' has the name of a frame (--frames)", x->owner, x->what,
                         x->path);
        else
            er_msg_error("%s: --frames would replace the input '%s'", x->owner, x->path);
        p->failed = 1;
    }
}

/* Removes ".<name>.tmp-XXXXXX" and ".<name>.old-XXXXXX" next to a target
 * when a killed run left them (io/atomic.h: no live writer, older than a
 * minute), saying so.  One readdir per directory. */
static void clean_stale(plan *p)
{
    for (size_t k = 0; k < p->n_dirs; k++) {
        DIR *dir = opendir(p->d[k].real);
        if (!dir)
            continue;
        for (struct dirent *de; (de = readdir(dir));) {
            size_t len = strlen(de->d_name);
            if (de->d_name[0] != '.' || len <= TEMP_EXTRA)
                continue;
            char key[PATH_MAX];
            snprintf(key, sizeof key, "%s/%.*s", p->d[k].real, (int)(len - TEMP_EXTRA),
                     de->d_name + 1);
            size_t y = find_key(p, key);
            if (y && (p->e[y - 1].role == ROLE_TARGET || p->e[y - 1].written) &&
                er_atomic_remove_stale(p->d[k].real, de->d_name))
                er_msg_error("warning: removed '%s/%s', left by an interrupted erode", p->d[k].real,
                             de->d_name);
        }
        closedir(dir);
    }
}

/* The files a run reads besides its inputs: the recipe, the lists of
 * inputs and tiles, the control rasters (an output named like one of them
 * would replace what the user painted or wrote). */
static void add_read_files(plan *p, const er_settings *s, const er_stages *recipe)
{
    const char *owner = s->n_inputs ? s->inputs[0] : "erode";
    const char *file[] = {s->recipe_path, s->tile_set};
    const char *what[] = {"the recipe", "the --tile-set list"};
    for (size_t k = 0; k < sizeof file / sizeof file[0]; k++)
        if (file[k] && strcmp(file[k], "-") != 0)
            add(p, file[k], what[k], owner, ROLE_INPUT, 0);
    for (int k = 0; k < s->n_inputs_from; k++)
        if (strcmp(s->inputs_from[k], "-") != 0)
            add(p, s->inputs_from[k], "the --inputs-from list", owner, ROLE_INPUT, 0);
    if (!recipe)
        return;
    for (int i = 0; i < er_stages_count(recipe); i++) {
        const er_control_paths *m = &er_stages_at(recipe, i)->maps;
        const char *map[] = {m->hardness, m->rain, m->mask, m->sources, m->uplift};
        const char *map_what[] = {"the hardness raster", "the rain raster", "the mask raster",
                                  "the sources raster", "the uplift raster"};
        for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
            if (map[k][0])
                add(p, map[k], map_what[k], owner, ROLE_INPUT, 0);
    }
}

static void add_tiles(plan *p, const er_tile_set *ts);

/* A run reads its inputs (with --tile-set: every tile of the set, the
 * neighbours' too) and writes their outputs, named after each input, or
 * for a tile after its entry in the set (er_path_name). */
static void add_run(plan *p, const er_settings *s, const er_tile_set *ts, const er_stages *recipe)
{
    char path[PATH_MAX];
    add_read_files(p, s, recipe);
    if (ts)
        add_tiles(p, ts);
    for (int i = 0; i < s->n_inputs; i++) {
        const char *name = er_path_name(s, s->inputs[i]);
        add(p, s->inputs[i], "the input", s->inputs[i], ROLE_INPUT, 0);
        /* A PNG input's georeferencing is read from its .aux.xml, else
         * from a world file under one of GDAL's names. */
        char world[PATH_MAX];
        int png = er_path_input_format(s->inputs[i]) == ER_FORMAT_PNG;
        if (png && er_png_sidecar_paths(s->inputs[i], path, sizeof path, world, sizeof world))
            add(p, path, "the input's .aux.xml", s->inputs[i], ROLE_INPUT, 0);
        for (int k = 0; png && k < 3; k++)
            if (er_png_world_path(s->inputs[i], k, path, sizeof path))
                add(p, path, "the input's world file", s->inputs[i], ROLE_INPUT, 0);
        if (s->resume && er_path_pattern(path, sizeof path, s->resume, name))
            add(p, path, "the --resume file", s->inputs[i], ROLE_RESUME, 0);
        if (s->frames)
            add_stem(p, name);
    }
    for (int i = 0; i < s->n_inputs && !p->failed; i++) {
        const char *in = s->inputs[i], *name = er_path_name(s, in);
        const char *ext = er_path_ext(s, er_path_input_format(in));
        static const char *const what[ER_LAYER_COUNT] = {
            "the height layer", "the sediment layer", "the water layer", "the erosion layer",
            "the deposit layer", "the flow layer", "the wear layer"};
        static const char *const sidecar[ER_LAYER_COUNT] = {
            "the height layer's sidecar", "the sediment layer's sidecar",
            "the water layer's sidecar", "the erosion layer's sidecar",
            "the deposit layer's sidecar", "the flow layer's sidecar",
            "the wear layer's sidecar"};
        static const char *const world[ER_LAYER_COUNT] = {
            "the height layer's world file", "the sediment layer's world file",
            "the water layer's world file", "the erosion layer's world file",
            "the deposit layer's world file", "the flow layer's world file",
            "the wear layer's world file"};
        const int raw = strcmp(ext, "r16") == 0 || strcmp(ext, "r32") == 0;
        const int png = strcmp(ext, "png") == 0;
        for (unsigned b = 0; b < ER_LAYER_COUNT; b++) {
            if (!(s->layers & (1u << b)) ||
                !er_path_output(path, sizeof path, s, name, er_layer_name(1u << b), ext))
                continue;
            add(p, path, what[b], in, ROLE_TARGET, 0);
            /* A RAW layer's "<file>.json" (io/raw_write.c) is written too. */
            if (raw && strlen(path) + 5 < sizeof path) {
                strcat(path, ".json");
                add(p, path, sidecar[b], in, ROLE_TARGET, 0);
            }
            /* A PNG layer's .aux.xml is written, and its world file
             * written or removed as the input is placed or not (known
             * only once it is read): io/png_sidecar.c. */
            char aux[PATH_MAX], wld[PATH_MAX];
            if (png && er_png_sidecar_paths(path, aux, sizeof aux, wld, sizeof wld)) {
                add(p, aux, sidecar[b], in, ROLE_TARGET, 0);
                add(p, wld, world[b], in, ROLE_TARGET, 0);
            }
        }
        if (s->preview && er_path_pattern(path, sizeof path, s->preview, name)) {
            add(p, path, "the preview", in, ROLE_TARGET, 0);
            const char *base;
            const dir_info *d = dir_of(p, path, &base);
            if (d) {
                snprintf(path, sizeof path, "%s/" ER_ATOMIC_LOCK_NAME, d->real);
                add(p, path, "the lock file", in, ROLE_TARGET, 1);
            }
        }
        if (s->checkpoint && er_path_pattern(path, sizeof path, s->checkpoint, name))
            add(p, path, "the checkpoint", in, ROLE_TARGET, 0);
        snprintf(path, sizeof path, "%s/" ER_ATOMIC_LOCK_NAME, s->output_dir);
        add(p, path, "the lock file", in, ROLE_TARGET, 1);
    }
    if (s->n_inputs && er_backend_cache_path(s, path, sizeof path))
        add(p, path, "the Vulkan pipeline cache", s->inputs[0], ROLE_TARGET, 0);
    if (s->frames && !p->failed) {
        const dir_info *d = resolve_dir(p, s->frames);
        if (!d) {
            out_of_memory(p);
            return;
        }
        p->frames_real = d->real;
        check_frames(p);
    }
}

/* Every tile of the set is read: by a stitch, or as a neighbour's halo. */
static void add_tiles(plan *p, const er_tile_set *ts)
{
    for (int k = 0; k < ts->n && !p->failed; k++)
        add(p, ts->paths[k], "the tile", ts->paths[k], ROLE_INPUT, 0);
}

/* erode stitch reads every tile and the halo outputs of the layers it
 * stitches, and writes one file a layer for each tile it stitches, named
 * after the tile's entry in the set. */
static void add_stitch(plan *p, const er_settings *s, const er_tile_set *ts,
                       const er_stitch_tile *sel, int n)
{
    char path[PATH_MAX];
    unsigned layers = 0;
    for (int i = 0; i < n; i++)
        layers |= sel[i].layers;
    add_read_files(p, s, NULL);
    add_tiles(p, ts);
    for (int k = 0; k < ts->n && !p->failed; k++)
        for (unsigned b = 0; b < ER_LAYER_COUNT; b++)
            if ((layers & (1u << b)) && er_path_stitched(path, sizeof path, s->output_dir,
                                                         ts->paths[k], er_layer_name(1u << b), ".halo"))
                add(p, path, "the halo output", ts->paths[k], ROLE_INPUT, 0);
    for (int i = 0; i < n && !p->failed; i++) {
        const char *tile = ts->paths[sel[i].k];
        for (unsigned b = 0; b < ER_LAYER_COUNT; b++)
            if ((sel[i].layers & (1u << b)) &&
                er_path_stitched(path, sizeof path, s->output_dir, tile, er_layer_name(1u << b), ""))
                add(p, path, "the stitched layer", tile, ROLE_TARGET, 0);
        snprintf(path, sizeof path, "%s/" ER_ATOMIC_LOCK_NAME, s->output_dir);
        add(p, path, "the lock file", tile, ROLE_TARGET, 1);
    }
}

static void plan_free(plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->e[i].key);
        free(p->e[i].path);
    }
    for (size_t i = 0; i < p->n_dirs; i++) {
        free(p->d[i].given);
        free(p->d[i].real);
    }
    for (size_t i = 0; i < p->n_stems; i++)
        free(p->stems[i]);
    free(p->e);
    free(p->d);
    free(p->stems);
    free(p->by_key.slot);
    free(p->by_id.slot);
    free(p->dirs.slot);
    free(p->stem_set.slot);
}

/* The check's end: the leftovers of killed runs removed when it passed
 * and the run writes (--plan touches nothing). */
static int finish(plan *p, int writes)
{
    if (!p->failed && writes)
        clean_stale(p);
    int failed = p->failed;
    plan_free(p);
    return failed ? 2 : 0;
}

int er_targets_check(const er_settings *s, const er_tile_set *ts, const er_stages *recipe)
{
    plan p;
    memset(&p, 0, sizeof p);
    add_run(&p, s, ts, recipe);
    return finish(&p, !s->plan);
}

int er_targets_check_stitch(const er_settings *s, const er_tile_set *ts, const er_stitch_tile *sel,
                            int n)
{
    plan p;
    memset(&p, 0, sizeof p);
    add_stitch(&p, s, ts, sel, n);
    return finish(&p, 1);
}
