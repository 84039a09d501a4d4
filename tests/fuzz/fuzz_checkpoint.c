/*
 * libFuzzer target: the checkpoint reader (io/checkpoint.c) on arbitrary
 * bytes.
 *
 * er_checkpoint_read checks a file against the identity of the run that
 * resumes it (model, map size, recipe and input hashes), which the CLI
 * takes from the recipe and the input image.  Here the identity is taken
 * from the bytes' own header, the map bounded to MAX_CELLS cells as an
 * input image would bound it, so that mutations reach past the identity
 * checks.  Each input is read three times:
 *
 *   as is         mostly refused by the header checksum;
 *   repaired      the version set to this erode's, the header checksum and
 *                 (when the length is right) the data checksum recomputed,
 *                 so the counters, the array mask, the lengths and the
 *                 arrays themselves are what the reader has to judge;
 *   mismatched    repaired but for the version, which stays as the bytes
 *                 have it, and read against an identity that differs in
 *                 the model, the size, the recipe or the input hash
 *                 (chosen by the length), so a mutated version and every
 *                 identity check are reached; must be refused unless
 *                 nothing differs.
 *
 * A refusal must be ER_EINVAL with one clean line naming the file, and
 * leave the checkpoint empty.  A checkpoint read must keep the header's
 * promises (checkpoint.h): the identity, n_arrays <= ER_STATE_ARRAYS,
 * arrays exactly where the mask says, inside the buffer, counters in
 * range; written back with er_checkpoint_write it must give the same bytes
 * (the format has one encoding; only the version's NUL padding may differ)
 * and read back to the same state, bit for bit.
 */
#define _GNU_SOURCE /* memfd_create in fuzz_util.h */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../io/checkpoint.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Largest map whose identity is taken from the header (7 arrays of 2^16
 * floats: 1.8 MiB); a larger claim is read against a 1 x 1 identity. */
#define MAX_CELLS ((uint64_t)1 << 16)
/* Inputs longer than this are only read as they are (the repaired copy
 * would double the memory for nothing). */
#define MAX_REPAIR ((size_t)8 << 20)

/* The identity a run with this header's model, size and hashes would
 * have; the size bounded as described above. */
static er_checkpoint_id id_of(const uint8_t *data, size_t size)
{
    er_checkpoint_id id = {ER_MODEL_MEI, 1, 1, 0, 0, "", 0};
    if (size < ER_CHECKPOINT_HEADER)
        return id;
    uint32_t w = er_fuzz_u32(data + 32), h = er_fuzz_u32(data + 36);
    id.model = (er_model_kind)er_fuzz_u32(data + 28);
    id.staged = (er_fuzz_u32(data + 44) >> 30) & 1u; /* a staged run's, with a stage section */
    if (w >= 1 && h >= 1 && (uint64_t)w * h <= MAX_CELLS) {
        id.width = (int)w;
        id.height = (int)h;
    }
    id.recipe_hash = er_fuzz_u64(data + 48);
    id.input_hash = er_fuzz_u64(data + 56);
    return id;
}

/* Format, version, header checksum and, when the file has exactly the length the
 * header announces, the data checksum made right (checkpoint.h). */
static void repair(uint8_t *d, size_t size)
{
    if (size < ER_CHECKPOINT_HEADER)
        return;
    for (int i = 0; i < 4; i++) /* format 3: the layout the rest assumes */
        d[8 + i] = (uint8_t)(ER_CHECKPOINT_FORMAT >> (8 * i));
    memset(d + 12, 0, 16);
    memcpy(d + 12, ERODE_VERSION, strlen(ERODE_VERSION) < 16 ? strlen(ERODE_VERSION) : 16);
    er_fuzz_put_u64(d + ER_CHECKPOINT_HEADER - 8, er_fnv1a64(ER_FNV1A64_INIT, d, ER_CHECKPOINT_HEADER - 8));
    uint64_t cells = (uint64_t)er_fuzz_u32(d + 32) * er_fuzz_u32(d + 36);
    uint32_t n_arrays = er_fuzz_u32(d + 40), mask = er_fuzz_u32(d + 44), present = 0;
    for (uint32_t i = 0; i < n_arrays && i < 32; i++)
        present += (mask >> i) & 1u;
    if (cells > MAX_CELLS || size != ER_CHECKPOINT_HEADER + 4 * cells * present + 8)
        return;
    uint64_t h = ER_FNV1A64_INIT;
    for (size_t i = ER_CHECKPOINT_HEADER; i + 8 < size; i += 4) {
        h ^= er_fuzz_u32(d + i);
        h *= UINT64_C(0x100000001b3);
    }
    er_fuzz_put_u64(d + size - 8, h);
}

