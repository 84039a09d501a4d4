/*
 * The hostile-input corpus (tests/data/bad/MANIFEST) straight through the
 * readers: each input file through er_image_read and each recipe through
 * er_recipe_load, with the outcome the manifest gives -- a failure whose
 * one-line message holds the listed text and leaves the image empty, or an
 * image that keeps the reader's promises.  tests/integration/60-corpus.sh
 * runs the same lines through the CLI.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../io/image.h"
#include "../../io/recipe.h"
#include "test_util.h"

#define LINE_MAX_LEN 1024

/* One line of the manifest. */
typedef struct entry {
    char file[256];
    int exit_code;
    char message[512];
    char kind[16];
    char options[128];
} entry;

static FILE *open_manifest(void)
{
    char p[PATH_MAX];
    FILE *f = fopen(er_test_path(p, sizeof p, "tests/data/bad/MANIFEST"), "r");
    return f;
}

/* Splits a TAB-separated line into its fields: 1 for an entry, 0 for a
 * comment or blank line, -1 for a malformed line. */
static int parse_line(char *line, entry *e)
{
    char *field[5] = {NULL, NULL, NULL, NULL, NULL};
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] == '#' || line[0] == '\0')
        return 0;
    for (char *p = line; p && n < 5;) {
        field[n++] = p;
        p = strchr(p, '\t');
        if (p)
            *p++ = '\0';
    }
    if (n < 4)
        return -1;
    snprintf(e->file, sizeof e->file, "%s", field[0]);
    e->exit_code = atoi(field[1]);
    snprintf(e->message, sizeof e->message, "%s", field[2]);
    snprintf(e->kind, sizeof e->kind, "%s", field[3]);
    snprintf(e->options, sizeof e->options, "%s", n == 5 ? field[4] : "");
    return 1;
}

/* The manifest's entries, counted (for the loop test's range). */
static int count_entries(void)
{
    FILE *f = open_manifest();
    char line[LINE_MAX_LEN];
    entry e;
    int n = 0;
    if (!f)
        return 1; /* one iteration, which reports the missing file */
    while (fgets(line, sizeof line, f))
        n += parse_line(line, &e) != 0;
    fclose(f);
    return n;
}

static void get_entry(int index, entry *e)
{
    FILE *f = open_manifest();
    char line[LINE_MAX_LEN];
    int n = 0;
    ck_assert_msg(f != NULL, "cannot open tests/data/bad/MANIFEST");
    while (fgets(line, sizeof line, f)) {
        char copy[LINE_MAX_LEN];
        snprintf(copy, sizeof copy, "%s", line);
        int r = parse_line(line, e);
        if (r != 0 && n++ == index) {
            fclose(f);
            ck_assert_msg(r == 1, "malformed manifest line: %s", copy);
            return;
        }
    }
    fclose(f);
    ck_abort_msg("no manifest entry %d", index);
}

/* --band N and --max-memory N[MG] as the CLI would pass them on; the
 * default limit is 1 GiB (every valid map here is tiny). */
static er_read_opts read_opts(const entry *e)
{
    er_read_opts o = {.max_bytes = (size_t)1 << 30};
    const char *b = strstr(e->options, "--band ");
    const char *m = strstr(e->options, "--max-memory ");
    if (b)
        o.band = atoi(b + 7);
    if (m) {
        char *end;
        double v = strtod(m + 13, &end);
        o.max_bytes = (size_t)(v * (*end == 'G' ? 1073741824.0 : *end == 'M' ? 1048576.0 : 1.0));
    }
    return o;
}

static void assert_one_line(const er_error *err)
{
    size_t n = strlen(err->msg);
    ck_assert_uint_gt(n, 0);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg((unsigned char)err->msg[i] >= 0x20, "control byte in '%s'", err->msg);
    ck_assert_int_ne(err->msg[n - 1], '.');
}

static void check_input(const entry *e, const char *path)
{
    er_read_opts o = read_opts(e);
    er_image img;
    er_error err = {{0}};
    er_status st = er_image_read(path, &o, &img, &err);
    if (e->exit_code != 0) {
        ck_assert_msg(st != ER_OK, "%s: read succeeded, expected '%s'", e->file, e->message);
        assert_one_line(&err);
        ck_assert_msg(strstr(err.msg, e->message) != NULL, "%s: '%s' lacks '%s'", e->file, err.msg, e->message);
        ck_assert_msg(strstr(err.msg, path) != NULL, "%s: '%s' does not name the file", e->file, err.msg);
        ck_assert_ptr_null(img.data);
        ck_assert_ptr_null(img.nodata);
        ck_assert_int_eq(img.width, 0);
        return;
    }
    ck_assert_msg(st == ER_OK, "%s: %s", e->file, err.msg);
    ck_assert_int_gt(img.width, 0);
    ck_assert_int_gt(img.height, 0);
    /* "ok-WxH..." names its size. */
    int w, h;
    if (sscanf(e->file, "ok-%dx%d", &w, &h) == 2) {
        ck_assert_int_eq(img.width, w);
        ck_assert_int_eq(img.height, h);
    }
    size_t n = (size_t)img.width * (size_t)img.height, nodata = 0, nonfinite = 0;
    for (size_t i = 0; i < n; i++) {
        int nd = img.nodata && img.nodata[i];
        if (!isfinite(img.data[i])) {
            nonfinite++;
            ck_assert_msg(nd, "%s: cell %zu is %g but not nodata", e->file, i, (double)img.data[i]);
        }
        nodata += (size_t)nd;
    }
    /* "ok-all-..." maps have no valid cell; ok-nan-inf.tif has exactly its
     * four NaN and infinite cells as nodata. */
    if (strncmp(e->file, "ok-all-", 7) == 0)
        ck_assert_uint_eq(nodata, n);
    if (strcmp(e->file, "ok-nan-inf.tif") == 0) {
        ck_assert_uint_eq(nonfinite, 4);
        ck_assert_uint_eq(nodata, 4);
    }
    er_image_free(&img);
}

