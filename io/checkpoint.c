/*
 * Checkpoint files: see checkpoint.h for the format.  Numbers are encoded
 * byte by byte so the file is the same on any host.
 */
#include "checkpoint.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic.h"
#include "../core/bits.h"
#include "../core/models.h"
#include "../core/stages.h"

static const char magic[8] = {'E', 'R', 'O', 'D', 'E', 'C', 'K', 'P'};

#define VERSION_BYTES 16
/* Bit 31 of the header's array mask: a model section follows (format 4);
 * bit 30: a stage section (format 5). */
#define SECTION_BIT (1u << 31)
#define STAGE_BIT (1u << 30)
/* Bit 29: a budget terms section (format 6). */
#define TERMS_BIT (1u << 29)
#define SECTION_BITS (SECTION_BIT | STAGE_BIT | TERMS_BIT)
/* Arrays are converted through a buffer of this many floats. */
#define CHUNK_FLOATS 65536

uint64_t er_fnv1a64(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint64_t f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double bits_f64(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}


/* The data checksum: FNV-1a 64 folding one float's bits (a 32-bit word)
 * at a time, four times faster than byte by byte and as good at catching
 * a damaged or shifted file. */
static uint64_t fold_floats(uint64_t h, const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= er_float_bits(v[i]);
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* Floats as little-endian bytes (n <= CHUNK_FLOATS). */
static void encode_floats(unsigned char *out, const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put_u32(out + 4 * i, er_float_bits(v[i]));
}

uint64_t er_checkpoint_map_hash(const float *map, size_t n)
{
    if (!map)
        return 0;
    uint64_t h = ER_FNV1A64_INIT;
    unsigned char buf[4 * 1024];
    for (size_t i = 0; i < n; i += 1024) {
        size_t k = n - i < 1024 ? n - i : 1024;
        encode_floats(buf, map + i, k);
        h = er_fnv1a64(h, buf, 4 * k);
    }
    return h;
}

uint64_t er_checkpoint_fold_maps(uint64_t h, const uint64_t maps[5])
{
    if (maps[0] | maps[1] | maps[2] | maps[3]) {
        unsigned char b[32];
        for (int i = 0; i < 4; i++)
            put_u64(b + 8 * i, maps[i]);
        h = er_fnv1a64(h, b, sizeof b);
    }
    if (maps[4]) { /* the fifth after the four, so a run without it keeps its hash */
        unsigned char b[8];
        put_u64(b, maps[4]);
        h = er_fnv1a64(h, b, sizeof b);
    }
    return h;
}

uint64_t er_checkpoint_input_hash(int width, int height, double cell_x, double cell_y,
                                  const float *heights, const uint8_t *wall)
{
    unsigned char head[24];
    put_u32(head, (uint32_t)width);
    put_u32(head + 4, (uint32_t)height);
    put_u64(head + 8, f64_bits(cell_x));
    put_u64(head + 16, f64_bits(cell_y));
    uint64_t h = er_fnv1a64(ER_FNV1A64_INIT, head, sizeof head);
    const size_t n = (size_t)width * (size_t)height;
    unsigned char buf[4 * 1024];
    for (size_t i = 0; i < n; i += 1024) {
        size_t k = n - i < 1024 ? n - i : 1024;
        encode_floats(buf, heights + i, k);
        h = er_fnv1a64(h, buf, 4 * k);
    }
    static const unsigned char zero = 0;
    for (size_t i = 0; i < n; i++)
        h = er_fnv1a64(h, wall ? &wall[i] : &zero, 1);
    return h;
}

static void encode_header(unsigned char *p, const er_run_state *s, const er_checkpoint_id *id)
{
    memset(p, 0, ER_CHECKPOINT_HEADER);
    memcpy(p, magic, sizeof magic);
    put_u32(p + 8, ER_CHECKPOINT_FORMAT);
    strncpy((char *)p + 12, ERODE_VERSION, VERSION_BYTES);
    put_u32(p + 28, (uint32_t)s->model);
    put_u32(p + 32, (uint32_t)s->width);
    put_u32(p + 36, (uint32_t)s->height);
    put_u32(p + 40, (uint32_t)s->n_arrays);
    uint32_t mask = (s->extra ? SECTION_BIT : 0) | (s->stage ? STAGE_BIT : 0) |
                    (s->budget.term[0].name[0] ? TERMS_BIT : 0);
    for (int i = 0; i < s->n_arrays && i < ER_STATE_ARRAYS; i++)
        if (s->array[i])
            mask |= 1u << i;
    put_u32(p + 44, mask);
    put_u64(p + 48, id->recipe_hash);
    put_u64(p + 56, id->input_hash);
    const int64_t cnt[4] = {s->boundary, s->boundaries, s->done, s->total};
    for (int i = 0; i < 4; i++)
        put_u64(p + 64 + 8 * i, (uint64_t)cnt[i]);
    const er_budget *b = &s->budget;
    const double dv[6] = {b->material_before, b->eroded, b->deposited, b->left_map,
                          b->water_added, b->water_left};
    for (int i = 0; i < 6; i++)
        put_u64(p + 96 + 8 * i, f64_bits(dv[i]));
    put_u64(p + 144, (uint64_t)b->work_done);
    put_u64(p + 152, (uint64_t)b->substeps);
    snprintf((char *)p + 160, ER_CHECKPOINT_BACKEND, "%s", id->backend[0] ? id->backend : "cpu");
    put_u64(p + 232, er_fnv1a64(ER_FNV1A64_INIT, p, 232));
}

/* Bytes of the header of format `format` (1 to 3); its checksum is the
 * last 8. */
static size_t header_bytes(uint32_t format)
{
    return format == 1 ? ER_CHECKPOINT_HEADER_V1
         : format == 2 ? ER_CHECKPOINT_HEADER_V2
                       : ER_CHECKPOINT_HEADER;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Doubles as little-endian IEEE bits, folded into *h as written. */
static int write_doubles(int fd, const double *v, size_t n, uint64_t *h)
{
    unsigned char b[8 * 512];
    for (size_t i = 0; i < n; i += 512) {
        size_t m = n - i < 512 ? n - i : 512;
        for (size_t j = 0; j < m; j++)
            put_u64(b + 8 * j, f64_bits(v[i + j]));
        *h = er_fnv1a64(*h, b, 8 * m);
        if (write_all(fd, b, 8 * m))
            return -1;
    }
    return 0;
}

/* Floats as little-endian bytes through buf (CHUNK_FLOATS floats),
 * folded into *h one float at a time. */
static int write_floats(int fd, const float *v, size_t n, unsigned char *buf, uint64_t *h)
{
    for (size_t i = 0; i < n; i += CHUNK_FLOATS) {
        size_t m = n - i < CHUNK_FLOATS ? n - i : CHUNK_FLOATS;
        encode_floats(buf, v + i, m);
        *h = fold_floats(*h, v + i, m);
        if (write_all(fd, buf, 4 * m))
            return -1;
    }
    return 0;
}

/* The stage section after the arrays' checksum (checkpoint.h). */
static int write_stage(int fd, const er_run_stage *g, size_t cells, unsigned char *buf)
{
    unsigned char b[16];
    uint32_t mask = 0;
    for (int i = 0; i < g->n_arrays && i < ER_STAGE_ARRAYS; i++)
        if (g->array[i])
            mask |= 1u << i;
    put_u32(b, (uint32_t)g->index);
    put_u32(b + 4, (uint32_t)g->count);
    put_u32(b + 8, (uint32_t)g->n_arrays);
    put_u32(b + 12, mask);
    uint64_t h = er_fnv1a64(ER_FNV1A64_INIT, b, sizeof b);
    int bad = write_all(fd, b, sizeof b);
    for (int i = 0; i < g->n_arrays && !bad; i++)
        if (g->array[i])
            bad = write_floats(fd, g->array[i], cells, buf, &h);
    put_u64(b, (uint64_t)g->n_values);
    h = er_fnv1a64(h, b, 8);
    bad = bad || write_all(fd, b, 8) || write_doubles(fd, g->values, g->n_values, &h);
    put_u64(b, h);
    return bad || write_all(fd, b, 8);
}

/* The budget terms section after the arrays' checksum (checkpoint.h). */
static int write_terms(int fd, const er_budget *bud)
{
    unsigned char b[ER_TERM_NAME + 8];
    uint32_t n = 0;
    while (n < ER_BUDGET_TERMS && bud->term[n].name[0])
        n++;
    put_u32(b, n);
    uint64_t h = er_fnv1a64(ER_FNV1A64_INIT, b, 4);
    int bad = write_all(fd, b, 4);
    for (uint32_t i = 0; i < n && !bad; i++) {
        memset(b, 0, sizeof b);
        memcpy(b, bud->term[i].name, strnlen(bud->term[i].name, ER_TERM_NAME - 1));
        put_u64(b + ER_TERM_NAME, f64_bits(bud->term[i].value));
        h = er_fnv1a64(h, b, sizeof b);
        bad = write_all(fd, b, sizeof b);
    }
    put_u64(b, h);
    return bad || write_all(fd, b, 8);
}

/* The model section after the arrays' checksum (checkpoint.h). */
static int write_section(int fd, const er_run_extra *x)
{
    unsigned char b[16];
    put_u64(b, x->count[0]);
    put_u64(b + 8, x->count[1]);
    uint64_t h = er_fnv1a64(ER_FNV1A64_INIT, b, sizeof b);
    int bad = write_all(fd, b, sizeof b);
    for (int k = 0; k < x->n_parts && !bad; k++)
        bad = write_doubles(fd, x->part[k], x->len[k], &h);
    put_u64(b, h);
    return bad || write_all(fd, b, 8);
}

er_status er_checkpoint_write(const char *path, const er_run_state *state,
                              const er_checkpoint_id *id, er_error *err)
{
    const er_run_stage *g = state->stage;
    if (state->n_arrays < 0 || state->n_arrays > ER_STATE_ARRAYS || state->width < 1 ||
        state->height < 1 ||
        (state->extra && (state->extra->n_parts < 0 || state->extra->n_parts > ER_EXTRA_PARTS)) ||
        (g && (g->n_arrays < 0 || g->n_arrays > ER_STAGE_ARRAYS || g->index < 0 ||
               g->count < 1 || (g->n_values && !g->values))))
        return er_fail(err, ER_EINVAL, "cannot write '%s': not a valid run state", path);
    unsigned char head[ER_CHECKPOINT_HEADER];
    encode_header(head, state, id);
    unsigned char *buf = malloc(4 * CHUNK_FLOATS);
    if (!buf)
        return er_fail(err, ER_ENOMEM, "cannot write '%s': out of memory", path);
    er_atomic a;
    er_status st = er_atomic_open(&a, path, err);
    if (st) {
        free(buf);
        return st;
    }
    int bad = write_all(a.fd, head, sizeof head);
    uint64_t h = ER_FNV1A64_INIT;
    const size_t n = (size_t)state->width * (size_t)state->height;
    for (int k = 0; k < state->n_arrays && !bad; k++)
        if (state->array[k])
            bad = write_floats(a.fd, state->array[k], n, buf, &h);
    unsigned char tail[8];
    put_u64(tail, h);
    if (!bad)
        bad = write_all(a.fd, tail, sizeof tail);
    if (!bad && state->budget.term[0].name[0])
        bad = write_terms(a.fd, &state->budget);
    if (!bad && g)
        bad = write_stage(a.fd, g, n, buf);
    if (!bad && state->extra)
        bad = write_section(a.fd, state->extra);
    free(buf);
    if (bad) {
        st = er_fail(err, ER_EIO, "cannot write '%s': %s", path, strerror(errno));
        er_atomic_abort(&a);
        return st;
    }
    return er_atomic_commit(&a, err);
}

void er_checkpoint_free(er_checkpoint *c)
{
    free(c->buf);
    free(c->extra);
    free(c->stage_buf);
    free(c->stage_values);
    memset(c, 0, sizeof *c);
}

/* Checks the header against id; fills the state's scalars. */
static er_status check_header(const char *path, const unsigned char *p, const er_checkpoint_id *id,
                              er_checkpoint *out, uint32_t *mask, er_error *err)
{
    if (memcmp(p, magic, sizeof magic) != 0)
        return er_fail(err, ER_EINVAL, "'%s': not an erode checkpoint", path);
    uint32_t format = get_u32(p + 8);
    if (format < 1 || format > ER_CHECKPOINT_FORMAT)
        return er_fail(err, ER_EINVAL, "'%s': checkpoint format %u, this erode reads formats "
                       "1 to %d", path, format, ER_CHECKPOINT_FORMAT);
    size_t sum_at = header_bytes(format) - 8;
    if (get_u64(p + sum_at) != er_fnv1a64(ER_FNV1A64_INIT, p, sum_at))
        return er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (header checksum)", path);
    char version[VERSION_BYTES + 1];
    memcpy(version, p + 12, VERSION_BYTES);
    version[VERSION_BYTES] = '\0';
    for (char *c = version; *c; c++)
        if (*c < 0x20 || *c > 0x7e)
            *c = '?';
    if (strcmp(version, ERODE_VERSION) != 0)
        return er_fail(err, ER_EINVAL, "'%s': checkpoint written by erode %s, this is erode %s",
                       path, version, ERODE_VERSION);
    uint32_t model = get_u32(p + 28);
    if (!id->staged && model != (uint32_t)id->model)
        return er_fail(err, ER_EINVAL, "'%s': checkpoint of a %s run, the recipe runs %s", path,
                       er_model_name((er_model_kind)model), er_model_name(id->model));
    uint32_t w = get_u32(p + 32), h = get_u32(p + 36);
    if (w != (uint32_t)id->width || h != (uint32_t)id->height)
        return er_fail(err, ER_EINVAL, "'%s': checkpoint of a %ux%u map, the input is %dx%d",
                       path, w, h, id->width, id->height);
    if (get_u64(p + 48) != id->recipe_hash)
        return er_fail(err, ER_EINVAL, "'%s': checkpoint from another recipe", path);
    if (get_u64(p + 56) != id->input_hash)
        return er_fail(err, ER_EINVAL, "'%s': checkpoint from another input (its heights, "
                       "nodata or control rasters differ)", path);
    uint32_t n_arrays = get_u32(p + 40);
    *mask = get_u32(p + 44);
    uint32_t arrays = *mask & ~SECTION_BITS;
    if (n_arrays > ER_STATE_ARRAYS || (arrays >> n_arrays) != 0 ||
        (format < 4 && (*mask & SECTION_BIT)) || (format < 5 && (*mask & STAGE_BIT)) ||
        (format < 6 && (*mask & TERMS_BIT)))
        return er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (arrays)", path);
    if (!!(*mask & STAGE_BIT) != !!id->staged)
        return er_fail(err, ER_EINVAL, "'%s': checkpoint of a %s run, the recipe %s", path,
                       id->staged ? "one-model" : "staged",
                       id->staged ? "has stages" : "has none");
    if (id->staged && model >= ER_MODEL_KINDS)
        return er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (model)", path);
    er_run_state *s = &out->state;
    memset(s, 0, sizeof *s);
    if (format == 1)
        snprintf(out->backend, sizeof out->backend, "cpu");
    else
        for (int i = 0; i < ER_CHECKPOINT_BACKEND - 1; i++) /* printable, NUL-ended */
            out->backend[i] = p[160 + i] && (p[160 + i] < 0x20 || p[160 + i] > 0x7e) ? '?'
                                                                                  : (char)p[160 + i];
    s->model = (er_model_kind)model;
    s->width = id->width;
    s->height = id->height;
    s->n_arrays = (int)n_arrays;
    s->boundary = (int64_t)get_u64(p + 64);
    s->boundaries = (int64_t)get_u64(p + 72);
    s->done = (int64_t)get_u64(p + 80);
    s->total = (int64_t)get_u64(p + 88);
    if (s->boundary < 0 || s->boundary > s->boundaries || s->done < 0 || s->done > s->total)
        return er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (counters)", path);
    double *dv[6] = {&s->budget.material_before, &s->budget.eroded, &s->budget.deposited,
                     &s->budget.left_map, &s->budget.water_added, &s->budget.water_left};
    for (int i = 0; i < 6; i++)
        *dv[i] = bits_f64(get_u64(p + 96 + 8 * i));
    s->budget.work_done = (int64_t)get_u64(p + 144);
    s->budget.substeps = (int64_t)get_u64(p + 152);
    if (format >= 3 && format <= 5)
        s->legacy_slot = bits_f64(get_u64(p + 224));
    else if (format >= 6 && get_u64(p + 224) != 0)
        return er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (header)", path);
    /* The sums a resumed run adds to and reports: finite, the amounts and
     * counters >= 0 (what any run writes), but left_map, the net material
     * that crossed the map's edges, which is negative where a held edge
     * feeds the map (stream power's base level diffusing inwards). */
    int bad = !isfinite(s->budget.material_before) || !(s->legacy_slot >= 0) ||
              s->budget.work_done < 0 || s->budget.substeps < 0;
    for (int i = 1; i < 6; i++)
        bad |= !(isfinite(*dv[i]) && (*dv[i] >= 0 || dv[i] == &s->budget.left_map));
    if (bad || !isfinite(s->legacy_slot))
        return er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (budget)", path);
    return ER_OK;
}

/* Reads n doubles into v, folding their bytes into *h; 0 or -1. */
static int read_doubles(FILE *f, double *v, size_t n, uint64_t *h)
{
    unsigned char b[8 * 512];
    for (size_t i = 0; i < n; i += 512) {
        size_t m = n - i < 512 ? n - i : 512;
        if (fread(b, 8, m, f) != m)
            return -1;
        *h = er_fnv1a64(*h, b, 8 * m);
        for (size_t j = 0; j < m; j++)
            v[i + j] = bits_f64(get_u64(b + 8 * j));
    }
    return 0;
}

/* The budget terms section (write_terms) into the state's budget: at
 * most ER_BUDGET_TERMS terms, each a printable NUL-ended name (no two
 * alike) and a finite value. */
static er_status read_terms(FILE *f, const char *path, er_budget *bud, er_error *err)
{
    unsigned char b[ER_TERM_NAME + 8];
    if (fread(b, 1, 4, f) != 4)
        return er_fail(err, ER_EINVAL, "'%s': truncated checkpoint (budget terms)", path);
    const uint32_t n = get_u32(b);
    uint64_t h = er_fnv1a64(ER_FNV1A64_INIT, b, 4);
    if (n < 1 || n > ER_BUDGET_TERMS)
        return er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (budget terms)", path);
    for (uint32_t i = 0; i < n; i++) {
        if (fread(b, 1, sizeof b, f) != sizeof b)
            return er_fail(err, ER_EINVAL, "'%s': truncated checkpoint (budget terms)", path);
        h = er_fnv1a64(h, b, sizeof b);
        const size_t len = strnlen((const char *)b, ER_TERM_NAME);
        int bad = len == 0 || len >= ER_TERM_NAME;
        for (size_t c = 0; c < ER_TERM_NAME && !bad; c++)
            bad = c < len ? b[c] < 0x20 || b[c] > 0x7e : b[c] != 0;
        const double v = bits_f64(get_u64(b + ER_TERM_NAME));
        bad = bad || !isfinite(v) || er_budget_has_term(bud, (const char *)b);
        double *slot = bad ? NULL : er_budget_term(bud, (const char *)b);
        if (!slot)
            return er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (budget terms)", path);
        *slot = v;
    }
    if (fread(b, 1, 8, f) != 8)
        return er_fail(err, ER_EINVAL, "'%s': truncated checkpoint (budget terms)", path);
    if (get_u64(b) != h)
        return er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (budget terms checksum)", path);
    return ER_OK;
}

/* The model section (write_section), its size taken from the bytes left
 * in the file: what fits the model is the model's check. */
static er_status read_section(FILE *f, const char *path, er_checkpoint *out, er_error *err)
{
    const char *name = er_model_name(out->state.model);
    unsigned char b[16];
    long here = ftell(f), end = -1;
    if (here >= 0 && fseek(f, 0, SEEK_END) == 0)
        end = ftell(f);
    if (end < here + (long)sizeof b + 8 || fseek(f, here, SEEK_SET) ||
        fread(b, 1, sizeof b, f) != sizeof b)
        return er_fail(err, ER_EINVAL, "'%s': truncated checkpoint (%s section)", path, name);
    const uint64_t left = (uint64_t)(end - here) - sizeof b - 8;
    if (left % 8 != 0)
        return er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (%s section)", path, name);
    size_t doubles = (size_t)(left / 8);
    er_run_extra *x = out->extra = malloc(sizeof *x + (doubles + 1) * sizeof(double));
    if (!x)
        return er_fail(err, ER_ENOMEM, "'%s': out of memory for the checkpoint", path);
    double *v = (double *)(void *)(x + 1);
    memset(x, 0, sizeof *x);
    x->count[0] = get_u64(b);
    x->count[1] = get_u64(b + 8);
    x->n_parts = 1;
    x->part[0] = v;
    x->len[0] = doubles;
    uint64_t h = er_fnv1a64(ER_FNV1A64_INIT, b, sizeof b);
    if (read_doubles(f, v, doubles, &h) || fread(b, 1, 8, f) != 8)
        return er_fail(err, ER_EINVAL, "'%s': truncated checkpoint (%s section)", path, name);
    if (get_u64(b) != h)
        return er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (%s section checksum)", path,
                       name);
    out->state.extra = x;
    return ER_OK;
}

/* Reads n floats into v (n * 4 bytes) through buf, folding them into *h;
 * 0 or -1. */
static int read_floats(FILE *f, float *v, size_t n, unsigned char *buf, uint64_t *h)
{
    for (size_t i = 0; i < n; i += CHUNK_FLOATS) {
        size_t m = n - i < CHUNK_FLOATS ? n - i : CHUNK_FLOATS;
        if (fread(buf, 4, m, f) != m)
            return -1;
        for (size_t j = 0; j < m; j++)
            v[i + j] = er_bits_float(get_u32(buf + 4 * j));
        *h = fold_floats(*h, v + i, m);
    }
    return 0;
}

/* The stage section (write_stage), its values' count checked against the
 * bytes left in the file before it is allocated. */
static er_status read_stage(FILE *f, const char *path, size_t cells, unsigned char *buf,
                            er_checkpoint *out, er_error *err)
{
    unsigned char b[16];
    er_run_stage *g = &out->stage;
    if (fread(b, 1, sizeof b, f) != sizeof b)
        return er_fail(err, ER_EINVAL, "'%s': truncated checkpoint (stage section)", path);
    uint64_t h = er_fnv1a64(ER_FNV1A64_INIT, b, sizeof b);
    uint32_t index = get_u32(b), count = get_u32(b + 4), n_arrays = get_u32(b + 8);
    uint32_t mask = get_u32(b + 12);
    if (count < 1 || index >= count || count > ER_MAX_STAGES || n_arrays > ER_STAGE_ARRAYS ||
        (mask >> n_arrays) != 0)
        return er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (stage section)", path);
    int present = 0;
    for (uint32_t i = 0; i < n_arrays; i++)
        present += (mask >> i) & 1u;
    size_t floats;
    if (present && (!er_mul_size(cells, (size_t)present, &floats) ||
                    !(out->stage_buf = malloc(floats * sizeof(float)))))
        return er_fail(err, ER_ENOMEM, "'%s': out of memory for the checkpoint", path);
    memset(g, 0, sizeof *g);
    g->index = (int)index;
    g->count = (int)count;
    g->n_arrays = (int)n_arrays;
    float *dst = out->stage_buf;
    for (uint32_t i = 0; i < n_arrays; i++) {
        if (!((mask >> i) & 1u))
            continue;
        if (read_floats(f, dst, cells, buf, &h))
            return er_fail(err, ER_EINVAL, "'%s': truncated checkpoint (stage section)", path);
        g->array[i] = dst;
        dst += cells;
    }
    long here = ftell(f), end = -1;
    if (here >= 0 && fseek(f, 0, SEEK_END) == 0)
        end = ftell(f);
    if (end < here + 16 || fseek(f, here, SEEK_SET) || fread(b, 1, 8, f) != 8)
        return er_fail(err, ER_EINVAL, "'%s': truncated checkpoint (stage section)", path);
    uint64_t n = get_u64(b);
    if (n > (uint64_t)(end - here - 16) / 8)
        return er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (stage section)", path);
    h = er_fnv1a64(h, b, 8);
    if (!(out->stage_values = malloc(((size_t)n + 1) * sizeof(double))))
        return er_fail(err, ER_ENOMEM, "'%s': out of memory for the checkpoint", path);
    if (read_doubles(f, out->stage_values, (size_t)n, &h) || fread(b, 1, 8, f) != 8)
        return er_fail(err, ER_EINVAL, "'%s': truncated checkpoint (stage section)", path);
    if (get_u64(b) != h)
        return er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (stage section checksum)", path);
    g->n_values = (size_t)n;
    g->values = out->stage_values;
    out->state.stage = g;
    return ER_OK;
}

/* Whether a model section follows the arrays: the header says so (format
 * 4), or bytes remain after them (format 3). */
static int has_section(FILE *f, uint32_t format, uint32_t mask)
{
    if (format >= 4)
        return (mask & SECTION_BIT) != 0;
    int c = fgetc(f);
    if (c == EOF)
        return 0;
    ungetc(c, f);
    return 1;
}

er_status er_checkpoint_read(const char *path, const er_checkpoint_id *id, er_checkpoint *out,
                             er_error *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return er_fail(err, ER_EIO, "cannot read '%s': %s", path, strerror(errno));
    unsigned char head[ER_CHECKPOINT_HEADER], tail[8];
    unsigned char *buf = NULL;
    er_status st = ER_OK;
    uint32_t mask = 0;
    size_t got = fread(head, 1, ER_CHECKPOINT_HEADER_V1, f);
    if (got < sizeof magic || memcmp(head, magic, sizeof magic) != 0) {
        st = ferror(f) ? er_fail(err, ER_EIO, "cannot read '%s'", path)
                       : er_fail(err, ER_EINVAL, "'%s': not an erode checkpoint", path);
        goto done;
    }
    const size_t hb = header_bytes(get_u32(head + 8));
    if (got == ER_CHECKPOINT_HEADER_V1 && hb > got)
        got += fread(head + got, 1, hb - got, f);
    if (got < hb) {
        st = er_fail(err, ER_EINVAL, "'%s': truncated checkpoint", path);
        goto done;
    }
    if ((st = check_header(path, head, id, out, &mask, err)))
        goto done;
    const size_t n = (size_t)id->width * (size_t)id->height;
    int present = 0;
    for (int i = 0; i < out->state.n_arrays; i++)
        present += (mask >> i) & 1u;
    size_t floats;
    if (!er_mul_size(n, (size_t)(present > 0 ? present : 1), &floats) ||
        !(out->buf = malloc(floats * sizeof(float))) || !(buf = malloc(4 * CHUNK_FLOATS))) {
        st = er_fail(err, ER_ENOMEM, "'%s': out of memory for the checkpoint", path);
        goto done;
    }
    uint64_t h = ER_FNV1A64_INIT;
    float *dst = out->buf;
    for (int k = 0; k < out->state.n_arrays; k++) {
        if (!((mask >> k) & 1u))
            continue;
        out->state.array[k] = dst;
        for (size_t i = 0; i < n; i += CHUNK_FLOATS) {
            size_t m = n - i < CHUNK_FLOATS ? n - i : CHUNK_FLOATS;
            if (fread(buf, 4, m, f) != m) {
                st = ferror(f) ? er_fail(err, ER_EIO, "cannot read '%s'", path)
                               : er_fail(err, ER_EINVAL, "'%s': truncated checkpoint", path);
                goto done;
            }
            for (size_t j = 0; j < m; j++)
                dst[j] = er_bits_float(get_u32(buf + 4 * j));
            h = fold_floats(h, dst, m);
            dst += m;
        }
    }
    if (fread(tail, 1, sizeof tail, f) != sizeof tail) {
        st = er_fail(err, ER_EINVAL, "'%s': truncated checkpoint", path);
        goto done;
    }
    if ((mask & TERMS_BIT) && (st = read_terms(f, path, &out->state.budget, err)))
        goto done;
    if ((mask & STAGE_BIT) && (st = read_stage(f, path, n, buf, out, err)))
        goto done;
    if (has_section(f, get_u32(head + 8), mask) && (st = read_section(f, path, out, err)))
        goto done;
    if (fgetc(f) != EOF) {
        st = er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (trailing bytes)", path);
        goto done;
    }
    if (get_u64(tail) != h)
        st = er_fail(err, ER_EINVAL, "'%s': corrupt checkpoint (data checksum)", path);
done:
    fclose(f);
    free(buf);
    if (st)
        er_checkpoint_free(out);
    return st;
}

er_status er_checkpoint_same_backend(const er_checkpoint *c, const char *path,
                                     const char *backend, er_error *err)
{
    const char *b = backend[0] ? backend : "cpu";
    if (strcmp(c->backend, b) == 0)
        return ER_OK;
    return er_fail(err, ER_EINVAL, "'%s': checkpoint of a run on %s, this run is on %s; "
                   "resume it with the backend that started it", path, c->backend, b);
}

int er_checkpoint_looks_like_one(const char *path)
{
    unsigned char head[sizeof magic];
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    return got == sizeof head && memcmp(head, magic, sizeof magic) == 0;
}
