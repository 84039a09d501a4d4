/* Which backend runs: the Vulkan one opened once for all inputs, the
 * CPU path for what it cannot run (--backend auto), and --list-devices. */
#include "backends.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../io/atomic.h"
#include "../io/text.h"
#include "paths.h"

/* The pipeline cache file (core/vulkan/vk_cache.c makes its bytes). */
#define CACHE_NAME "vulkan-pipelines.bin"
#define CACHE_DIR "erode"
/* A pipeline cache larger than this is not one of ours: not read. */
#define CACHE_MAX ((off_t)256 << 20)

/* Stage k's backend: Vulkan when it is open and can run the stage's
 * plan; with --backend auto what it cannot run goes to the CPU path, with
 * --backend vulkan that is an input error (exit 2).  A stage of a staged
 * recipe whose model has no Vulkan path runs on the CPU (*has_path stays
 * 0 for it). */
static er_status choose_stage(er_job *j, er_vk_ctx *vk, int k, int *has_path)
{
    const er_settings *s = j->s;
    const er_model_kind model = j->plan.p[k].model;
    unsigned need = (j->windowed ? ER_CAP_WINDOW : 0u) |
                    (s->checkpoint || s->resume || s->frames ? ER_CAP_HOOKS : 0u);
    char stage[32] = "";
    er_error e = {{0}};
    er_status st;
    if (j->plan.staged)
        snprintf(stage, sizeof stage, "stages[%d]: ", k);
    j->where[k] = (er_stage_backend){&er_backend_cpu, NULL};
    /* The CPU path is the reference: what it cannot run is refused
     * before any output or checkpoint is opened. */
    if ((er_backend_cpu.caps(model) & need) != need)
        return er_fail(&j->err, ER_EUNSUPPORTED, "%s: %s%s: %s runs on no backend", j->input,
                       stage, er_model_name(model),
                       (need & ~er_backend_cpu.caps(model) & ER_CAP_WINDOW)
                           ? "--tile-set" : "--checkpoint/--resume/--frames");
    if (!vk || (j->plan.staged && !er_backend_vulkan.caps(model)))
        return ER_OK;
    *has_path = 1;
    er_terrain tk = j->terrain;
    tk.controls = j->stage_controls[k];
    const unsigned vk_caps = er_backend_vulkan.caps(model);
    if (vk_caps && (vk_caps & need) != need) /* a model without a Vulkan path: check says so */
        st = er_fail(&e, ER_EUNSUPPORTED, "--checkpoint, --resume, --frames and --tile-set run "
                     "on the cpu backend only for the %s model", er_model_name(model));
    else
        st = er_backend_vulkan.check(vk, &j->plan.plan[k], &tk, &e);
    if (st == ER_OK) {
        j->where[k] = (er_stage_backend){&er_backend_vulkan, vk};
        return ER_OK;
    }
    if (s->backend == ER_BACKEND_AUTO)
        return ER_OK;
    return er_fail(&j->err, st, "%s: %s%s", j->input, stage, e.msg);
}

/* Each stage's backend (choose_stage); with --backend vulkan a staged
 * recipe none of whose stages has a Vulkan path is an input error. */
er_status er_job_choose_backend(er_job *j, er_vk_ctx *vk)
{
    int has_path = 0;
    for (int k = 0; k < j->plan.n; k++) {
        er_status st = choose_stage(j, vk, k, &has_path);
        if (st)
            return st;
    }
    if (!vk || has_path || !j->plan.staged || j->s->backend != ER_BACKEND_VULKAN)
        return ER_OK;
    char with[128] = "";
    for (int m = 0; m < ER_MODEL_KINDS; m++)
        if (er_backend_vulkan.caps((er_model_kind)m))
            snprintf(with + strlen(with), sizeof with - strlen(with), "%s%s", with[0] ? ", " : "",
                     er_model_name((er_model_kind)m));
    return er_fail(&j->err, ER_EUNSUPPORTED, "%s: --backend vulkan: no stage of the recipe has "
                   "a Vulkan path (the models with one: %s)", j->input, with);
}

/* The Vulkan context a stage of this run uses, or NULL. */
static er_vk_ctx *vulkan_of(const er_job *j)
{
    for (int k = 0; k < j->plan.n; k++)
        if (j->where[k].ctx)
            return j->where[k].ctx;
    return NULL;
}

/* The backend a checkpoint of this run records, and a --resume state
 * from another backend (or device, or driver) refused (io/checkpoint.h). */
