/* lib/eval/heldout.c — is the evaluation text held out from calibration?
 *
 * A quantizer that used calibration text records its fingerprint in the
 * output's metadata (keys in quanta/eval.h, docs/eval.md):
 *   - the SHA-256 of the calibration file and the byte ranges it used: when
 *     the evaluation file is that same file, the overlap of byte ranges is exact;
 *   - a bottom-k sample of the hashes of its 13-word shingles (13-grams are
 *     the contamination unit of Brown et al. 2020, "Language Models are
 *     Few-Shot Learners", appendix C). Bottom-k sampling (Cohen & Kaplan 2007)
 *     keeps every hash below a cutoff, so the same rule applied to the
 *     evaluation text samples the same shingles and the matched share
 *     estimates how much of it the calibration text contained, whatever file
 *     either came from.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quanta/eval.h"

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
static void shingle_scan(const uint8_t *t, size_t len, void (*fn)(void *, uint64_t), void *ctx) {
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
    shingle_scan(text, len, bottomk_add, &bk);
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
    if (n_ranges == 0) shingle_scan(p, size, bottomk_add, &bk);
    for (int32_t i = 0; i < n_ranges; i++) shingle_scan(p + ranges[i][0], ranges[i][1] - ranges[i][0], bottomk_add, &bk);
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

static uint64_t range_overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
    uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? hi - lo : 0;
}

static bool contains(const uint64_t *v, int32_t n, uint64_t x) {
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && v[lo] == x;
}

/* Every occurrence of an evaluation shingle under the calibration cutoff is
 * sampled; the matched share estimates the share of the evaluation text's
 * 13-grams that the calibration text contains. */
typedef struct match_ctx { const qt_calib_fingerprint *calib; uint64_t cutoff; int32_t n_sampled, n_matched; } match_ctx;

static void match_add(void *ctx, uint64_t h) {
    match_ctx *m = ctx;
    if (h > m->cutoff || m->n_sampled == INT32_MAX) return;
    m->n_sampled++;
    m->n_matched += contains(m->calib->shingles, m->calib->n_shingles, h);
}

qt_status qt_heldout_check(const qt_calib_fingerprint *calib, const void *eval_file, size_t size, uint64_t used,
                           qt_heldout_result *out) {
    memset(out, 0, sizeof *out);
    if (used > size) used = size;
    char hex[65];
    qt_sha256_hex(eval_file, size, hex);
    out->same_file = strcmp(hex, calib->sha256) == 0;
    if (out->same_file) {
        if (calib->n_ranges == 0) out->overlap_bytes = used;
        for (int32_t i = 0; i < calib->n_ranges; i++)
            out->overlap_bytes += range_overlap(0, used, calib->ranges[i][0], calib->ranges[i][1]);
    }
    if (calib->n_shingles > 0) {
        match_ctx m = {calib, calib->shingles[calib->n_shingles - 1], 0, 0};
        shingle_scan(eval_file, used, match_add, &m);
        out->n_sampled = m.n_sampled;
        out->n_matched = m.n_matched;
    }
    if (out->same_file && used > 0) out->overlap = (double)out->overlap_bytes / (double)used;
    else if (out->n_sampled > 0) out->overlap = (double)out->n_matched / (double)out->n_sampled;
    out->overlaps = out->overlap_bytes > 0 || out->overlap >= QT_HELDOUT_WARN_SHARE;
    return QT_OK;
}
