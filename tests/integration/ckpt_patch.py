#!/usr/bin/env python3
"""Sets one value of an erode checkpoint and makes its checksums right again
(io/checkpoint.h, format 6), so that a test can hand erode a file whose
checksums hold and whose contents no run leaves.

    ckpt_patch.py FILE WHERE INDEX VALUE

WHERE is one of
    array:I         float I of the state's array I (a cell, row-major)
    stage-array:I   float INDEX of the stage section's array I
    stage-value     double INDEX of the stage section's values
    model           double INDEX of the model section (after its counts; a
                    negative INDEX counts from its end, -1 the last)
    model-count:K   the model section's count K (INDEX is ignored)
VALUE is a number as Python reads it ("1e300", "nan", "-inf").
"""
import struct
import sys

FNV_INIT = 0xcbf29ce484222325
FNV_PRIME = 0x100000001b3
MASK64 = (1 << 64) - 1
HEADER = 240


def fnv_bytes(h, data):
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK64
    return h


def fnv_floats(h, data):
    """Folds little-endian floats one 32-bit word at a time (the data checksum)."""
    for (w,) in struct.iter_unpack("<I", data):
        h = ((h ^ w) * FNV_PRIME) & MASK64
    return h


def u32(d, at):
    return struct.unpack_from("<I", d, at)[0]


def u64(d, at):
    return struct.unpack_from("<Q", d, at)[0]


def layout(d):
    """Offsets of each part of a format-6 checkpoint."""
    if d[:8] != b"ERODECKP" or u32(d, 8) != 6:
        sys.exit("ckpt_patch: not a checkpoint of format 6")
    cells = u32(d, 32) * u32(d, 36)
    n_arrays, mask = u32(d, 40), u32(d, 44)
    arrays, at = {}, HEADER
    for i in range(n_arrays):
        if mask >> i & 1:
            arrays[i] = at
            at += 4 * cells
    lay = {"cells": cells, "arrays": arrays, "data_end": at}
    at += 8
    if mask >> 29 & 1:
        n = u32(d, at)
        lay["terms"] = at
        at += 4 + n * 24 + 8
    if mask >> 30 & 1:
        g = {"start": at, "arrays": {}}
        g_arrays, g_mask = u32(d, at + 8), u32(d, at + 12)
        at += 16
        for i in range(g_arrays):
            if g_mask >> i & 1:
                g["arrays"][i] = at
                at += 4 * cells
        n = u64(d, at)
        g["values"] = at + 8
        at += 8 + 8 * n
        g["sum"] = at
        at += 8
        lay["stage"] = g
    if mask >> 31 & 1:
        lay["model"] = at
        lay["model_sum"] = len(d) - 8
    return lay


def fix_sums(d, lay):
    struct.pack_into("<Q", d, 232, fnv_bytes(FNV_INIT, d[:232]))
    end = lay["data_end"]
    struct.pack_into("<Q", d, end, fnv_floats(FNV_INIT, d[HEADER:end]))
    g = lay.get("stage")
    if g:
        h = fnv_bytes(FNV_INIT, d[g["start"]:g["start"] + 16])
        h = fnv_floats(h, d[g["start"] + 16:g["values"] - 8])
        h = fnv_bytes(h, d[g["values"] - 8:g["sum"]])
        struct.pack_into("<Q", d, g["sum"], h)
    if "model" in lay:
        struct.pack_into("<Q", d, lay["model_sum"],
                         fnv_bytes(FNV_INIT, d[lay["model"]:lay["model_sum"]]))


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    path, where, index, value = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    with open(path, "rb") as f:
        d = bytearray(f.read())
    lay = layout(d)
    kind, _, arg = where.partition(":")
    if kind == "array":
        struct.pack_into("<f", d, lay["arrays"][int(arg)] + 4 * index, float(value))
    elif kind == "stage-array":
        struct.pack_into("<f", d, lay["stage"]["arrays"][int(arg)] + 4 * index, float(value))
    elif kind == "stage-value":
        struct.pack_into("<d", d, lay["stage"]["values"] + 8 * index, float(value))
    elif kind == "model":
        at = lay["model"] + 16 if index >= 0 else lay["model_sum"]
        struct.pack_into("<d", d, at + 8 * index, float(value))
    elif kind == "model-count":
        struct.pack_into("<Q", d, lay["model"] + 8 * int(arg), int(value))
    else:
        sys.exit("ckpt_patch: unknown place '%s'" % where)
    fix_sums(d, lay)
    with open(path, "wb") as f:
        f.write(d)


if __name__ == "__main__":
    main()
