/*
 * OpenMP behind macros that compile to nothing without _OPENMP (darktable's
 * DT_OMP_FOR), so core/ builds and gives the same results with and without
 * OpenMP.  Never use them for float reductions whose result reaches an
 * output (CONTRIBUTING.md "Style").
 */
#ifndef ER_PARALLEL_H
#define ER_PARALLEL_H

#define ER_PRAGMA(x) _Pragma(#x)

#ifdef _OPENMP
#include <omp.h>
/* A parallel loop with a static schedule: each thread gets the same rows in
 * every sweep, which keeps its cache lines warm and costs no scheduling. */
#define ER_OMP_FOR(...) ER_PRAGMA(omp parallel for schedule(static) __VA_ARGS__)
#define ER_OMP_FOR_DYNAMIC(...) ER_PRAGMA(omp parallel for schedule(dynamic, 1) __VA_ARGS__)
/* Chunks that shrink as the loop goes: for many small items of uneven
 * cost, where neighbouring items touch neighbouring memory (one thread a
 * run of them, not a cache line shared item by item). */
#define ER_OMP_FOR_GUIDED(...) ER_PRAGMA(omp parallel for schedule(guided) __VA_ARGS__)
#define ER_OMP_PARALLEL(...) ER_PRAGMA(omp parallel __VA_ARGS__)
#define ER_OMP_FOR_INNER(...) ER_PRAGMA(omp for schedule(static) __VA_ARGS__)
#define ER_OMP_FOR_INNER_DYNAMIC(...) ER_PRAGMA(omp for schedule(dynamic, 1) __VA_ARGS__)
#define ER_OMP_BARRIER ER_PRAGMA(omp barrier)
static inline int er_thread_count(void) { return omp_get_max_threads(); }
static inline int er_thread_id(void) { return omp_get_thread_num(); }
#else
#define ER_OMP_FOR(...)
#define ER_OMP_FOR_DYNAMIC(...)
#define ER_OMP_FOR_GUIDED(...)
#define ER_OMP_PARALLEL(...)
#define ER_OMP_FOR_INNER(...)
#define ER_OMP_FOR_INNER_DYNAMIC(...)
#define ER_OMP_BARRIER
static inline int er_thread_count(void) { return 1; }
static inline int er_thread_id(void) { return 0; }
#endif

#endif