static void check_recipe(const entry *e, const char *path)
{
    er_params p;
    er_error err = {{0}};
    er_status st = er_recipe_load(path, NULL, 0, &p, &err);
    if (e->exit_code == 0) {
        ck_assert_msg(st == ER_OK, "%s: %s", e->file, err.msg);
        return;
    }
    ck_assert_msg(st != ER_OK, "%s: recipe accepted, expected '%s'", e->file, e->message);
    assert_one_line(&err);
    ck_assert_msg(strncmp(err.msg, path, strlen(path)) == 0, "%s: '%s' does not start with the file", e->file,
                  err.msg);
    ck_assert_msg(strstr(err.msg, e->message) != NULL, "%s: '%s' lacks '%s'", e->file, err.msg, e->message);
}

START_TEST(manifest_entry)
{
    entry e;
    char path[PATH_MAX], rel[300];
    get_entry(_i, &e);
    snprintf(rel, sizeof rel, "tests/data/bad/%s", e.file);
    er_test_path(path, sizeof path, rel);
    ck_assert_msg(access(path, R_OK) == 0, "%s listed but missing", e.file);
    ck_assert_msg(e.exit_code == 0 || e.exit_code == 2, "%s: exit %d", e.file, e.exit_code);
    if (strcmp(e.kind, "input") == 0)
        check_input(&e, path);
    else if (strcmp(e.kind, "recipe") == 0)
        check_recipe(&e, path);
    else
        ck_abort_msg("%s: unknown kind '%s'", e.file, e.kind);
}
END_TEST

/* Every file in tests/data/bad/ has a manifest line (a new one cannot be
 * forgotten). */
START_TEST(every_file_listed)
{
    char dirp[PATH_MAX], cmd[PATH_MAX + 64], name[512], line[LINE_MAX_LEN];
    er_test_path(dirp, sizeof dirp, "tests/data/bad");
    snprintf(cmd, sizeof cmd, "ls '%s'", dirp);
    FILE *ls = popen(cmd, "r");
    ck_assert_ptr_nonnull(ls);
    while (fgets(name, sizeof name, ls)) {
        name[strcspn(name, "\n")] = '\0';
        if (strcmp(name, "MANIFEST") == 0 || strcmp(name, "generate.py") == 0)
            continue;
        FILE *f = open_manifest();
        ck_assert_ptr_nonnull(f);
        int found = 0;
        entry e;
        while (!found && fgets(line, sizeof line, f))
            found = parse_line(line, &e) == 1 && strcmp(e.file, name) == 0;
        fclose(f);
        ck_assert_msg(found, "tests/data/bad/%s has no MANIFEST line", name);
    }
    pclose(ls);
}
END_TEST

/* fuzz-png-text-chunk-2gib.png claims a 2 GiB tEXt chunk in a 200-byte
 * file; libpng allocates a text chunk's claimed length before reading it
 * unless the reader stops it first.  Under a 512 MiB address-space limit
 * the read must still end in the same "truncated file" (a 2 GiB attempt
 * fails there and gives another message).  Not under AddressSanitizer,
 * whose shadow memory needs far more address space than that. */
START_TEST(png_chunk_allocation_bounded)
{
#if defined(__SANITIZE_ADDRESS__)
    ER_SKIP_IF(1, "address-space limit not usable under AddressSanitizer");
#else
    char path[PATH_MAX];
    er_test_path(path, sizeof path, "tests/data/bad/fuzz-png-text-chunk-2gib.png");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct rlimit rl = {(rlim_t)512 << 20, (rlim_t)512 << 20};
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(3);
        er_image img;
        er_error err = {{0}};
        er_status st = er_png_read(path, NULL, &img, &err);
        _exit(st == ER_EFORMAT && strstr(err.msg, "truncated file") ? 0 : 1);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "read under a 512 MiB limit: status %d", status);
#endif
}
END_TEST

Suite *corpus_suite(void);
Suite *corpus_suite(void)
{
    Suite *s = suite_create("corpus");
    TCase *tc = tcase_create("manifest");
    tcase_add_loop_test(tc, manifest_entry, 0, count_entries());
    tcase_add_test(tc, every_file_listed);
    tcase_add_test(tc, png_chunk_allocation_bounded);
    suite_add_tcase(s, tc);
    return s;
}
