/*
 * What io/png_read.c and io/png_write.c agree on: erode's own PNG chunks.
 * Private to io/ (and the PNG unit tests).
 *
 * erode writes 16-bit greyscale PNGs (grey + alpha when some cells are
 * nodata) and records in an iTXt chunk how the raw samples map to heights:
 *
 *     keyword ER_PNG_KEY_MAPPING, text "min=<%.17g> max=<%.17g>"
 *     value = min + raw / (2^bit_depth - 1) * (max - min)   (in double)
 *
 * The chunk may come before or after the image data (erode writes it
 * before).  A PNG without this chunk reads as raw / (2^bit_depth - 1),
 * i.e. 0..1; one whose mapping chunk is damaged, repeated or cannot be read
 * (a bad zlib stream, over ER_PNG_CHUNK_MAX inflated, past
 * ER_PNG_TEXT_CHUNKS_MAX text chunks) is refused.
 * The effective recipe and erode version go, as JSON, into a second iTXt
 * chunk (ER_PNG_KEY_PROVENANCE) that the reader ignores.
 */
#ifndef ER_PNG_COMMON_H
#define ER_PNG_COMMON_H

#define ER_PNG_KEY_MAPPING "erode:height-mapping"
#define ER_PNG_KEY_PROVENANCE "erode:provenance"

/* Largest ancillary chunk libpng may allocate while reading, inflated text
 * included (a provenance recipe is a few KiB), and the most text chunks it
 * keeps (libpng's chunk cache; later ones are dropped).  Together they bound
 * what text costs: libpng keeps every text chunk until the read ends, and
 * with its defaults (1000 chunks) a 2 MB PNG of zTXt bombs cost 8 GB.  A
 * mapping chunk libpng drops is an error (io/png_read.c). */
#define ER_PNG_CHUNK_MAX (1u << 20)
#define ER_PNG_TEXT_CHUNKS_MAX 64

/* Widest and tallest PNG accepted (the PNG format's own limit, 2^31 - 1);
 * the real guard against huge images is er_read_opts.max_bytes, checked on
 * the header before any allocation. */
#define ER_PNG_SIDE_MAX 0x7fffffffu

#endif
