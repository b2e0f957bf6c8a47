/* quanta/quantize.h — quantization: calibration data and (next) the algorithms.
 *
 * lib/quantize/ sits above engine, quant and io: algorithms observe a model
 * run layer by layer on calibration text (quanta/engine.h, qt_layerwise_*),
 * choose scales with pure numeric cores on plain arrays (lib/quant/), and
 * write GGUF or compressed-tensors files (lib/io/) in the formats of the one
 * table (quanta/formats.h). docs/architecture.md, "Quantization algorithms",
 * gives the lifecycle every algorithm follows.
 *
 *   qt_calib_*   the calibration text's fingerprint, recorded in the output so
 *                evaluation can tell whether its text was held out (docs/eval.md)
 */
#ifndef QUANTA_QUANTIZE_H
#define QUANTA_QUANTIZE_H

#include "core.h"
#include "gguf.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GGUF metadata a quantizer writes when it used calibration text (docs/eval.md):
 *   quanta.calibration.sha256    string: SHA-256 (hex) of the whole calibration file
 *   quanta.calibration.ranges    string: byte ranges of that file used, "a-b[,c-d...]" (half-open);
 *                                absent = the whole file
 *   quanta.calibration.shingles  array of uint64, ascending: bottom-k sample of the hashes of
 *                                the 13-word shingles of the calibration text actually used
 *   quanta.calibration.scheme    string: QT_CALIB_SCHEME (how the shingles were made) */
#define QT_CALIB_KEY_SHA256 "quanta.calibration.sha256"
#define QT_CALIB_KEY_RANGES "quanta.calibration.ranges"
#define QT_CALIB_KEY_SHINGLES "quanta.calibration.shingles"
#define QT_CALIB_KEY_SCHEME "quanta.calibration.scheme"
#define QT_CALIB_SCHEME "w13-fnv1a64-bottom4096"
#define QT_CALIB_SHINGLE_WORDS 13
#define QT_CALIB_MAX_SHINGLES 4096
#define QT_CALIB_MAX_RANGES 64

/* SHA-256 (FIPS 180-4) of a buffer as 64 lowercase hex digits + NUL. */
QT_API void qt_sha256_hex(const void *data, size_t len, char hex[65]);

typedef struct qt_calib_fingerprint {
    char sha256[65];
    int32_t n_ranges;                            /* 0: the whole file */
    uint64_t ranges[QT_CALIB_MAX_RANGES][2];     /* [begin, end) byte offsets */
    int32_t n_shingles;
    uint64_t *shingles;                          /* (n_shingles) ascending, unique */
} qt_calib_fingerprint;

/* Fingerprint of calibration text: the file's bytes and the ranges used
 * (n_ranges 0 = all of it). */
QT_API qt_status qt_calib_fingerprint_make(const void *file, size_t size, const uint64_t (*ranges)[2], int32_t n_ranges,
                                    qt_calib_fingerprint *out);
/* Parses "a-b,c-d" into fp->ranges. */
QT_API qt_status qt_calib_parse_ranges(const char *s, qt_calib_fingerprint *fp);
/* "a-b,c-d" into buf (cap bytes); "" for the whole file. */
QT_API void qt_calib_format_ranges(const qt_calib_fingerprint *fp, char *buf, size_t cap);
QT_API void qt_calib_fingerprint_free(qt_calib_fingerprint *fp);

/* Hashes of the sampled shingles of a text that fall under `cutoff` (the
 * largest stored calibration hash), appended to *out (malloc'd, ascending, unique). */
QT_API qt_status qt_calib_shingles(const void *text, size_t len, uint64_t cutoff, int32_t cap, uint64_t **out,
                            int32_t *n_out);

/* The metadata entries recording fp (QT_CALIB_KEY_*), for qt_gguf_write_opts.extra_kv:
 * sha256, scheme, shingles, and ranges unless fp covers the whole file. They
 * point into fp and into ranges_buf (cap bytes), which must outlive them.
 * Returns the number of entries written to out (at most 4). */
QT_API int32_t qt_calib_gguf_kv(const qt_calib_fingerprint *fp, char *ranges_buf, size_t cap, qt_gguf_kv out[4]);
/* Reads the record back from a model opened from GGUF; *has = false when the
 * model records no calibration text (or is not GGUF). A shingle sample with
 * another scheme is ignored (the SHA-256 / range check still applies);
 * malformed entries are QT_ERR_FORMAT naming the key. */
QT_API qt_status qt_calib_from_model(const qt_model *m, qt_calib_fingerprint *fp, bool *has);

#ifdef __cplusplus
}
#endif
#endif
