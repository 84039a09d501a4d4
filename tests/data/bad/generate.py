#!/usr/bin/python3
"""Regenerates the hostile-input corpus in tests/data/bad/ (run once; the
files are committed so a change in GDAL or libtiff cannot change them).

  /usr/bin/python3 tests/data/bad/generate.py [OUTDIR]

Needs Debian's python3-gdal and numpy.  MANIFEST (written by hand) says what
erode must do with each file.  The PNG and raw TIFF writers here are also
used by tests/fuzz/make_seeds.py.
"""
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
DATA = os.path.join(SRC, "tests", "data")

# ---------------------------------------------------------------- PNG


def png_chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def _pack_row(pixels, depth):
    """pixels: list of tuples of samples -> raw row bytes (no filter byte)."""
    if depth == 16:
        return b"".join(struct.pack(">%dH" % len(p), *p) for p in pixels)
    if depth == 8:
        return bytes(s for p in pixels for s in p)
    bits, out, acc, n = [s for p in pixels for s in p], bytearray(), 0, 0
    for s in bits:
        acc = (acc << depth) | s
        n += depth
        if n == 8:
            out.append(acc)
            acc, n = 0, 0
    if n:
        out.append(acc << (8 - n))
    return bytes(out)


def png_bytes(pixels, depth, ctype, interlace=False, pre=(), post=(), width=None, height=None, idat=None):
    """pixels: rows of tuples of samples.  pre/post: extra (kind, data)
    chunks before IDAT / after it.  width/height override the header (for
    lying headers); idat replaces the compressed data."""
    h = len(pixels)
    w = len(pixels[0]) if h else 0
    ihdr = struct.pack(">IIBBBBB", w if width is None else width, h if height is None else height,
                       depth, ctype, 0, 0, 1 if interlace else 0)
    raw = bytearray()
    if interlace:
        for x0, y0, dx, dy in ADAM7:
            xs = range(x0, w, dx)
            if not len(xs):
                continue
            for y in range(y0, h, dy):
                raw += b"\0" + _pack_row([pixels[y][x] for x in xs], depth)
    else:
        for row in pixels:
            raw += b"\0" + _pack_row(row, depth)
    out = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr)
    for k, d in pre:
        out += png_chunk(k, d)
    out += png_chunk(b"IDAT", zlib.compress(bytes(raw), 9) if idat is None else idat)
    for k, d in post:
        out += png_chunk(k, d)
    return out + png_chunk(b"IEND", b"")


def itxt(key, text):
    return (b"iTXt", key.encode() + b"\0\0\0\0\0" + text.encode())


# --------------------------------------------------------------- TIFF


def tiff_header_only(width, height, bits=32, fmt=3):
    """A little-endian classic TIFF whose one IFD claims width x height
    samples of `bits` bits (SampleFormat `fmt`) in one strip that is absent
    (offset and byte count 0): a header and nothing else."""
    entries = [(256, 4, width), (257, 4, height), (258, 3, bits), (259, 3, 1), (262, 3, 1), (273, 4, 0),
               (277, 3, 1), (278, 4, max(height, 1)), (279, 4, 0), (339, 3, fmt)]
    ifd = struct.pack("<H", len(entries))
    for tag, typ, value in entries:
        ifd += struct.pack("<HHIHH" if typ == 3 else "<HHII", tag, typ, 1, value, *([0] if typ == 3 else []))
    return b"II*\0" + struct.pack("<I", 8) + ifd + struct.pack("<I", 0)


# ----------------------------------------------------------- the corpus


def gdal_tiff(path, arr, dtype=None, nodata=None, georef=True, options=None):
    from osgeo import gdal
    import numpy as np
    gdal.UseExceptions()
    arr = np.asarray(arr)
    bands = 1 if arr.ndim == 2 else arr.shape[0]
    h, w = arr.shape[-2:]
    gt = {"float32": gdal.GDT_Float32, "float64": gdal.GDT_Float64, "uint8": gdal.GDT_Byte,
          "uint16": gdal.GDT_UInt16, "int16": gdal.GDT_Int16, "int32": gdal.GDT_Int32,
          "uint32": gdal.GDT_UInt32, "complex64": gdal.GDT_CFloat32}[dtype or str(arr.dtype)]
    ds = gdal.GetDriverByName("GTiff").Create(path, w, h, bands, gt, options or [])
    if georef:
        src = gdal.Open(os.path.join(DATA, "whitebox_dem_f32_utm18n.tif"))
        g = src.GetGeoTransform()
        ds.SetGeoTransform((g[0], g[1], 0, g[3], 0, g[5]))
        ds.SetProjection(src.GetProjection())
    for b in range(bands):
        band = ds.GetRasterBand(b + 1)
        if nodata is not None:
            band.SetNoDataValue(nodata)
        band.WriteArray(arr if arr.ndim == 2 else arr[b])
    ds = None


