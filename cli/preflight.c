/* Checks before any work: the output directories, the tile set, the
 * input's kind and the memory a run needs. */
#include "preflight.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paths.h"
#include "targets.h"
#include "tiles.h"

/* Creates and removes a file in `dir`: access() says yes to root even on a
 * read-only filesystem, and a farm must learn this now, not at the end. */
static int probe_dir(const char *dir, const char *what)
{
    struct stat st;
    if (stat(dir, &st) != 0) { /* a mistyped path is not made into a tree of new directories */
        const int missing = errno == ENOENT;
        er_msg_error("%s: %s: %s%s", dir, what, strerror(errno),
                     missing ? " (erode creates no directory: mkdir -p it first)" : "");
        return EXIT_USAGE;
    }
    if (!S_ISDIR(st.st_mode)) {
        er_msg_error("%s: %s: not a directory", dir, what);
        return EXIT_USAGE;
    }
    char probe[PATH_MAX];
    snprintf(probe, sizeof probe, "%s/.erode-probe-XXXXXX", dir);
    int fd = mkstemp(probe);
    if (fd < 0) {
        er_msg_error("%s: %s: %s", dir, what, strerror(errno));
        return EXIT_USAGE;
    }
    close(fd);
    unlink(probe);
    return 0;
}

/* Probes the directory each input's file of `pattern` goes to ("{stem}"
 * expanded, so "out/{stem}/p.png" probes out/dem/), each directory once
 * when consecutive inputs share it. */
static int probe_parents(const er_settings *s, const char *pattern, const char *what)
{
    char dir[PATH_MAX], last[PATH_MAX] = "";
    for (int i = 0; i < s->n_inputs; i++) {
        if (!er_path_pattern(dir, sizeof dir, pattern, er_path_name(s, s->inputs[i]))) {
            er_msg_error("%s: %s: the path of '%s' is too long", s->inputs[i], what, pattern);
            return EXIT_USAGE;
        }
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        const char *d = slash ? (dir[0] ? dir : "/") : ".";
        if (strcmp(d, last) == 0)
            continue;
        int rc = probe_dir(d, what);
        if (rc)
            return rc;
        snprintf(last, sizeof last, "%s", d);
    }
    return 0;
}

/* Checks of a --tile-set run that need no pixels: every input is one of
 * the set's tiles, outputs are GeoTIFF (which backend runs is the
 * backend's capabilities' business, er_job_choose_backend). */
static int preflight_tiles(const er_settings *s)
{
    if (s->format == ER_OUT_PNG) {
        er_msg_error("--format png: tile sets are written as GeoTIFF (they need georeferencing)");
        return EXIT_USAGE;
    }
    if (s->stitch)
        return 0;
    for (int i = 0; i < s->n_inputs; i++)
        if (er_tile_set_find(s->tiles, s->inputs[i]) < 0) {
            er_msg_error("%s: not a tile of the --tile-set", s->inputs[i]);
            return EXIT_USAGE;
        }
    return 0;
}

int er_preflight_check(const er_settings *s, const er_stages *recipe)
{
    int rc = probe_dir(s->output_dir, "output directory");
    if (rc)
        return rc;
    if (s->tiles && (rc = preflight_tiles(s)) != 0)
        return rc;
    /* erode stitch checks its write targets in er_stitch_all, once it
     * knows which tiles and layers it writes, still before any work. */
    if (s->stitch)
        return 0;
    if (s->preview && (rc = probe_parents(s, s->preview, "--preview directory")) != 0)
        return rc;
    if (s->checkpoint && (rc = probe_parents(s, s->checkpoint, "--checkpoint directory")) != 0)
        return rc;
    if (s->frames && (rc = probe_dir(s->frames, "--frames directory")) != 0)
        return rc;
    /* No output may replace an input or another output (targets.c). */
    return er_targets_check(s, s->tiles, recipe);
}

size_t er_machine_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return SIZE_MAX;
    return (size_t)pages * (size_t)page;
}

/* A byte count for a message: GiB, MiB or KiB, whichever gives a number of
 * at least 1 (out: room for 32 characters). */
static const char *human(double bytes, char *out)
{
    static const char *const unit[] = {"KiB", "MiB", "GiB"};
    int u = 0;
    bytes /= 1024.0;
    while (u < 2 && bytes >= 1024.0) {
        bytes /= 1024.0;
        u++;
    }
    snprintf(out, 32, "%.1f %s", bytes, unit[u]);
    return out;
}

/* Bytes a cell of the control maps the recipe names: each raster is held
 * cut to the input's window (controls.c) for the whole run, once however
 * many stages name it. */
