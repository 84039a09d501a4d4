#!/usr/bin/python3
"""Regenerates the seed corpora in tests/fuzz/corpus/{tiff,png,recipe}/
(run once; the seeds are committed).  Small valid files of every layout the
readers handle -- each sample type, codec, predictor, byte order, strips and
tiles, BigTIFF, several bands, sparse blocks, nodata; 1-16 bit PNG, alpha,
tRNS, Adam7, erode's own chunks -- plus the recipes in configs/ and a few
edge cases.  Libtiff and libpng are not instrumented for coverage, so the
seeds are what leads the fuzzer into their codecs.

  ERODE=./erode /usr/bin/python3 tests/fuzz/make_seeds.py

ERODE (optional) is used to add --print-recipe output and an erode-written
PNG.  Needs python3-gdal and numpy.
"""
import glob
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "data", "bad"))
import generate as g  # noqa: E402  (the PNG/TIFF writers of the bad corpus)

import numpy as np  # noqa: E402
from osgeo import gdal  # noqa: E402

gdal.UseExceptions()
CORPUS = os.path.join(HERE, "corpus")


def tiff_seeds(out):
    dem = g.dem_crop(16, 16)
    lo = float(dem.min())
    u8 = np.clip((dem - lo) * 4, 0, 255).astype(np.uint8)
    i16 = np.round(dem * 10).astype(np.int16)
    seeds = [
        ("f32-strips4.tif", dem, None, None, ["BLOCKYSIZE=4"]),
        ("f32-deflate-pred3-tiled.tif", dem, None, None,
         ["TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16", "COMPRESS=DEFLATE", "PREDICTOR=3"]),
        ("f32-be-pred3-lzw.tif", dem, None, None, ["ENDIANNESS=BIG", "COMPRESS=LZW", "PREDICTOR=3"]),
        ("f64-lzw-pred3.tif", dem.astype(np.float64), None, None, ["COMPRESS=LZW", "PREDICTOR=3"]),
        ("f32-bigtiff-nan-nodata.tif", np.where(dem > dem.mean(), dem, np.nan).astype(np.float32), None, float("nan"),
         ["BIGTIFF=YES"]),
        ("f32-lerc.tif", dem, None, None, ["COMPRESS=LERC", "MAX_Z_ERROR=0"]),
        ("u8-packbits.tif", u8, None, None, ["COMPRESS=PACKBITS"]),
        ("i8-signedbyte.tif", (u8 // 2).astype(np.uint8), "uint8", None, ["PIXELTYPE=SIGNEDBYTE"]),
        ("u8-jpeg.tif", u8, None, None, ["COMPRESS=JPEG"]),
        ("u8-rgb-webp-lossless.tif", np.stack([u8, u8, u8]), None, None,
         ["COMPRESS=WEBP", "WEBP_LOSSLESS=YES", "PHOTOMETRIC=RGB"]),
        ("u16-be-lzw-pred2.tif", (i16 - i16.min()).astype(np.uint16), None, None,
         ["ENDIANNESS=BIG", "COMPRESS=LZW", "PREDICTOR=2"]),
        ("i16-deflate-pred2-nodata.tif", np.where(u8 > 128, i16, -32768).astype(np.int16), None, -32768,
         ["COMPRESS=DEFLATE", "PREDICTOR=2"]),
        ("u32-none.tif", (i16.astype(np.int64) + 70000).astype(np.uint32), None, None, []),
        ("i32-zstd-tiled.tif", i16.astype(np.int32) * 1000, None, None,
         ["TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16", "COMPRESS=ZSTD"]),
        ("f32-lzma.tif", dem, None, None, ["COMPRESS=LZMA"]),
        ("i16-two-band-separate.tif", np.stack([i16, i16 // 2]), None, None, ["INTERLEAVE=BAND"]),
        ("u8-three-band-rgb.tif", np.stack([u8, u8, u8]), None, None, ["PHOTOMETRIC=RGB"]),
        ("u8-three-band-contig.tif", np.stack([u8, u8 // 2, u8 // 3]), None, None, ["PHOTOMETRIC=MINISBLACK"]),
        ("f32-nogeoref.tif", dem[:5, :7], None, None, []),
    ]
    for name, arr, dtype, nodata, opts in seeds:
        g.gdal_tiff(os.path.join(out, name), arr, dtype=dtype, nodata=nodata, georef="nogeoref" not in name,
                    options=opts)
    # Sparse: a 32x32 tiled file with one tile written.
    p = os.path.join(out, "f32-sparse-tiled.tif")
    ds = gdal.GetDriverByName("GTiff").Create(p, 32, 32, 1, gdal.GDT_Float32,
                                              ["TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16", "SPARSE_OK=TRUE"])
    ds.GetRasterBand(1).SetNoDataValue(-9999)
    ds.GetRasterBand(1).WriteArray(dem, 16, 0)
    ds = None
    # A rotated geotransform (ModelTransformationTag) and statistics in
    # GDAL_METADATA.
    p = os.path.join(out, "f32-rotated-stats.tif")
    g.gdal_tiff(p, dem[:8, :8])
    ds = gdal.Open(p, gdal.GA_Update)
    ds.SetGeoTransform((500000.0, 1.0, 0.5, 4000000.0, 0.25, -1.0))
    ds.GetRasterBand(1).ComputeStatistics(False)
    ds.SetMetadataItem("AREA_OR_POINT", "Point")
    ds = None
    # A geographic CRS (degrees), as the cell-size code sees them.
    p = os.path.join(out, "i16-wgs84.tif")
    ds = gdal.GetDriverByName("GTiff").Create(p, 8, 8, 1, gdal.GDT_Int16)
    ds.SetGeoTransform((6.0, 0.001, 0, 49.8, 0, -0.001))
    ds.SetProjection('GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],'
                     'PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433],AUTHORITY["EPSG","4326"]]')
    ds.GetRasterBand(1).WriteArray(i16[:8, :8])
    ds = None


def png_seeds(out):
    dem = g.dem_crop(16, 16)
    n = (dem - dem.min()) / max(float(np.ptp(dem)), 1e-9)
    v8 = [[(int(n[y, x] * 255),) for x in range(16)] for y in range(16)]
    v16 = [[(int(n[y, x] * 65535),) for x in range(16)] for y in range(16)]
    a8 = [[(p[0], 0 if (x * y) % 7 == 3 else 255) for x, p in enumerate(row)] for y, row in enumerate(v8)]
    a16 = [[(p[0], 0 if (x + y) % 5 == 0 else 65535) for x, p in enumerate(row)] for y, row in enumerate(v16)]
    mapping = g.itxt("erode:height-mapping", "min=-12.5 max=1834.25")
    prov = g.itxt("erode:provenance", '{"erode":"0.1.0","recipe":{"model":"mei"}}')
    seeds = {
        "grey8.png": g.png_bytes(v8, 8, 0),
        "grey16.png": g.png_bytes(v16, 16, 0),
        "grey-alpha8.png": g.png_bytes(a8, 8, 4),
        "grey-alpha16-mapped.png": g.png_bytes(a16, 16, 4, pre=[mapping, prov]),
        "grey16-mapped.png": g.png_bytes(v16, 16, 0, pre=[mapping]),
        "grey1.png": g.png_bytes([[(p[0] >> 7,) for p in row] for row in v8], 1, 0),
        "grey2.png": g.png_bytes([[(p[0] >> 6,) for p in row] for row in v8], 2, 0),
        "grey4-trns.png": g.png_bytes([[(p[0] >> 4,) for p in row] for row in v8], 4, 0,
                                      pre=[(b"tRNS", b"\0\x03")]),
        "grey16-trns.png": g.png_bytes(v16, 16, 0, pre=[(b"tRNS", bytes([v16[0][0][0] >> 8, v16[0][0][0] & 255]))]),
        "grey8-interlaced.png": g.png_bytes(v8, 8, 0, interlace=True),
        "grey-alpha16-interlaced.png": g.png_bytes([row[:11] for row in a16[:13]], 16, 4, interlace=True),
        "grey8-text.png": g.png_bytes(v8[:3], 8, 0, pre=[(b"tEXt", b"Comment\0hello"),
                                                          (b"zTXt", b"Title\0\0" + __import__("zlib").compress(b"x"))],
                                      post=[(b"tEXt", b"After\0idat")]),
        "grey8-1x1.png": g.png_bytes([[(9,)]], 8, 0),
        "grey16-1x5.png": g.png_bytes([[(1000 * i,) for i in range(5)]], 16, 0),
        "rgb8.png": g.png_bytes([[(x, y, x ^ y) for x in range(4)] for y in range(4)], 8, 2),
    }
    for name, data in seeds.items():
        g.write(out, name, data)


def recipe_seeds(out):
    for p in glob.glob(os.path.join(SRC, "configs", "*.json")):
        shutil.copy(p, os.path.join(out, "config-" + os.path.basename(p)))
    erode = os.environ.get("ERODE")
    if erode:
        for name, args in [("printed-default.json", []),
                           ("printed-droplet.json", ["-s", "model=droplet", "-s", "droplet.count=1000",
                                                     "-s", "droplet.variant=mass-transfer", "-s", "droplet.height_unit=12.5"]),
                           ("printed-sources.json", ["-s", 'mei.sources=[{"x":1,"y":2,"rate":0.5},'
                                                           '{"x":1e5,"y":-2.5e6,"coords":"map","radius":3,"rate":1e-3}]',
                                                     "-s", "terrain.cell_size=2.5", "-s", "seed=9007199254740992"])]:
            text = subprocess.run([erode, "--print-recipe"] + args, check=True, capture_output=True).stdout
            g.write(out, name, text)
    small = {
        "empty-object.json": "{}",
        "version-only.json": '{"erode_recipe": 1}',
        "comment.json": '{"comment": "caf\\u00e9 \\ud83d\\ude00", "model": "droplet"}',
        "nulls.json": '{"terrain": {"cell_size": null}, "droplet": {"count": null, "height_unit": "relief"}}',
        "numbers.json": '{"seed": 0, "mei": {"steps": 1e3, "dt": 2E-2, "kc": -0.0, "rain_rate": 1e-300,'
                        ' "max_substeps": 1000000}, "droplet": {"inertia": 0.9999999999999999}}',
        "sources.json": '{"mei": {"sources": [{"x": 0, "y": 0, "rate": 1}, {"x": -1e12, "y": 1e12, "coords": "pixel",'
                        ' "radius": 1e4, "rate": 100}]}}',
        "nested-all.json": '{"mei": {"boundary": "open", "advection": "semi-lagrangian", "cfl": "error"},'
                           ' "droplet": {"variant": "mass-transfer", "mass_transfer": {"max_distance": 100000}}}',
        "typo.json": '{"mei": {"stpes": 3}, "dropplet": {}}',
        "wrong-type.json": '{"mei": {"dt": "fast"}}',
        "malformed.json": '{"mei": {"dt": 0.1,}}',
        "duplicate.json": '{"seed": 1, "seed": 2}',
        "array.json": "[1, 2, 3]",
        "override-like.txt": "mei.steps=500",
        "override-sources.txt": 'mei.sources=[{"x":1,"y":2,"rate":3}]',
    }
    for name, text in small.items():
        g.write(out, name, text.encode())


def main():
    for kind, fn in [("tiff", tiff_seeds), ("png", png_seeds), ("recipe", recipe_seeds)]:
        d = os.path.join(CORPUS, kind)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        fn(d)
    erode = os.environ.get("ERODE")
    if erode:
        # An erode-written PNG: 16-bit, alpha, height mapping, provenance.
        tmp = os.path.join(CORPUS, "tmp")
        os.makedirs(tmp, exist_ok=True)
        src = os.path.join(tmp, "nd.tif")
        a = g.dem_crop(9, 6)
        a[1, 2] = np.nan
        g.gdal_tiff(src, a)
        subprocess.run([erode, "-q", "-s", "mei.steps=0", "-f", "png", "--layers", "height", "-o", tmp, src],
                       check=True)
        shutil.copy(os.path.join(tmp, "nd.height.png"), os.path.join(CORPUS, "png", "erode-written.png"))
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
