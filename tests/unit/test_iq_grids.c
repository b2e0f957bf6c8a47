/* The i-quant code books (lib/quant/iq_grids.c) and their search tables.
 *
 * 1. Expanding each packed-level code book with its level values gives
 *    ggml-common.h's value grid (iq2xxs_grid, iq2xs_grid, iq2s_grid,
 *    iq1s_grid as little-endian uint64 per point, iq3xxs_grid, iq3s_grid as
 *    uint32), checked by the FNV-1a 64 hash of those tables' bytes, computed
 *    from ggml-common.h at llama.cpp commit 3f545bec.
 * 2. The map sends every point to its index, and the neighbour list of every
 *    other reachable code equals ggml's construction done the slow way: sort
 *    all points by (squared distance, index) and keep those within the
 *    n_want smallest distinct distances.
 */
#include "qtest.h"
#include "quanta.h"
#include "quant/iq_grids.h"

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

typedef struct {
    qt__iq_lattice_id id;
    const char *ggml_name;
    const int8_t *levels;
    uint64_t ggml_fnv1a;
    int n_want; /* ggml's nwant for this lattice */
} book;

static const book BOOKS[] = {
    {QT_IQ_LATTICE_2XXS, "iq2xxs_grid", qt__iq_levels_2, 0xbb4ee025b5ac6e8eull, 2},
    {QT_IQ_LATTICE_2XS, "iq2xs_grid", qt__iq_levels_2, 0xc9b1ee61e79909bdull, 2},
    {QT_IQ_LATTICE_2S, "iq2s_grid", qt__iq_levels_2, 0x123edd38a3b62b90ull, 1},
    {QT_IQ_LATTICE_1S, "iq1s_grid", qt__iq_levels_1, 0x6703ed863501ae2eull, 3},
    {QT_IQ_LATTICE_3XXS, "iq3xxs_grid", qt__iq_levels_3xxs, 0xdfa5dc83d6a155d5ull, 2},
    {QT_IQ_LATTICE_3S, "iq3s_grid", qt__iq_levels_3s, 0xfa37020c25b44829ull, 3},
};
#define N_BOOKS (int)(sizeof BOOKS / sizeof BOOKS[0])

static void test_value_grids_match_ggml(void) {
    for (int b = 0; b < N_BOOKS; b++) {
        const qt__iq_lattice *lat = qt__iq_lattice_get(BOOKS[b].id);
        CHECK(lat != NULL);
        if (!lat) continue;
        uint64_t h = 0xcbf29ce484222325ull;
        const unsigned mask = (1u << lat->bits) - 1;
        for (int j = 0; j < lat->n_points; j++) {
            uint8_t bytes[8];
            for (int i = 0; i < lat->dims; i++)
                bytes[i] = (uint8_t)BOOKS[b].levels[(lat->codes[j] >> (lat->bits * i)) & mask];
            h = fnv1a(h, bytes, (size_t)lat->dims);
        }
        CHECK_MSG(h == BOOKS[b].ggml_fnv1a, "%s: FNV-1a %016llx, ggml-common.h's is %016llx", BOOKS[b].ggml_name,
                  (unsigned long long)h, (unsigned long long)BOOKS[b].ggml_fnv1a);
    }
}

static int cmp_pair(const void *a, const void *b) {
    const int *l = a, *r = b;
    return l[0] != r[0] ? (l[0] < r[0] ? -1 : 1) : (l[1] < r[1] ? -1 : l[1] > r[1]);
}

static void test_map_and_neighbours(void) {
    int *pairs = malloc(sizeof(int) * 2 * 2048);
    for (int b = 0; b < N_BOOKS; b++) {
        const qt__iq_lattice *lat = qt__iq_lattice_get(BOOKS[b].id);
        if (!lat) continue;
        const uint32_t n_codes = 1u << (lat->bits * lat->dims), mask = (1u << lat->bits) - 1;
        int bad_map = 0, bad_list = 0, n_checked = 0;
        for (int j = 0; j < lat->n_points; j++) bad_map += lat->map[lat->codes[j]] != j;
        for (uint32_t u = 0; u < n_codes; u++) {
            int reachable = 1;
            for (int i = 0; i < lat->dims; i++) reachable &= lat->bits == 3 || ((u >> (2 * i)) & 3) != 3;
            if (!reachable) {
                bad_map += lat->map[u] != QT_IQ_UNREACHABLE;
                continue;
            }
            if (lat->map[u] >= 0) continue;
            if (u % 5 != 0) continue; /* a fifth of the codes keeps the test quick */
            for (int j = 0; j < lat->n_points; j++) {
                int d2 = 0;
                for (int i = 0; i < lat->dims; i++) {
                    const int a = 2 * (int)((u >> (lat->bits * i)) & mask) + 1;
                    const int c = 2 * (int)((lat->codes[j] >> (lat->bits * i)) & mask) + 1;
                    d2 += (a - c) * (a - c);
                }
                pairs[2 * j] = d2;
                pairs[2 * j + 1] = j;
            }
            qsort(pairs, (size_t)lat->n_points, 2 * sizeof(int), cmp_pair);
            int n = 0, have = 1, d = pairs[0];
            for (int j = 0; j < lat->n_points; j++) {
                if (pairs[2 * j] > d) {
                    if (have == BOOKS[b].n_want) break;
                    d = pairs[2 * j];
                    have++;
                }
                n++;
            }
            const uint16_t *list = qt__iq_neighbours(lat, u);
            int ok = list[0] == n;
            for (int j = 0; ok && j < n; j++) ok = list[1 + j] == pairs[2 * j + 1];
            bad_list += !ok;
            n_checked++;
        }
        CHECK_MSG(bad_map == 0, "%s: %d map entries wrong", BOOKS[b].ggml_name, bad_map);
        CHECK_MSG(bad_list == 0, "%s: %d of %d neighbour lists differ", BOOKS[b].ggml_name, bad_list, n_checked);
        CHECK(n_checked > 100);
    }
    free(pairs);
}

/* The same pointer every time, and out-of-range ids refused. */
static void test_built_once(void) {
    for (int b = 0; b < N_BOOKS; b++) CHECK(qt__iq_lattice_get(BOOKS[b].id) == qt__iq_lattice_get(BOOKS[b].id));
    CHECK(qt__iq_lattice_get(QT_IQ_LATTICE_COUNT) == NULL);
}

int main(void) {
    QT_RUN(test_value_grids_match_ggml);
    QT_RUN(test_map_and_neighbours);
    QT_RUN(test_built_once);
    return qt_test_finish("test_iq_grids");
}