static size_t maps_bytes_per_cell(const er_stages *r)
{
    const char *seen[ER_JOB_RASTERS];
    int n = 0;
    for (int k = 0; k < er_stages_count(r); k++) {
        const er_control_paths *m = &er_stages_at(r, k)->maps;
        const char *path[ER_JOB_MAPS] = {m->hardness, m->rain, m->mask, m->sources, m->uplift};
        for (int i = 0; i < ER_JOB_MAPS; i++) {
            int dup = !path[i][0];
            for (int s = 0; s < n && !dup; s++)
                dup = strcmp(seen[s], path[i]) == 0;
            if (!dup)
                seen[n++] = path[i];
        }
    }
    return (size_t)n * sizeof(float);
}

/* The process itself, whatever the map: the binary and its libraries,
 * libgomp's threads, stdio and the codecs' buffers.  An 8x8 map with no
 * step peaks at 7.0 to 7.3 MiB resident, -j1 to -j8 (Debian 12). */
#define ER_PROCESS_BYTES ((size_t)15 << 19)

/* What the largest stage needs whatever the cells: before the plan the
 * models' bound (er_stages_bytes_fixed), once planned what each measured
 * on the map (core/plan.h bytes_map). */
static size_t stage_bytes(const er_job *j, char *what, size_t n)
{
    const size_t fixed = er_stages_bytes_fixed(&j->rc, what, n);
    if (j->plan.n == 0)
        return fixed;
    size_t most = 0;
    for (int k = 0; k < j->plan.n; k++)
        most = j->plan.plan[k].bytes_map > most ? j->plan.plan[k].bytes_map : most;
    return most;
}

/* The peak memory of a width x height run (a tile set's: the tile and its
 * halo), reached while the outputs are written: the process, per cell
 * the input's floats and nodata mask, the working heights, the water and
 * sediment layers (the caller's, or the model's own when it keeps them:
 * Mei's depth and sediment are these), the initial copy with checkpoints
 * or frames, the flow and wear layers when asked (the models accumulate
 * in them), the writer's layer buffer and its encoded tiles (at most a
 * float a cell), the control maps, the model's own per cell (the largest
 * stage's, and what the stages keep between them), and what the model
 * needs whatever the cells (stage_bytes: SPH's particles, stream power's
 * basins).  SIZE_MAX past a size_t. */
size_t er_job_memory(const er_job *j, int width, int height, char *what, size_t n)
{
    const er_settings *s = j->s;
    size_t cells = (size_t)width * (size_t)height, per_cell, need;
    const int flow = !!(s->layers & ER_LAYER_FLOW), wear = !!(s->layers & ER_LAYER_WEAR);
    const int initial = s->checkpoint || s->resume || s->frames;
    per_cell = (7 + (size_t)(initial + flow + wear)) * sizeof(float) + 2 +
               maps_bytes_per_cell(&j->rc) + er_stages_bytes_per_cell(&j->rc, flow, wear, 0);
    const size_t more[] = {ER_PROCESS_BYTES, stage_bytes(j, what, n)};
    if (!er_mul_size(cells, per_cell, &need))
        return SIZE_MAX;
    for (size_t k = 0; k < sizeof more / sizeof more[0]; k++) {
        if (more[k] > SIZE_MAX - need)
            return SIZE_MAX;
        need += more[k];
    }
    return need;
}

/* Refuses, before allocating, a run whose er_job_memory exceeds the limit. */
er_status er_job_check_memory(er_job *j, int width, int height, size_t limit)
{
    char what[64];
    const size_t need = er_job_memory(j, width, height, what, sizeof what);
    if (need <= limit)
        return ER_OK;
    char a[32], b[32], c[32];
    const size_t fixed = stage_bytes(j, what, sizeof what);
    const char *want = human((double)need, a);
    if (fixed > 0)
        return er_fail(&j->err, ER_ENOMEM, "%s: a %dx%d run needs %s (%s of it for %s), more "
                       "than --max-memory (%s)", j->input, width, height, want,
                       human((double)fixed, b), what, human((double)limit, c));
    return er_fail(&j->err, ER_ENOMEM, "%s: a %dx%d run needs %s, more than --max-memory (%s)",
                   j->input, width, height, want, human((double)limit, c));
}

/* A raster read must be a regular file: the readers open it more than
 * once (the format is told from its first bytes, libtiff seeks), so a FIFO
 * would hang and a terminal would be read twice. */
const char *er_not_regular(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
        return NULL; /* a missing file is reported by the reader */
    return S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a pipe" : "a device";
}

er_status er_job_check_input(er_job *j)
{
    const char *what = er_not_regular(j->input);
    if (!what)
        return ER_OK;
    return er_fail(&j->err, ER_EINVAL, "%s: not a regular file (%s); copy it to a file first",
                   j->input, what);
}
