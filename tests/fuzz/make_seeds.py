#!/usr/bin/python3
"""Regenerates the seed corpora in tests/fuzz/corpus/{tiff,png,recipe,checkpoint}/
(run once; the seeds are committed).  Small valid files of every layout the
readers handle -- each sample type, codec, predictor, byte order, strips and
tiles, BigTIFF, several bands, sparse blocks, nodata; 1-16 bit PNG, alpha,
tRNS, Adam7, erode's own chunks -- plus the recipes in configs/ and a few
edge cases.  Libtiff and libpng are not instrumented for coverage, so the
seeds are what leads the fuzzer into their codecs.

  ERODE=./erode /usr/bin/python3 tests/fuzz/make_seeds.py [KIND...]

KIND: tiff, png, recipe or checkpoint (default: all).  ERODE (optional) is
used to add --print-recipe output, an erode-written PNG and checkpoints
saved by erode runs stopped with SIGTERM.  The tiff and png seeds need
python3-gdal and numpy; the checkpoint seeds only Python.
"""
import glob
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "data", "bad"))
import generate as g  # noqa: E402  (the PNG/TIFF writers of the bad corpus)

CORPUS = os.path.join(HERE, "corpus")
np = gdal = None


def need_gdal():
    global np, gdal
    import numpy
    from osgeo import gdal as osgeo_gdal
    np, gdal = numpy, osgeo_gdal
    gdal.UseExceptions()


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
    seeds.update(png_mapping_seeds())
    for name, data in seeds.items():
        g.write(out, name, data)


def png_mapping_seeds():
    """The height mapping after IDAT and compressed (issue 12): a zTXt, a
    compressed iTXt after IDAT, a damaged zTXt.  No GDAL needed."""
    import zlib
    ramp = [[((x * 4099 + y * 257) % 65536,) for x in range(7)] for y in range(3)]
    key = b"erode:height-mapping\0"
    z = zlib.compress(b"min=-3.5 max=812.25")
    return {
        "grey16-mapped-after-idat.png": g.png_bytes(ramp, 16, 0, post=[g.itxt("erode:height-mapping",
                                                                               "min=-3.5 max=812.25")]),
        "grey16-mapped-ztxt.png": g.png_bytes(ramp, 16, 0, pre=[(b"zTXt", key + b"\0" + z)]),
        "grey16-mapped-itxt-z-after-idat.png": g.png_bytes(ramp, 16, 0, post=[(b"iTXt", key + b"\1\0\0\0" + z)]),
        "grey16-mapped-ztxt-damaged.png": g.png_bytes(ramp, 16, 0, pre=[(b"zTXt", key + b"\0" + z[:-1] + b"\0")]),
    }


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


def fnv1a64(data, h=0xCBF29CE484222325, word=1):
    """FNV-1a 64 over bytes (word=1) or little-endian 32-bit words (word=4),
    as io/checkpoint.c folds the header and the arrays."""
    for i in range(0, len(data), word):
        h ^= int.from_bytes(data[i:i + word], "little")
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def erode_version():
    with open(os.path.join(SRC, "Makefile")) as f:
        return re.search(r"^VERSION\s*:=\s*(\S+)", f.read(), re.M).group(1)


def checkpoint_bytes(model, w, h, arrays, n_arrays=None, counters=(3, 10, 3, 10), budget=None, version=None):
    """A checkpoint in format 1 (io/checkpoint.h): arrays is a list of
    n_arrays entries, each None (left out), w*h floats or their raw bytes."""
    n_arrays = len(arrays) if n_arrays is None else n_arrays
    mask = sum(1 << i for i, a in enumerate(arrays) if a is not None)
    budget = budget or (1234.5, 2.25, 1.75, 0.5, 3.0, 0.125, 77, 5)
    head = b"ERODECKP" + struct.pack("<I", 1) + (version or erode_version()).encode().ljust(16, b"\0")[:16]
    head += struct.pack("<5I", model, w, h, n_arrays, mask)
    head += struct.pack("<QQ", fnv1a64(b"recipe %d" % model), fnv1a64(b"input %dx%d" % (w, h)))
    head += struct.pack("<4q", *counters) + struct.pack("<6d2q", *budget)
    head += struct.pack("<Q", fnv1a64(head))
    body = b"".join(a if isinstance(a, bytes) else struct.pack("<%df" % (w * h), *a) for a in arrays if a is not None)
    return head + body + struct.pack("<Q", fnv1a64(body, word=4))