er_status er_job_check_resume_backend(er_job *j)
{
    er_vk_ctx *vk = vulkan_of(j);
    const er_vk_device_info *d = vk ? er_vk_info(vk) : NULL;
    if (d)
        snprintf(j->ck_id.backend, sizeof j->ck_id.backend, "vulkan %.34s (driver %#x)",
                 d->name, d->driver_version);
    else
        snprintf(j->ck_id.backend, sizeof j->ck_id.backend, "cpu");
    if (!j->resumed.buf)
        return ER_OK;
    er_error e = {{0}};
    char path[PATH_MAX];
    er_path_pattern(path, sizeof path, j->s->resume, j->name);
    if (er_checkpoint_same_backend(&j->resumed, path, j->ck_id.backend, &e))
        return er_fail(&j->err, ER_EINVAL, "%s: --resume: %s", j->input, e.msg);
    return ER_OK;
}

/* What the models' Vulkan paths say of device d (their vk_describe), each
 * after "; ", into buf (n bytes). */
static void describe_models(const er_vk_device_info *d, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < ER_MODEL_KINDS && len < n; k++) {
        const er_model_ops *m = er_model((er_model_kind)k);
        char phrase[256];
        if (!m || !m->vk_describe)
            continue;
        m->vk_describe(d, phrase, sizeof phrase);
        int w = snprintf(buf + len, n - len, "; %s", phrase);
        len += w > 0 ? (size_t)w : 0;
    }
}

int er_backend_list_devices(void)
{
    er_vk_device_info dev[16];
    er_error err = {{0}};
    int n = 0;
    if (er_vk_list_devices(dev, 16, &n, &err) != ER_OK) {
        er_msg_error("--list-devices: %s", err.msg);
        return EXIT_USAGE;
    }
    if (n == 0) {
        er_msg_error("--list-devices: vulkan: no Vulkan device found");
        return EXIT_USAGE;
    }
    for (int i = 0; i < n && i < 16; i++) {
        const er_vk_device_info *d = &dev[i];
        char models[1024];
        describe_models(d, models, sizeof models);
        printf("%d: %s (%s, Vulkan %u.%u, %.0f MiB device memory, maxStorageBufferRange %.0f MiB%s)"
               "%s\n",
               d->index, d->name, er_vk_type_name(d->type), d->api_version >> 22,
               (d->api_version >> 12) & 0x3ffu, (double)d->device_local_bytes / 1048576.0,
               (double)d->max_storage_buffer_range / 1048576.0,
               d->has_compute ? "" : ", no compute queue", models);
    }
    return er_msg_stdout_done("the device list") ? EXIT_RUN_FAILED : 0;
}

/* ERODE_VK_BAND_BYTES=N: the most bytes of one layer buffer of a model's
 * Vulkan path, so that any device runs the path a map larger than one
 * buffer takes (erode-models(7), "VULKAN BACKEND"); unset or 0: the
 * device's limits.  Anything but a number is exit 2. */
static int buffer_cap(uint64_t *out)
{
    const char *v = getenv("ERODE_VK_BAND_BYTES");
    char *end = NULL;
    *out = 0;
    if (!v || !*v)
        return 0;
    errno = 0;
    unsigned long long b = strtoull(v, &end, 10);
    if (errno || *end || *v < '0' || *v > '9') {
        er_msg_error("ERODE_VK_BAND_BYTES: '%s' is not a number of bytes", v);
        return EXIT_USAGE;
    }
    *out = (uint64_t)b;
    return 0;
}

/* Where the pipeline cache lives: ERODE_VK_PIPELINE_CACHE (a file; "off"
 * or empty: none), else $XDG_CACHE_HOME/erode/ (an absolute path, as the
 * XDG base directory spec requires), else ~/.cache/erode/.  1 and path
 * when there is one; *own_dir: the directories are ours to create. */
static int cache_path(char *path, size_t n, int *own_dir)
{
    const char *env = getenv("ERODE_VK_PIPELINE_CACHE");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int len;
    *own_dir = 0;
    if (env)
        len = strcmp(env, "off") == 0 || !*env ? -1 : snprintf(path, n, "%s", env);
    else if ((*own_dir = 1) && xdg && xdg[0] == '/')
        len = snprintf(path, n, "%s/" CACHE_DIR "/" CACHE_NAME, xdg);
    else if (home && home[0] == '/')
        len = snprintf(path, n, "%s/.cache/" CACHE_DIR "/" CACHE_NAME, home);
    else
        len = -1;
    return len > 0 && (size_t)len < n;
}

int er_backend_cache_path(const er_settings *s, char *path, size_t n)
{
    int own_dir;
#ifdef ER_HAVE_VULKAN
    return s->backend != ER_BACKEND_CPU && cache_path(path, n, &own_dir);
#else
    (void)s, (void)path, (void)n, (void)own_dir;
    return 0;
#endif
}

/* The cache file's bytes (malloc'd) when it is a regular file of a sane
 * size, else NULL: a missing or unreadable cache is a cold one. */
