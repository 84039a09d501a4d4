#!/usr/bin/python3
"""An independent drainage area for the stream-power model's flow layer.

  drainage_oracle.py DEM FLOW WATER

DEM: the input (band 1, nodata), FLOW and WATER: the model's flow and water
layers of a run with stream_power.steps = 0 (so the routing is the input's)
and every edge base level.  Computes the drainage area a second way and
compares it with FLOW on every cell outside the lakes (WATER == 0); exits 1
naming the first cell that differs.

The definitions are the model's (erode-recipe(5) STREAM POWER): base level
is the map's edges and every valid cell beside nodata; each other cell
drains to its steepest-descent neighbour (drop over distance, the first of
equal slopes in row-major order), none when no neighbour is lower (a pit);
a closed basin (the cells draining to one pit) spills through its lowest
pass.  The algorithm is not the model's: the passes come from a
priority-flood (Prim's algorithm over the cells, Barnes et al. 2014) instead
of Kruskal's algorithm over the basins, the pass of a basin being the cell
through which the flood first enters it; the water of a basin is then sent
from its pit back along its steepest-descent path to that cell and across.
The two choose the same pass wherever one pass is the lowest; passes of
equal height (within a lake, between basins it drowns) may differ, which
changes areas only on lake cells, hence the comparison outside the lakes.
"""
import heapq
import math
import sys

import numpy as np
from osgeo import gdal

gdal.UseExceptions()

NB = [(-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1)]  # (dx, dy)


def main():
    dem, flow_path, water_path = sys.argv[1:4]
    ds = gdal.Open(dem)
    band = ds.GetRasterBand(1)
    z = band.ReadAsArray().astype(np.float32).astype(np.float64)
    nd = band.GetNoDataValue()
    wall = ~np.isfinite(z) | ((z == nd) if nd is not None else False)
    gt = ds.GetGeoTransform()
    dx, dy = abs(gt[1]), abs(gt[5])
    h, w = z.shape
    flow = gdal.Open(flow_path).ReadAsArray().astype(np.float64)
    water = gdal.Open(water_path).ReadAsArray().astype(np.float64)
    dd = math.sqrt(dx * dx + dy * dy)
    inv = [1.0 / (dd if (ex and ey) else dy if ex == 0 else dx) for ex, ey in NB]
    zl, wl = z.ravel().tolist(), wall.ravel().tolist()
    n = h * w

    def nbrs(i):
        x, y = i % w, i // w
        for k, (ex, ey) in enumerate(NB):
            nx, ny = x + ex, y + ey
            if 0 <= nx < w and 0 <= ny < h:
                yield k, ny * w + nx

    base = [False] * n
    for i in range(n):
        if wl[i]:
            continue
        x, y = i % w, i // w
        if x == 0 or y == 0 or x == w - 1 or y == h - 1 or any(wl[j] for _, j in nbrs(i)):
            base[i] = True
    # steepest descent
    rcv = [-1] * n
    for i in range(n):
        if wl[i] or base[i]:
            continue
        best = 0.0
        for k, j in nbrs(i):
            if wl[j]:
                continue
            s = (zl[i] - zl[j]) * inv[k]
            if s > best:
                best, rcv[i] = s, j
    # basins: the pit each cell's path ends in (-1: base level)
    pit = [-2] * n
    for i in range(n):
        if wl[i] or pit[i] != -2:
            continue
        path, c = [], i
        while pit[c] == -2:
            path.append(c)
            if rcv[c] < 0:
                pit[c] = -1 if base[c] else c
                break
            c = rcv[c]
        for p in path:
            pit[p] = pit[c]
    # priority flood from base level: the first cell of each basin reached,
    # and the cell it was reached from
    seen = [False] * n
    heap, order = [], 0
    for i in range(n):
        if base[i]:
            seen[i] = True
            heapq.heappush(heap, (zl[i], zl[i], order, i, -1))
            order += 1
    entry = {}
    while heap:
        lev, _, _, c, frm = heapq.heappop(heap)
        b = pit[c]
        if b >= 0 and b not in entry and frm >= 0 and pit[frm] != b:
            entry[b] = (c, frm)
        for _, j in nbrs(c):
            if wl[j] or seen[j]:
                continue
            seen[j] = True
            heapq.heappush(heap, (max(zl[j], lev), zl[j], order, j, c))
            order += 1
    # carve: the path from the entry cell down to the pit reversed
    new = list(rcv)
    for b, (x, y) in entry.items():
        prev, c = y, x
        while True:
            nxt = rcv[c]
            new[c] = prev
            if c == b:
                break
            prev, c = c, nxt
    # drainage area: donors before receivers (depth by iteration)
    area = [0.0 if wl[i] else 1.0 for i in range(n)]
    indeg = [0] * n
    for i in range(n):
        if new[i] >= 0:
            indeg[new[i]] += 1
    stack = [i for i in range(n) if not wl[i] and indeg[i] == 0]
    done = 0
    while stack:
        c = stack.pop()
        done += 1
        r = new[c]
        if r >= 0:
            area[r] += area[c]
            indeg[r] -= 1
            if indeg[r] == 0:
                stack.append(r)
    if done != n - sum(wl):
        sys.exit("drainage_oracle: the routing has a cycle")
    # the layer is float32 of the area in cells times a cell's area
    a = (np.array(area).reshape(h, w) * (dx * dy)).astype(np.float32).astype(np.float64)
    check = ~wall & (water == 0)
    bad = np.argwhere(check & (a != flow))
    if len(bad):
        y, x = bad[0]
        sys.exit("drainage_oracle: cell (%d, %d): flow %.9g m^2, the oracle %.9g m^2 (%d cells differ of %d)"
                 % (x, y, flow[y, x], a[y, x], len(bad), int(check.sum())))
    print("drainage_oracle: %d cells outside lakes equal, %d basins spilled" % (int(check.sum()), len(entry)))


if __name__ == "__main__":
    main()
