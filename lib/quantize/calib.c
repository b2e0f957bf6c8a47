/* lib/quantize/calib.c — the calibration text's fingerprint (quanta/quantize.h):
 * SHA-256 of the file, the byte ranges used, and a bottom-k sample of the
 * hashes of its 13-word shingles (13-grams: Brown et al. 2020, appendix C;
 * bottom-k sampling: Cohen & Kaplan 2007), recorded as GGUF metadata so that
 * lib/eval/heldout.c can tell whether evaluation text was held out.
 */
#include <jansson.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "quanta/quantize.h"
#include "quantize_internal.h"

/* ---- SHA-256, FIPS 180-4 ---------------------------------------------------- */

static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t ror32(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256_block(uint32_t h[8], const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) + sha_k[i] + w[i];
        uint32_t t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void qt_sha256_hex(const void *data, size_t len, char hex[65]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const uint8_t *p = data;
    size_t full = len / 64 * 64;
    for (size_t i = 0; i < full; i += 64) sha256_block(h, p + i);
    /* padding: 0x80, zeros, 64-bit big-endian bit length, in one or two blocks */
    uint8_t tail[128] = {0};
    size_t rest = len - full;
    if (rest) memcpy(tail, p + full, rest);
    tail[rest] = 0x80;
    size_t tl = rest + 1 + 8 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++) tail[tl - 1 - i] = (uint8_t)(bits >> (8 * i));
    sha256_block(h, tail);
    if (tl == 128) sha256_block(h, tail + 64);
    for (int i = 0; i < 8; i++) snprintf(hex + 8 * i, 9, "%08x", h[i]);
}

/* ---- shingles ------------------------------------------------------------------ */

static bool is_ws(uint8_t c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

/* FNV-1a 64 (Fowler, Noll, Vo) of the shingle's words joined by one space, so
 * line breaks and runs of spaces do not change a shingle. */
#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int32_t sort_unique(uint64_t *v, int32_t n) {
    if (n <= 1) return n;
    qsort(v, (size_t)n, sizeof *v, cmp_u64);
    int32_t m = 1;
    for (int32_t i = 1; i < n; i++)
        if (v[i] != v[m - 1]) v[m++] = v[i];
    return m;
}

/* A bounded set of the smallest hashes seen: append, and when full, sort,
 * dedupe and keep the `cap` smallest (amortised O(n log cap)). */
typedef struct bottomk { uint64_t *v; int32_t n, cap, room; uint64_t cutoff; } bottomk;

static void bottomk_compact(bottomk *b) {
    b->n = sort_unique(b->v, b->n);
    if (b->n > b->cap) b->n = b->cap;
    if (b->n == b->cap) b->cutoff = b->v[b->n - 1];
}

static void bottomk_add(void *ctx, uint64_t h) {
    bottomk *b = ctx;
    if (h > b->cutoff) return;
    if (b->n == b->room) bottomk_compact(b);
    if (h > b->cutoff) return;
    b->v[b->n++] = h;
}

/* Word boundaries of text, then the hash of every window of
 * QT_CALIB_SHINGLE_WORDS words, passed to fn. */
void qt__calib_shingle_scan(const uint8_t *t, size_t len, void (*fn)(void *, uint64_t), void *ctx) {
    enum { W = QT_CALIB_SHINGLE_WORDS };
    size_t wb[W], we[W]; /* ring of the last W words */
    int64_t n_words = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && is_ws(t[i])) i++;
        if (i >= len) break;
        size_t b = i;
        while (i < len && !is_ws(t[i])) i++;
        wb[n_words % W] = b;
        we[n_words % W] = i;
        n_words++;
        if (n_words < W) continue;
        uint64_t h = FNV_OFFSET;
        for (int k = 0; k < W; k++) {
            int64_t w = (n_words - W + k) % W;
            if (k) h = (h ^ ' ') * FNV_PRIME;
            for (size_t j = wb[w]; j < we[w]; j++) h = (h ^ t[j]) * FNV_PRIME;
        }
        fn(ctx, h);
    }
}