def erode_checkpoint(erode, tmp, args):
    """Runs erode with --checkpoint-every 1 on a small PNG until the first
    checkpoint is saved, stops it with SIGTERM (it saves the boundary it has
    reached and exits 143) and returns the checkpoint's bytes."""
    src = os.path.join(tmp, "in.png")
    ck = os.path.join(tmp, "ck.bin")
    g.write(tmp, "in.png", g.png_bytes([[((x * 7919 + y * 104729) % 65536,) for x in range(6)] for y in range(5)],
                                       16, 0))
    if os.path.exists(ck):
        os.remove(ck)
    p = subprocess.Popen([erode, "-q", "--checkpoint", ck, "--checkpoint-every", "1", "-o", tmp] + args + [src])
    for _ in range(400):
        if os.path.exists(ck) or p.poll() is not None:
            break
        time.sleep(0.01)
    p.send_signal(signal.SIGTERM)
    rc = p.wait()
    if rc != 128 + signal.SIGTERM or not os.path.exists(ck):
        sys.exit("make_seeds: erode %s did not leave a checkpoint (exit %d)" % (" ".join(args), rc))
    with open(ck, "rb") as f:
        return f.read()


def checkpoint_seeds(out):
    """Valid checkpoints of both models, arrays present and left out, odd
    float values, counters at their limits; and, with ERODE, checkpoints
    that erode itself saved."""
    nan, inf = float("nan"), float("inf")
    odd = [0.0, -0.0, nan, inf, -inf, 1e-45, -3.4028234663852886e38, 0.1]
    seeds = {
        "mei-1x1.ckp": checkpoint_bytes(0, 1, 1, [[0.5]] * 7),
        "mei-4x2-odd-floats.ckp": checkpoint_bytes(0, 4, 2, [odd] * 3 + [[float(i) for i in range(8)]] * 4),
        "mei-3x3-at-end.ckp": checkpoint_bytes(0, 3, 3, [[i / 9 for i in range(9)]] * 7, counters=(10, 10, 10, 10)),
        "droplet-3x2-height-only.ckp": checkpoint_bytes(1, 3, 2, [[1, 2, 3, 4, 5, 6], None, None],
                                                        counters=(0, 4, 0, 4000)),
        "droplet-2x2-all.ckp": checkpoint_bytes(1, 2, 2, [[1, 2, 3, 4], [0, 0.5, 0, 0], [0.25, 0, 0, 0]],
                                                budget=(nan, 0.0, -0.0, inf, 0.0, 0.0, 0, 0)),
        "no-arrays-5x1.ckp": checkpoint_bytes(0, 5, 1, [], counters=(0, 0, 0, 0)),
        # signalling and payload NaNs must come back bit for bit
        "mei-2x1-snan.ckp": checkpoint_bytes(0, 2, 1, [struct.pack("<2I", 0x7F800001, 0xFFC12345)] * 7),
    }
    for name, data in seeds.items():
        g.write(out, name, data)
    erode = os.environ.get("ERODE")
    if erode:
        tmp = tempfile.mkdtemp()
        try:
            g.write(out, "erode-mei.ckp", erode_checkpoint(erode, tmp, ["-s", "mei.steps=100000000"]))
            g.write(out, "erode-droplet.ckp",
                    erode_checkpoint(erode, tmp, ["-s", "model=droplet", "-s", "droplet.count=100000000",
                                                  "-s", "droplet.batch_size=64"]))
        finally:
            shutil.rmtree(tmp)


def main():
    kinds = [("tiff", tiff_seeds), ("png", png_seeds), ("recipe", recipe_seeds), ("checkpoint", checkpoint_seeds)]
    wanted = sys.argv[1:] or [k for k, _ in kinds]
    unknown = set(wanted) - {k for k, _ in kinds}
    if unknown:
        sys.exit("make_seeds: unknown kind %s" % ", ".join(sorted(unknown)))
    for kind, fn in kinds:
        if kind not in wanted:
            continue
        if kind in ("tiff", "png"):
            need_gdal()
        d = os.path.join(CORPUS, kind)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        fn(d)
    erode = os.environ.get("ERODE")
    if erode and "png" in wanted:
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