def dem_crop(w, h, x0=100, y0=100):
    from osgeo import gdal
    gdal.UseExceptions()
    ds = gdal.Open(os.path.join(DATA, "whitebox_dem_f32_utm18n.tif"))
    return ds.GetRasterBand(1).ReadAsArray(x0, y0, w, h)


def write(out, name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


def main():
    import numpy as np
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    os.makedirs(out, exist_ok=True)
    dem = dem_crop(16, 16)
    good = os.path.join(out, "ok-16x16.tif")
    gdal_tiff(good, dem)
    good_bytes = open(good, "rb").read()
    os.remove(good)

    # Damaged and wrong files.
    write(out, "empty.tif", b"")
    write(out, "empty.png", b"")
    write(out, "text.tif", b"hello, this is not an image\n")
    write(out, "wrong-magic.tif", b"IX*\0" + good_bytes[4:])
    write(out, "tiff-magic-only.tif", b"II*\0")
    write(out, "bad-ifd-offset.tif", b"II*\0" + struct.pack("<I", 0x7FFFFFF0) + good_bytes[8:64])
    write(out, "truncated.tif", good_bytes[: len(good_bytes) // 2])
    grey = [[(x * 16 + y,) for x in range(16)] for y in range(16)]
    png8 = png_bytes(grey, 8, 0)
    write(out, "wrong-magic.png", b"\x89PNX" + png8[4:])
    write(out, "truncated.png", png8[: len(png8) - 30])
    write(out, "png-signature-only.png", png8[:8])
    bad_crc = bytearray(png8)
    idat = png8.index(b"IDAT")
    idat_len = struct.unpack(">I", png8[idat - 4:idat])[0]
    bad_crc[idat + 4 + idat_len] ^= 0xFF  # IDAT's CRC
    write(out, "bad-crc.png", bytes(bad_crc))

    # Sizes: huge claims, empty, tiny, odd.
    write(out, "huge-100000x100000.tif", tiff_header_only(100000, 100000))
    write(out, "huge-1000000x1000000.tif", tiff_header_only(1000000, 1000000))
    write(out, "zero-0x0.tif", tiff_header_only(0, 0))
    write(out, "zero-16x0.tif", tiff_header_only(16, 0))
    write(out, "huge-100000x100000.png", png_bytes([[(0,)]], 8, 0, width=100000, height=100000))
    write(out, "zero-0x0.png", png_bytes([[(0,)]], 8, 0, width=0, height=0))
    gdal_tiff(os.path.join(out, "ok-1x1.tif"), dem[:1, :1])
    gdal_tiff(os.path.join(out, "ok-2x2.tif"), dem[:2, :2])
    gdal_tiff(os.path.join(out, "ok-7x3.tif"), dem[:3, :7])
    gdal_tiff(os.path.join(out, "ok-3x7-int16.tif"), np.round(dem[:7, :3]).astype(np.int16), georef=False)
    gdal_tiff(os.path.join(out, "ok-16x5-uint8-tiled.tif"), (dem[:5, :16] - dem.min()).astype(np.uint8),
              options=["TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16", "COMPRESS=DEFLATE"])
    write(out, "ok-1x1.png", png_bytes([[(200,)]], 8, 0))
    write(out, "ok-5x3-grey-alpha16.png",
          png_bytes([[(x * 9000 + y, 0 if (x + y) % 4 == 0 else 65535) for x in range(5)] for y in range(3)], 16, 4))
    write(out, "ok-9x7-grey4-interlaced.png", png_bytes([[((x + y) % 16,) for x in range(9)] for y in range(7)],
                                                       4, 0, interlace=True))

    # Nodata: NaN/Inf cells, all-nodata maps.
    a = dem.copy()
    a[2, 3] = np.nan
    a[5, 5] = np.inf
    a[7, 1] = -np.inf
    a[0, 0] = np.nan
    gdal_tiff(os.path.join(out, "ok-nan-inf.tif"), a)
    gdal_tiff(os.path.join(out, "ok-all-nodata.tif"), np.full((4, 6), -9999.0, np.float32), nodata=-9999.0)
    gdal_tiff(os.path.join(out, "ok-all-nan.tif"), np.full((3, 3), np.nan, np.float32))
    write(out, "ok-all-transparent.png", png_bytes([[(7, 0)] * 4] * 4, 8, 4))
    # GDAL writes only numeric nodata values: patch the tag's text.
    p = os.path.join(out, "bad-nodata-string.tif")
    gdal_tiff(p, dem[:4, :4], nodata=-12345)
    b = open(p, "rb").read()
    assert b.count(b"-12345\0") == 1
    write(out, "bad-nodata-string.tif", b.replace(b"-12345\0", b"hello!\0"))

    # Sample layouts erode refuses, and several bands.
    gdal_tiff(os.path.join(out, "three-band.tif"), np.stack([dem[:4, :4]] * 3))
    gdal_tiff(os.path.join(out, "complex.tif"), dem[:4, :4].astype(np.complex64))
    gdal_tiff(os.path.join(out, "one-bit.tif"), (dem[:8, :8] > dem.mean()).astype(np.uint8), dtype="uint8",
              options=["NBITS=1"])
    gdal_tiff(os.path.join(out, "twelve-bit.tif"), (dem[:4, :4] - dem.min()).astype(np.uint16), dtype="uint16",
              options=["NBITS=12"])
    write(out, "colour.png", png_bytes([[(x, y, 0) for x in range(4)] for y in range(4)], 8, 2))
    write(out, "palette.png", png_bytes([[(x % 2,) for x in range(4)] for y in range(4)], 8, 3,
                                        pre=[(b"PLTE", b"\0\0\0\xff\xff\xff")]))
    write(out, "bad-mapping.png", png_bytes(grey, 8, 0, pre=[itxt("erode:height-mapping", "min=5 max=1")]))

    # Recipes with every kind of wrong value.
    recipes = {
        "wrong-type": '{"mei": {"dt": "fast"}}',
        "wrong-type-object": '{"mei": 5}',
        "null-value": '{"mei": {"dt": null}}',
        "boolean": '{"seed": true}',
        "out-of-range": '{"mei": {"dt": -1}}',
        "out-of-range-int": '{"droplet": {"radius": 0}}',
        "not-integer": '{"mei": {"steps": 2.5}}',
        "unknown-key": '{"mei": {"stpes": 3}}',
        "unknown-top": '{"frobnicate": 1}',
        "misplaced-key": '{"mei": {"inertia": 0.1}}',
        "bad-enum": '{"model": "lbm"}',
        "bad-relief": '{"droplet": {"height_unit": "flat"}}',
        "malformed": '{"mei": {"dt": 0.1,}}',
        "unterminated": '{"mei": {"dt": 0.1\n',
        "wrong-version": '{"erode_recipe": 2, "future_key": 1}',
        "version-string": '{"erode_recipe": "1"}',
        "duplicate": '{"seed": 1, "model": "mei", "seed": 2}',
        "deep-nesting": '{"comment": ' + "[" * 5000 + "]" * 5000 + "}",
        "nested-array": '{"comment": ' + "[" * 500 + "]" * 500 + "}",
        "huge-number": '{"seed": 1e400}',
        "huge-steps": '{"mei": {"steps": 1e300}}',
        "nan": '{"mei": {"dt": NaN}}',
        "empty": "",
        "whitespace": "  \n\t\n",
        "array": "[1, 2]",
        "string": '"mei"',
        "null": "null",
        "nul-byte": '{"seed": 1}\0',
        "trailing": "{} {}",
        "too-many-sources": '{"mei": {"sources": [' + ",".join(['{"x": 1, "y": 1, "rate": 1}'] * 65) + "]}}",
        "source-missing-rate": '{"mei": {"sources": [{"x": 1, "y": 1}]}}',
        "source-not-object": '{"mei": {"sources": [1]}}',
        "control-key": '{"a\u0001b\nc": 1}',
        "long-key": '{"' + "k" * 1000 + '": 1}',
    }
    for name, text in recipes.items():
        write(out, "recipe-%s.json" % name, text.encode())
    write(out, "recipe-binary.json", png8)


if __name__ == "__main__":
    main()
