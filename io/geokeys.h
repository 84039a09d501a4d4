/*
 * The GeoTIFF keys and codes (GeoTIFF 1.1) that io/ reads (io/geotags.c)
 * and writes for a PNG that GDAL georeferenced (io/png_pam.c).  Private
 * to io/.
 */
#ifndef ER_GEOKEYS_H
#define ER_GEOKEYS_H

#define KEY_MODEL_TYPE 1024          /* GTModelTypeGeoKey */
#define KEY_RASTER_TYPE 1025         /* GTRasterTypeGeoKey */
#define KEY_ANGULAR_UNITS 2054       /* GeogAngularUnitsGeoKey */
#define KEY_ANGULAR_UNIT_SIZE 2055   /* GeogAngularUnitSizeGeoKey [radians] */
#define KEY_LINEAR_UNITS 3076        /* ProjLinearUnitsGeoKey */
#define KEY_LINEAR_UNIT_SIZE 3077    /* ProjLinearUnitSizeGeoKey [metres] */
#define KEY_GEOGRAPHIC_TYPE 2048     /* GeographicTypeGeoKey */
#define KEY_PROJECTED_TYPE 3072      /* ProjectedCSTypeGeoKey */
#define KEY_VERTICAL_TYPE 4096       /* VerticalCSTypeGeoKey */
#define MODEL_PROJECTED 1
#define MODEL_GEOGRAPHIC 2
#define MODEL_GEOCENTRIC 3
#define RASTER_PIXEL_IS_AREA 1
#define RASTER_PIXEL_IS_POINT 2
#define USER_DEFINED 32767
#define TAG_GEODOUBLES 34736
#define TAG_GEOASCII 34737
#define KEY_GT_CITATION 1026         /* GTCitationGeoKey (text) */
#define KEY_GEOG_CITATION 2049       /* GeogCitationGeoKey (text) */
#define KEY_PCS_CITATION 3073        /* PCSCitationGeoKey (text) */
#define EPSG_METRE 9001
#define EPSG_DEGREE 9102

#endif
