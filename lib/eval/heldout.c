/* lib/eval/heldout.c — is the evaluation text held out from calibration?
 *
 * A quantizer that used calibration text records its fingerprint
 * (lib/quantize/calib.c) in the output's metadata (keys in quanta/quantize.h,
 * docs/eval.md):
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
#include "quantize/quantize_internal.h"

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
        qt__calib_shingle_scan(eval_file, used, match_add, &m);
        out->n_sampled = m.n_sampled;
        out->n_matched = m.n_matched;
    }
    if (out->same_file && used > 0) out->overlap = (double)out->overlap_bytes / (double)used;
    else if (out->n_sampled > 0) out->overlap = (double)out->n_matched / (double)out->n_sampled;
    out->overlaps = out->overlap_bytes > 0 || out->overlap >= QT_HELDOUT_WARN_SHARE;
    return QT_OK;
}