static void check_refusal(er_status st, const er_checkpoint *c, const er_error *err, const char *path)
{
    ER_FUZZ_CHECK(st == ER_EINVAL, "status %d for a bad checkpoint: %s", (int)st, err->msg);
    char a[PATH_MAX + 32], b[PATH_MAX + 32];
    snprintf(a, sizeof a, "'%s': ", path);
    snprintf(b, sizeof b, "cannot read '%s': ", path);
    er_fuzz_check_error(st, err, strncmp(err->msg, b, strlen(b)) == 0 ? b : a);
    static const er_checkpoint empty;
    ER_FUZZ_CHECK(memcmp(c, &empty, sizeof *c) == 0, "a refused checkpoint is not empty");
}

static void check_state(const er_checkpoint *c, const er_checkpoint_id *id)
{
    const er_run_state *s = &c->state;
    /* a staged run's state is of its stage's model, which the plan checks */
    ER_FUZZ_CHECK((id->staged || s->model == id->model) && s->width == id->width &&
                      s->height == id->height, "identity");
    ER_FUZZ_CHECK(s->n_arrays >= 0 && s->n_arrays <= ER_STATE_ARRAYS, "n_arrays %d", s->n_arrays);
    ER_FUZZ_CHECK(s->boundary >= 0 && s->boundary <= s->boundaries, "boundary %lld of %lld",
                  (long long)s->boundary, (long long)s->boundaries);
    ER_FUZZ_CHECK(s->done >= 0 && s->done <= s->total, "done %lld of %lld", (long long)s->done,
                  (long long)s->total);
    size_t n = (size_t)id->width * (size_t)id->height, k = 0;
    for (int i = 0; i < ER_STATE_ARRAYS; i++) {
        if (!s->array[i])
            continue;
        ER_FUZZ_CHECK(i < s->n_arrays, "array %d of %d", i, s->n_arrays);
        ER_FUZZ_CHECK(s->array[i] == c->buf + k * n, "array %d is not where it belongs", i);
        k++;
    }
    ER_FUZZ_CHECK(k == 0 || c->buf != NULL, "arrays without a buffer");
}

/* Written back, the same bytes (but the version's padding and so the
 * header checksum) in the current format: a format-1 file's header with
 * the backend "cpu" and bytes 224..231 inserted before the header
 * checksum, a format-2 file's with them inserted, and those bytes zero
 * (formats 3 to 5 kept a model's budget value there, which the state holds
 * apart: er_run_state.legacy_slot); read back, the same state. */
