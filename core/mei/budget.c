/*
 * Material budget of the Mei model: sums in double, in an order fixed by
 * the map alone (eight interleaved partial sums per row, combined in a
 * fixed tree, rows added serially top to bottom), so every total is the
 * same for any thread count and any chunking of the rows.
 */
#include "mei_internal.h"

#include "../parallel.h"

/* Sum of n floats in double.  Eight independent partial sums let the
 * compiler use vector adds without reassociating anything itself. */
ER_CLONES double er_mei_row_sum(const float *a, int n)
{
    double p[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            p[j] += (double)a[i + j];
    for (int j = 0; i < n; i++, j++)
        p[j] += (double)a[i];
    return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

/* Sum over the terrain (non-wall) cells of row y of layer a. */
static double row_terrain_sum(const er_mei_sim *sim, const float *a, int y, float *tmp)
{
    const size_t w = (size_t)sim->w;
    const float *row = a + (size_t)y * w;
    if (!sim->wall || !sim->row_wall[y])
        return er_mei_row_sum(row, sim->w);
    const uint8_t *wall = sim->wall + (size_t)y * w;
    for (size_t x = 0; x < w; x++)
        tmp[x] = wall[x] ? 0.0f : row[x];
    return er_mei_row_sum(tmp, sim->w);
}

/* Sum of a layer over the terrain cells (rows in parallel, added serially).
 * Uses the first scratch row of each thread. */
double er_mei_total(const er_mei_sim *sim, const float *a)
{
    double total = 0.0;
    const int h = sim->h;
    /* acc[y].eroded is free between steps: it holds the row sums here */
    er_mei_rowacc *acc = sim->acc;
    ER_OMP_FOR()
    for (int y = 0; y < h; y++) {
        float *tmp = er_mei_thread_scratch(sim, er_thread_id());
        acc[y].eroded = row_terrain_sum(sim, a, y, tmp);
    }
    for (int y = 0; y < h; y++)
        total += acc[y].eroded;
    return total;
}

/* Terrain change plus suspended sediment over the terrain cells: the
 * material above the initial terrain. */
double er_mei_material(const er_mei_sim *sim, const float *z, const float *s)
{
    return er_mei_total(sim, z) + er_mei_total(sim, s);
}

int64_t er_mei_terrain_cells(const er_mei_sim *sim)
{
    size_t n = (size_t)sim->w * (size_t)sim->h;
    if (!sim->wall)
        return (int64_t)n;
    int64_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += !sim->wall[i];
    return c;
}
