/* lib/quant/ct8_x86.h — what ct8_avx2.c and ct8_avx512.c share: the dispatch on a row's
 * checkpoint dtype (bf16, f16, f32 rounding of the decoded values) to their width-specific
 * dot_dt / gemm_dt / to_float_dt, and the exported kernels for both row types. Included once
 * at the end of each, with CT8_ISA (avx2 or avx512) naming the suffix of its kernels. */
#define CT8_CAT_(a, b) a##_##b
#define CT8_CAT(a, b) CT8_CAT_(a, b)

static float dot(qt_type t, const void *x, const float *y, int64_t n) {
    switch (qt__ct8_dtype(x)) {
    case QT_CT_BF16: return dot_dt(t, x, y, n, QT_CT_BF16);
    case QT_CT_F16: return dot_dt(t, x, y, n, QT_CT_F16);
    default: return dot_dt(t, x, y, n, QT_CT_F32);
    }
}

static float gemm(qt_type t, const void *x, const float *y, int64_t n) {
    if (n % 16 != 0) return dot(t, x, y, n);
    switch (qt__ct8_dtype(x)) {
    case QT_CT_BF16: return gemm_dt(t, x, y, n, QT_CT_BF16);
    case QT_CT_F16: return gemm_dt(t, x, y, n, QT_CT_F16);
    default: return gemm_dt(t, x, y, n, QT_CT_F32);
    }
}

static void to_float(qt_type t, const void *x, float *y, int64_t n) {
    switch (qt__ct8_dtype(x)) {
    case QT_CT_BF16: to_float_dt(t, x, y, n, QT_CT_BF16); break;
    case QT_CT_F16: to_float_dt(t, x, y, n, QT_CT_F16); break;
    default: to_float_dt(t, x, y, n, QT_CT_F32); break;
    }
}

#define QT__CT8_KERNELS(t, T)                                                                       \
    void CT8_CAT(qt__ct8_##t##_to_float, CT8_ISA)(const void *row, float *y, int64_t n) {           \
        to_float(QT_TYPE_CT_##T, row, y, n);                                                        \
    }                                                                                               \
    float CT8_CAT(qt__dot_ct8_##t, CT8_ISA)(const void *x, const void *y, int64_t n) {              \
        return dot(QT_TYPE_CT_##T, x, y, n);                                                        \
    }                                                                                               \
    float CT8_CAT(qt__gemm_ct8_##t, CT8_ISA)(const void *x, const void *y, int64_t n) {             \
        return gemm(QT_TYPE_CT_##T, x, y, n);                                                       \
    }
QT__CT8_KERNELS(g128, W8_G128)
QT__CT8_KERNELS(ch, W8_CH)
#undef QT__CT8_KERNELS
#undef CT8_CAT
#undef CT8_CAT_