static void *cache_read(const char *path, size_t *size)
{
    struct stat sb;
    void *data = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not block */
    if (fd < 0)
        return NULL;
    FILE *f = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size <= CACHE_MAX
                  ? fdopen(fd, "rb") : NULL;
    if (!f) {
        close(fd);
        return NULL;
    }
    data = er_read_all(f, size);
    if (data && ferror(f)) {
        free(data);
        data = NULL;
    }
    fclose(f);
    return data;
}

/* 1 when path may be replaced: nothing there, or a regular file that is
 * (the start of) one of our caches, damaged or not; never someone else's
 * file that a mistyped ERODE_VK_PIPELINE_CACHE points at. */
static int cache_ours(const char *path)
{
    struct stat sb;
    unsigned char head[8];
    if (lstat(path, &sb) != 0)
        return errno == ENOENT;
    int fd = S_ISREG(sb.st_mode) ? open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    return n >= 0 && memcmp(head, ER_VK_CACHE_MAGIC, (size_t)n) == 0;
}

/* Makes the parent directory of path and its parent (~/.cache/erode). */
static void cache_mkdirs(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
            return;
        *slash = '\0';
    }
    mkdir(dir, 0700);
    dir[strlen(dir)] = '/';
    mkdir(dir, 0700);
}

/* Saves the context's pipeline cache when it changed; any failure leaves
 * the old file (or none) and says nothing: the next run is merely cold. */
static void cache_write(er_vk_ctx *vk)
{
    char path[PATH_MAX];
    int own_dir;
    void *data = NULL;
    size_t size = 0;
    er_error e = {{0}};
    if (!cache_path(path, sizeof path, &own_dir) ||
        er_vk_cache_save(vk, &data, &size, &e) != ER_OK || !data)
        return;
    if (own_dir)
        cache_mkdirs(path);
    if (cache_ours(path))
        er_atomic_write_file(path, data, size, &e);
    free(data);
}

/* Opens device o with the pipeline cache of the last run, if any. */
static er_status open_cached(const er_vk_options *o, er_vk_ctx **vk, er_error *err)
{
    char path[PATH_MAX];
    int own_dir;
    size_t size = 0;
    void *data = cache_path(path, sizeof path, &own_dir) ? cache_read(path, &size) : NULL;
    er_status st = er_vk_open_cached(o, data, size, vk, err);
    free(data);
    return st;
}

/* Opens the Vulkan backend for --backend vulkan|auto.  auto takes the
 * device given by --device, else the first that is not a CPU
 * implementation (a software rasteriser such as lavapipe is slower than
 * the CPU path), and otherwise quietly runs on the CPU.  ERODE_VK_VALIDATION=1
 * turns on the Khronos validation layer.  The pipeline cache file
 * (cache_path) is read here and written back by er_backend_close. */
int er_backend_open(const er_settings *s, er_vk_ctx **vk)
{
    er_error err = {{0}};
    const char *v = getenv("ERODE_VK_VALIDATION");
    er_vk_options o = {s->device, v && strcmp(v, "0") != 0 && *v};
    uint64_t cap = 0;
    *vk = NULL;
    if (s->backend == ER_BACKEND_CPU)
        return 0;
    if (buffer_cap(&cap))
        return EXIT_USAGE;
    if (s->backend == ER_BACKEND_AUTO) {
        er_vk_device_info dev[16];
        int n = 0;
        if (!s->device_set) {
            o.device = -1;
            if (er_vk_list_devices(dev, 16, &n, &err) == ER_OK)
                for (int i = 0; i < n && i < 16 && o.device < 0; i++)
                    if (dev[i].type != ER_VK_TYPE_CPU && dev[i].has_compute)
                        o.device = i;
            if (o.device < 0)
                return 0;
        }
        if (open_cached(&o, vk, &err) != ER_OK)
            *vk = NULL;
        else
            er_vk_set_buffer_cap(*vk, cap);
        return 0;
    }
    if (open_cached(&o, vk, &err) != ER_OK) {
        er_msg_error("--backend vulkan: %s", err.msg);
        return EXIT_USAGE;
    }
    er_vk_set_buffer_cap(*vk, cap);
    return 0;
}

/* With ERODE_VK_VALIDATION=1: any validation message fails the run. */
int er_backend_close(er_vk_ctx *vk, int status)
{
    char first[ER_ERROR_MAX];
    uint64_t n = er_vk_messages(vk, first, sizeof first);
    cache_write(vk);
    er_vk_close(vk);
    if (n == 0)
        return status;
    er_msg_error("vulkan: %llu validation messages, the first: %s", (unsigned long long)n, first);
    return status ? status : EXIT_RUN_FAILED;
}
