#!/usr/bin/python3
"""GDAL as an independent reader of what each output layer says about itself:
its georeferencing (a PNG's through its .aux.xml and world file), its nodata
mask and its band description (Debian's python3-gdal).

  layer_oracle.py png-georef REF crs|nocrs PNG TIF [PNG TIF]...
      GDAL reads each PNG with REF's geotransform (exactly) and CRS (none
      with nocrs), a scale and offset that give TIF's values (same run,
      same layer) within one 16-bit step, and TIF's nodata mask through
      alpha; with PAM off it takes the geotransform from the world file
      alone: REF's, to 1e-9 of a cell
  layer_oracle.py same-mask REF FILE...
      every FILE's mask (GetMaskBand) is REF's, cell for cell: nodata on
      exactly REF's nodata cells
  layer_oracle.py no-nodata FILE...
      no nodata value and every cell valid (GMF_ALL_VALID)
  layer_oracle.py description FILE=TEXT...
      band 1's description is TEXT
  layer_oracle.py same-tags A B
      the GeoTIFF tags (georeferencing, GDAL_NODATA, GDAL_METADATA) of A and
      B are byte for byte the same
Exits 0 when the claim holds, 1 with one line saying why when it does not.
"""
import struct
import sys

from osgeo import gdal
import numpy as np

gdal.UseExceptions()


def fail(msg):
    print(msg)
    sys.exit(1)


def valid_mask(path):
    ds = gdal.Open(path)
    return ds.GetRasterBand(1).GetMaskBand().ReadAsArray() != 0


def png_georef(ref, png, tif, nocrs):
    def bad(msg):
        fail("%s: %s" % (png, msg))

    dr, dp, dt = gdal.Open(ref), gdal.Open(png), gdal.Open(tif)
    if dp.GetGeoTransform(can_return_null=True) != dr.GetGeoTransform(can_return_null=True):
        bad("geotransform %s, not %s" % (dp.GetGeoTransform(can_return_null=True), dr.GetGeoTransform()))
    sp, sr = dp.GetSpatialRef(), dr.GetSpatialRef()
    if nocrs:
        if sp is not None:
            bad("a CRS where none was expected")
    elif sp is None or not sp.IsSame(sr):
        bad("CRS %s, not %s" % (sp.GetName() if sp else None, sr.GetName()))
    b = dp.GetRasterBand(1)
    scale, offset = b.GetScale(), b.GetOffset()
    if scale is None or offset is None:
        bad("no scale/offset")
    if b.GetNoDataValue() is not None:
        bad("a nodata value on the PNG (its mask is alpha)")
    if b.GetMaskFlags() != (gdal.GMF_ALPHA | gdal.GMF_PER_DATASET) and dp.RasterCount == 2:
        bad("mask flags %d, not alpha" % b.GetMaskFlags())
    metres = b.ReadAsArray().astype(np.float64) * scale + offset
    t = dt.GetRasterBand(1).ReadAsArray().astype(np.float64)
    vp, vt = valid_mask(png), valid_mask(tif)
    if not np.array_equal(vp, vt):
        bad("nodata cells differ: %d vs %d valid" % (vp.sum(), vt.sum()))
    if vt.any():
        lo, hi = t[vt].min(), t[vt].max()
        step = (hi - lo) / 65535
        worst = np.abs(metres[vt] - t[vt]).max()
        # half a step of quantisation, plus float32 rounding of the heights
        if not worst <= step / 2 + 2 * np.spacing(np.float32(max(abs(lo), abs(hi)))):
            bad("values differ by %.9g, one step is %.9g" % (worst, step))


def world_file(ref, png):
    gdal.SetConfigOption("GDAL_PAM_ENABLED", "NO")
    gp = gdal.Open(png).GetGeoTransform(can_return_null=True)
    gdal.SetConfigOption("GDAL_PAM_ENABLED", None)
    gr = gdal.Open(ref).GetGeoTransform()
    if gp is None:
        fail("no world file read")
    cell = max(abs(gr[1]), abs(gr[5]))
    if max(abs(a - b) for a, b in zip(gp, gr)) > 1e-9 * cell:
        fail(png + ": world file gives %s, not %s" % (gp, gr))


def same_mask(ref, files):
    want = valid_mask(ref)
    for f in files:
        got = valid_mask(f)
        if got.shape != want.shape:
            fail("%s: shape differs" % f)
        if not np.array_equal(got, want):
            fail("%s: %d cells masked where the input has %d nodata cells (%d wrongly masked, %d wrongly valid)"
                 % (f, (~got).sum(), (~want).sum(), (want & ~got).sum(), (~want & got).sum()))


def no_nodata(files):
    for f in files:
        ds = gdal.Open(f)  # kept alive: the band belongs to it
        b = ds.GetRasterBand(1)
        if b.GetNoDataValue() is not None or b.GetMaskFlags() != gdal.GMF_ALL_VALID:
            fail("%s: nodata %s, mask flags %d" % (f, b.GetNoDataValue(), b.GetMaskFlags()))


def description(f, text):
    ds = gdal.Open(f)
    got = ds.GetRasterBand(1).GetDescription()
    if got != text:
        fail("%s: description '%s', not '%s'" % (f, got, text))


GEO_TAGS = (33550, 33922, 34264, 34735, 34736, 34737, 42112, 42113)


def tiff_tags(path):
    """The raw bytes of GEO_TAGS in the first IFD of a classic or BigTIFF."""
    b = open(path, "rb").read()
    bo = "<" if b[:2] == b"II" else ">"
    big = struct.unpack(bo + "H", b[2:4])[0] == 43
    size = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 7: 1, 11: 4, 12: 8, 16: 8}
    if big:
        off = struct.unpack(bo + "Q", b[8:16])[0]
        n, ent, head, inline = struct.unpack(bo + "Q", b[off:off + 8])[0], 20, 8, 8
    else:
        off = struct.unpack(bo + "I", b[4:8])[0]
        n, ent, head, inline = struct.unpack(bo + "H", b[off:off + 2])[0], 12, 2, 4
    tags = {}
    for i in range(n):
        e = b[off + head + ent * i:off + head + ent * (i + 1)]
        tag, typ = struct.unpack(bo + "HH", e[:4])
        cnt = struct.unpack(bo + ("Q" if big else "I"), e[4:4 + (8 if big else 4)])[0]
        nbytes = size.get(typ, 1) * cnt
        rest = e[4 + (8 if big else 4):]
        if nbytes <= inline:
            data = rest[:nbytes]
        else:
            at = struct.unpack(bo + ("Q" if big else "I"), rest)[0]
            data = b[at:at + nbytes]
        if tag in GEO_TAGS:
            tags[tag] = (typ, data)
    return tags


def same_tags(a, b):
    ta, tb = tiff_tags(a), tiff_tags(b)
    for t in GEO_TAGS:
        if ta.get(t) != tb.get(t):
            fail("tag %d differs: %r vs %r" % (t, ta.get(t), tb.get(t)))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "png-georef":
        for png, tif in zip(args[2::2], args[3::2]):
            png_georef(args[0], png, tif, args[1] == "nocrs")
            world_file(args[0], png)
    elif cmd == "same-mask":
        same_mask(args[0], args[1:])
    elif cmd == "no-nodata":
        no_nodata(args)
    elif cmd == "description":
        for a in args:
            description(*a.split("=", 1))
    elif cmd == "same-tags":
        same_tags(*args)
    else:
        fail("unknown command " + cmd)


try:
    main()
except RuntimeError as e:  # GDAL could not open or read a file
    fail(str(e).splitlines()[0])
