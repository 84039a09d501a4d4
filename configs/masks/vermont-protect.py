#!/usr/bin/python3
# Paints configs/masks/vermont-protect.tif, the mask of configs/mei-masked.json,
# on the grid of the bundled Vermont DEM (tests/data/whitebox_dem_f32_utm18n.tif):
# 0 (erosion and deposition held) inside an ellipse over the valley in the
# middle of the map, rising linearly to 1 (the recipe acts fully) over 8 cells
# around it.  Run from the source tree: configs/masks/vermont-protect.py
import numpy as np
from osgeo import gdal

dem = gdal.Open("tests/data/whitebox_dem_f32_utm18n.tif")
w, h = dem.RasterXSize, dem.RasterYSize
y, x = np.mgrid[0:h, 0:w]
r = np.hypot((x - 0.55 * w) / 40.0, (y - 0.5 * h) / 28.0)   # 1 on the ellipse's edge
mask = np.clip((r - 1.0) * 40.0 / 8.0, 0.0, 1.0).astype(np.float32)
out = gdal.GetDriverByName("GTiff").Create("configs/masks/vermont-protect.tif", w, h, 1,
                                           gdal.GDT_Float32, ["COMPRESS=DEFLATE", "PREDICTOR=3"])
out.SetGeoTransform(dem.GetGeoTransform())
out.SetProjection(dem.GetProjection())
out.GetRasterBand(1).WriteArray(mask)
out = None