qt_status qt_calib_shingles(const void *text, size_t len, uint64_t cutoff, int32_t cap, uint64_t **out,
                            int32_t *n_out) {
    *out = NULL;
    *n_out = 0;
    if (cap <= 0) return qt_error(QT_ERR_ARG, "shingles: capacity %d", (int)cap);
    bottomk bk = {.cap = cap, .room = cap * 2, .cutoff = cutoff};
    bk.v = malloc(sizeof(uint64_t) * (size_t)bk.room);
    if (!bk.v) return qt_error(QT_ERR_NOMEM, "shingles: out of memory");
    qt__calib_shingle_scan(text, len, bottomk_add, &bk);
    bottomk_compact(&bk);
    *out = bk.v;
    *n_out = bk.n;
    return QT_OK;
}

/* ---- fingerprints ------------------------------------------------------------- */

void qt_calib_fingerprint_free(qt_calib_fingerprint *fp) {
    if (!fp) return;
    free(fp->shingles);
    fp->shingles = NULL;
    fp->n_shingles = 0;
}

static qt_status check_ranges(const qt_calib_fingerprint *fp, uint64_t size) {
    for (int32_t i = 0; i < fp->n_ranges; i++)
        if (fp->ranges[i][0] >= fp->ranges[i][1] || (size && fp->ranges[i][1] > size))
            return qt_error(QT_ERR_ARG, "calibration range %llu-%llu is empty or past the end of the file (%llu bytes)",
                            (unsigned long long)fp->ranges[i][0], (unsigned long long)fp->ranges[i][1],
                            (unsigned long long)size);
    return QT_OK;
}

qt_status qt_calib_fingerprint_make(const void *file, size_t size, const uint64_t (*ranges)[2], int32_t n_ranges,
                                    qt_calib_fingerprint *out) {
    memset(out, 0, sizeof *out);
    if (n_ranges < 0 || n_ranges > QT_CALIB_MAX_RANGES)
        return qt_error(QT_ERR_ARG, "calibration: %d ranges (at most %d)", (int)n_ranges, QT_CALIB_MAX_RANGES);
    out->n_ranges = n_ranges;
    for (int32_t i = 0; i < n_ranges; i++) { out->ranges[i][0] = ranges[i][0]; out->ranges[i][1] = ranges[i][1]; }
    qt_status s = check_ranges(out, size);
    if (s) return s;
    qt_sha256_hex(file, size, out->sha256);
    bottomk bk = {.cap = QT_CALIB_MAX_SHINGLES, .room = 2 * QT_CALIB_MAX_SHINGLES, .cutoff = UINT64_MAX};
    bk.v = malloc(sizeof(uint64_t) * (size_t)bk.room);
    if (!bk.v) return qt_error(QT_ERR_NOMEM, "calibration: out of memory");
    const uint8_t *p = file;
    if (n_ranges == 0) qt__calib_shingle_scan(p, size, bottomk_add, &bk);
    for (int32_t i = 0; i < n_ranges; i++) qt__calib_shingle_scan(p + ranges[i][0], ranges[i][1] - ranges[i][0], bottomk_add, &bk);
    bottomk_compact(&bk);
    out->shingles = bk.v;
    out->n_shingles = bk.n;
    return QT_OK;
}

qt_status qt_calib_parse_ranges(const char *s, qt_calib_fingerprint *fp) {
    fp->n_ranges = 0;
    const char *p = s;
    while (*p) {
        char *end;
        if (fp->n_ranges == QT_CALIB_MAX_RANGES)
            return qt_error(QT_ERR_FORMAT, "%s: more than %d ranges", QT_CALIB_KEY_RANGES, QT_CALIB_MAX_RANGES);
        if (*p < '0' || *p > '9') goto bad;
        unsigned long long a = strtoull(p, &end, 10);
        if (*end != '-' || end[1] < '0' || end[1] > '9') goto bad;
        unsigned long long b = strtoull(end + 1, &end, 10);
        if (*end != ',' && *end != '\0') goto bad;
        if (a >= b) return qt_error(QT_ERR_FORMAT, "%s: range %llu-%llu is empty", QT_CALIB_KEY_RANGES, a, b);
        fp->ranges[fp->n_ranges][0] = a;
        fp->ranges[fp->n_ranges][1] = b;
        fp->n_ranges++;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p) goto bad;
    }
    return QT_OK;