static void roundtrip(const er_checkpoint *c, const er_checkpoint_id *id, const uint8_t *data, size_t size)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/rt.ckp", er_fuzz_dir());
    er_error err = {{0}};
    er_checkpoint_id wid = *id; /* written with the backend it was read with */
    snprintf(wid.backend, sizeof wid.backend, "%s", c->backend);
    er_status st = er_checkpoint_write(path, &c->state, &wid, &err);
    ER_FUZZ_CHECK(st == ER_OK, "cannot write what was read: %s", err.msg);
    FILE *f = fopen(path, "rb");
    ER_FUZZ_CHECK(f != NULL, "cannot open %s", path);
    const uint32_t format = er_fuzz_u32(data + 8);
    const int v1 = format == 1;
    const size_t hd = v1 ? ER_CHECKPOINT_HEADER_V1
                    : format == 2 ? ER_CHECKPOINT_HEADER_V2
                                  : ER_CHECKPOINT_HEADER; /* input header */
    const size_t grow = ER_CHECKPOINT_HEADER - hd, want = size + grow;
    uint8_t *back = malloc(want + 1);
    ER_FUZZ_CHECK(back != NULL, "out of memory");
    size_t got = fread(back, 1, want + 1, f);
    fclose(f);
    ER_FUZZ_CHECK(got == want, "written back: %zu bytes, expected %zu", got, want);
    ER_FUZZ_CHECK(er_fuzz_u32(back + 8) == ER_CHECKPOINT_FORMAT, "written as format %u", er_fuzz_u32(back + 8));
    /* the backend field: what was read (printable, "" as "cpu"), NUL-padded */
    char field[ER_CHECKPOINT_BACKEND] = {0};
    snprintf(field, sizeof field, "%s", c->backend[0] ? c->backend : "cpu");
    int same_header = hd == ER_CHECKPOINT_HEADER && memcmp(back, data, ER_CHECKPOINT_HEADER - 8) == 0;
    static const uint8_t zero8[8];
    ER_FUZZ_CHECK(memcmp(back, data, 8) == 0 && memcmp(back + 28, data + 28, 160 - 28) == 0
                      && memcmp(back + 160, field, sizeof field) == 0
                      && memcmp(back + 224, zero8, 8) == 0
                      && (!same_header || memcmp(back + hd - 8, data + hd - 8, 8) == 0)
                      && memcmp(back + ER_CHECKPOINT_HEADER, data + hd, size - hd) == 0,
                  "written back differently");
    ER_FUZZ_CHECK(!v1 || strcmp(c->backend, "cpu") == 0, "a format-1 file is not cpu's");
    ER_FUZZ_CHECK(strncmp((const char *)back + 12, (const char *)data + 12, 16) == 0, "version changed");
    free(back);

    er_checkpoint again;
    st = er_checkpoint_read(path, id, &again, &err);
    ER_FUZZ_CHECK(st == ER_OK, "cannot read back what was written: %s", err.msg);
    const er_run_state *a = &c->state, *b = &again.state;
    ER_FUZZ_CHECK(a->model == b->model && a->width == b->width && a->height == b->height
                      && a->n_arrays == b->n_arrays && a->boundary == b->boundary
                      && a->boundaries == b->boundaries && a->done == b->done && a->total == b->total,
                  "state changed");
    ER_FUZZ_CHECK(memcmp(&a->budget, &b->budget, sizeof a->budget) == 0, "budget changed");
    size_t n = (size_t)a->width * (size_t)a->height;
    for (int i = 0; i < ER_STATE_ARRAYS; i++) {
        ER_FUZZ_CHECK(!a->array[i] == !b->array[i], "array %d came back %s", i, b->array[i] ? "" : "missing");
        ER_FUZZ_CHECK(!a->array[i] || memcmp(a->array[i], b->array[i], n * sizeof(float)) == 0,
                      "array %d changed", i);
    }
    er_checkpoint_free(&again);
    ER_FUZZ_CHECK(unlink(path) == 0, "unlink");
}

/* Reads the bytes against id; returns 1 when they were read. */
static int read_one(const uint8_t *data, size_t size, const er_checkpoint_id *id)
{
    const char *path = er_fuzz_file(data, size);
    er_checkpoint c;
    er_error err = {{0}};
    er_status st = er_checkpoint_read(path, id, &c, &err);
    if (st != ER_OK) {
        check_refusal(st, &c, &err, path);
        return 0;
    }
    check_state(&c, id);
    roundtrip(&c, id, data, size);
    er_checkpoint_free(&c);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    er_checkpoint_id id = id_of(data, size);
    read_one(data, size, &id);
    if (size < ER_CHECKPOINT_HEADER || size > MAX_REPAIR)
        return 0;
    uint8_t *copy = er_fuzz_copy(data, size);
    repair(copy, size);
    read_one(copy, size, &id);

    memcpy(copy + 12, data + 12, 16);
    er_fuzz_put_u64(copy + ER_CHECKPOINT_HEADER - 8,
            er_fnv1a64(ER_FNV1A64_INIT, copy, ER_CHECKPOINT_HEADER - 8));
    int differs = 1;
    switch (size % 5) {
    case 0: differs = 0; break;
    case 1: /* not a difference the reader sees in a staged run's (the plan's) */
        id.model = id.model == ER_MODEL_MEI ? ER_MODEL_DROPLET : ER_MODEL_MEI;
        differs = !id.staged;
        break;
    case 2: id.width = id.width < 2 ? id.width + 1 : id.width - 1; break;
    case 3: id.recipe_hash ^= 1; break;
    default: id.input_hash ^= (uint64_t)1 << 63; break;
    }
    ER_FUZZ_CHECK(!read_one(copy, size, &id) || !differs, "read against another identity (case %zu)", size % 5);
    free(copy);
    return 0;
}
