#!/usr/bin/python3
"""GDAL as an independent oracle for erode's outputs (Debian's python3-gdal).

  gdal_oracle.py same-georef A B      geotransform, CRS, size and nodata equal
  gdal_oracle.py same-values A B [TOL [SCALE]]
                                      valid cells equal: |float32(a*SCALE) - b| <= TOL
                                      (defaults 0 and 1), nodata cells in the same places
  gdal_oracle.py stats A               prints "min max mean nodata_count finite"
  gdal_oracle.py info A                prints type, compression, predictor, tiling
Exits 0 when the claim holds, 1 with one line saying why when it does not.
"""
import sys

from osgeo import gdal
import numpy as np

gdal.UseExceptions()


def band_array(path):
    ds = gdal.Open(path)
    band = ds.GetRasterBand(1)
    a = band.ReadAsArray().astype(np.float64)
    nd = band.GetNoDataValue()
    if nd is None:
        valid = np.isfinite(a)
    elif np.isnan(nd):
        valid = ~np.isnan(a)
    else:
        valid = a != nd
    return ds, a, valid


def fail(msg):
    print(msg)
    sys.exit(1)


def same_georef(a, b):
    da, db = gdal.Open(a), gdal.Open(b)
    if (da.RasterXSize, da.RasterYSize) != (db.RasterXSize, db.RasterYSize):
        fail("size differs: %dx%d vs %dx%d" % (da.RasterXSize, da.RasterYSize, db.RasterXSize, db.RasterYSize))
    if da.GetGeoTransform(can_return_null=True) != db.GetGeoTransform(can_return_null=True):
        fail("geotransform differs: %s vs %s" % (da.GetGeoTransform(), db.GetGeoTransform()))
    sa, sb = da.GetSpatialRef(), db.GetSpatialRef()
    if (sa is None) != (sb is None) or (sa is not None and not sa.IsSame(sb)):
        fail("crs differs")
    if da.GetProjection() != db.GetProjection():
        fail("crs wkt differs")
    na, nb = da.GetRasterBand(1).GetNoDataValue(), db.GetRasterBand(1).GetNoDataValue()
    if not (na == nb or (na is not None and nb is not None and np.isnan(na) and np.isnan(nb))):
        fail("nodata differs: %s vs %s" % (na, nb))


def same_values(a, b, tol, scale):
    _, xa, va = band_array(a)
    _, xb, vb = band_array(b)
    if xa.shape != xb.shape:
        fail("shape differs")
    if not np.array_equal(va, vb):
        fail("nodata cells differ: %d vs %d valid" % (va.sum(), vb.sum()))
    d = np.abs((xa[va] * scale).astype(np.float32).astype(np.float64) - xb[vb])
    worst = d.max() if d.size else 0.0
    if not worst <= tol:
        fail("values differ by up to %.9g (tolerance %.9g)" % (worst, tol))


def stats(*files):
    """One line a file: min max mean nodata-count all-finite (one interpreter
    start for many files keeps the suite quick)."""
    for a in files:
        _, x, v = band_array(a)
        vals = x[v]
        print("%.9g %.9g %.9g %d %d" % (vals.min(), vals.max(), vals.mean(), (~v).sum(),
                                        int(np.isfinite(vals).all())))


def info(a):
    ds = gdal.Open(a)
    b = ds.GetRasterBand(1)
    md = ds.GetMetadata("IMAGE_STRUCTURE")
    bx, by = b.GetBlockSize()
    print("%s %s %s %d %d" % (gdal.GetDataTypeName(b.DataType), md.get("COMPRESSION", "NONE"),
                              md.get("PREDICTOR", "1"), bx, by))


def copies(listing):
    """Each line of the file listing: FILE, REF, INPUT and WANT, tab-separated:
    FILE's info line starts with WANT's words, its values are REF's, its
    georeferencing INPUT's (one interpreter start for many files keeps the
    suite quick)."""
    global fail
    plain = fail
    with open(listing) as f:
        for line in f:
            path, ref, inp, want = line.rstrip("\n").split("\t")
            fail = lambda msg, p=path: plain(p + ": " + msg)
            ds = gdal.Open(path)
            b = ds.GetRasterBand(1)
            md = ds.GetMetadata("IMAGE_STRUCTURE")
            got = [gdal.GetDataTypeName(b.DataType), md.get("COMPRESSION", "NONE"),
                   md.get("PREDICTOR", "1"), str(b.GetBlockSize()[0])]
            if got != want.split():
                fail(" ".join(got))
            same_values(ref, path, 0.0, 1.0)
            same_georef(inp, path)
    fail = plain


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "same-georef":
        same_georef(*args)
    elif cmd == "same-values":
        same_values(args[0], args[1], float(args[2]) if len(args) > 2 else 0.0,
                    float(args[3]) if len(args) > 3 else 1.0)
    elif cmd == "stats":
        stats(*args)
    elif cmd == "info":
        info(args[0])
    elif cmd == "copies":
        copies(args[0])
    else:
        fail("unknown command " + cmd)


try:
    main()
except RuntimeError as e:  # GDAL could not open or read a file
    fail(str(e).splitlines()[0])