bad:
    return qt_error(QT_ERR_FORMAT, "%s: \"%s\" is not a list of byte ranges like \"0-4096,8192-16384\"",
                    QT_CALIB_KEY_RANGES, s);
}

void qt_calib_format_ranges(const qt_calib_fingerprint *fp, char *buf, size_t cap) {
    size_t n = 0;
    if (cap) buf[0] = '\0';
    for (int32_t i = 0; i < fp->n_ranges && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%llu-%llu", i ? "," : "", (unsigned long long)fp->ranges[i][0],
                              (unsigned long long)fp->ranges[i][1]);
}

/* ---- the GGUF record ------------------------------------------------------------ */

static bool is_hex64(const char *s) {
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return s[64] == '\0';
}

/* A compressed-tensors directory's record: config.json's
 * quantization_config.quanta.calibration (qt_ct_export_opts.calibration):
 * sha256, scheme, and shingles as 16-hex-digit strings. */
static qt_status calib_from_config(const char *dir, qt_calib_fingerprint *fp, bool *has) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *root = json_load_file(path, 0, NULL);
    json_t *c = json_object_get(json_object_get(json_object_get(root, "quantization_config"), "quanta"), "calibration");
    qt_status s = QT_OK;
    const char *sha = json_string_value(json_object_get(c, "sha256"));
    const char *scheme = json_string_value(json_object_get(c, "scheme"));
    json_t *sh = json_object_get(c, "shingles");
    /* No "sha256": no calibration text was recorded (the object may hold other provenance,
     * such as an --imatrix file's quanta.imatrix.sha256), as a GGUF without the key. */
    if (!c || !json_object_get(c, "sha256")) goto done;
    if (!sha || !is_hex64(sha)) {
        s = qt_error(QT_ERR_FORMAT, "%s: field 'quantization_config.quanta.calibration.sha256': not 64 lowercase hex digits", path);
        goto done;
    }
    memcpy(fp->sha256, sha, 65);
    *has = true;
    if (!scheme || strcmp(scheme, QT_CALIB_SCHEME) || !json_is_array(sh) || json_array_size(sh) == 0) goto done;
    if (json_array_size(sh) > QT_CALIB_MAX_SHINGLES || !(fp->shingles = malloc(sizeof(uint64_t) * json_array_size(sh)))) {
        s = qt_error(QT_ERR_FORMAT, "%s: field 'quantization_config.quanta.calibration.shingles': %zu entries, at most %d",
                     path, json_array_size(sh), QT_CALIB_MAX_SHINGLES);
        goto done;
    }
    for (size_t i = 0; i < json_array_size(sh); i++) {
        const char *h = json_string_value(json_array_get(sh, i));
        char *end = NULL;
        uint64_t v = h && strlen(h) == 16 ? strtoull(h, &end, 16) : 0;
        if (!end || *end || (i && v <= fp->shingles[i - 1])) {
            s = qt_error(QT_ERR_FORMAT, "%s: field 'quantization_config.quanta.calibration.shingles': entry %zu is not an "
                         "ascending 16-hex-digit hash", path, i);
            break;
        }
        fp->shingles[fp->n_shingles++] = v;
    }
done:
    if (s != QT_OK) { qt_calib_fingerprint_free(fp); *has = false; }
    json_decref(root);
    return s;
}

qt_status qt_calib_from_model(const qt_model *m, qt_calib_fingerprint *fp, bool *has) {
    memset(fp, 0, sizeof *fp);
    *has = false;
    const qt_gguf *g = qt_model_gguf(m);
    const char *sha, *name = qt_model_path(m);
    struct stat sb;
    if (!g && name && stat(name, &sb) == 0 && S_ISDIR(sb.st_mode)) return calib_from_config(name, fp, has);
    if (!g || qt_gguf_get_str(g, QT_CALIB_KEY_SHA256, &sha) != QT_OK) return QT_OK;
    if (!is_hex64(sha)) return qt_error(QT_ERR_FORMAT, "%s: metadata '%s': not 64 lowercase hex digits", name, QT_CALIB_KEY_SHA256);
    memcpy(fp->sha256, sha, 65);
    const char *ranges, *scheme;
    if (qt_gguf_get_str(g, QT_CALIB_KEY_RANGES, &ranges) == QT_OK) {
        qt_status s = qt_calib_parse_ranges(ranges, fp);
        if (s) {
            char why[256];
            snprintf(why, sizeof why, "%s", qt_last_error());
            return qt_error(s, "%s: %s", name, why);
        }
    }
    const qt_gguf_value *arr;
    bool scheme_ok = qt_gguf_get_str(g, QT_CALIB_KEY_SCHEME, &scheme) == QT_OK && !strcmp(scheme, QT_CALIB_SCHEME);
    if (scheme_ok && qt_gguf_get_arr(g, QT_CALIB_KEY_SHINGLES, QT_GGUF_UINT64, &arr) == QT_OK && arr->arr.n > 0) {
        if (arr->arr.n > QT_CALIB_MAX_SHINGLES)
            return qt_error(QT_ERR_FORMAT, "%s: metadata '%s': %llu entries, at most %d", name, QT_CALIB_KEY_SHINGLES,
                            (unsigned long long)arr->arr.n, QT_CALIB_MAX_SHINGLES);
        fp->shingles = malloc(sizeof(uint64_t) * arr->arr.n);
        if (!fp->shingles) return qt_error(QT_ERR_NOMEM, "%s: out of memory", name);
        fp->n_shingles = (int32_t)arr->arr.n;
        for (uint64_t i = 0; i < arr->arr.n; i++) fp->shingles[i] = qt_gguf_arr_u64(arr, i);
        for (int32_t i = 1; i < fp->n_shingles; i++)
            if (fp->shingles[i] <= fp->shingles[i - 1]) {
                qt_calib_fingerprint_free(fp);
                return qt_error(QT_ERR_FORMAT, "%s: metadata '%s': not strictly ascending at %d", name,
                                QT_CALIB_KEY_SHINGLES, (int)i);
            }
    }
    *has = true;
    return QT_OK;
}

int32_t qt_calib_gguf_kv(const qt_calib_fingerprint *fp, char *ranges_buf, size_t cap, qt_gguf_kv out[4]) {
    int32_t n = 0;
    memset(out, 0, sizeof(qt_gguf_kv) * 4);
    out[n].key = QT_CALIB_KEY_SHA256;
    out[n].value.type = QT_GGUF_STRING;
    out[n].value.str.ptr = fp->sha256;
    out[n++].value.str.len = strlen(fp->sha256);
    if (fp->n_ranges > 0 && cap > 0) {
        qt_calib_format_ranges(fp, ranges_buf, cap);
        out[n].key = QT_CALIB_KEY_RANGES;
        out[n].value.type = QT_GGUF_STRING;
        out[n].value.str.ptr = ranges_buf;
        out[n++].value.str.len = strlen(ranges_buf);
    }
    out[n].key = QT_CALIB_KEY_SCHEME;
    out[n].value.type = QT_GGUF_STRING;
    out[n].value.str.ptr = QT_CALIB_SCHEME;
    out[n++].value.str.len = strlen(QT_CALIB_SCHEME);
    out[n].key = QT_CALIB_KEY_SHINGLES;
    out[n].value.type = QT_GGUF_ARRAY;
    out[n].value.arr.type = QT_GGUF_UINT64;
    out[n].value.arr.n = (uint64_t)fp->n_shingles;
    out[n++].value.arr.raw = fp->shingles; /* GGUF is little-endian, as every target of this build */
    return n;
}
