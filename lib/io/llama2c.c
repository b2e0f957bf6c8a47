/* lib/io/llama2c.c — Karpathy's llama2.c checkpoints and tokenizer.bin
 * (docs/formats.md §6), as a qt_model.
 *
 * The "legacy" (version 0) .bin has no magic: 7 int32 then float32 arrays.
 * Its size is fully determined by the header, so the header is trusted only
 * when the file is exactly that size. Version 1 ("ak42" magic, fp32) is read
 * too; version 2 (int8 groups) is refused. Q/K rows are already in the
 * interleaved order llama.cpp's llama arch uses (run.c rotates adjacent
 * pairs), so the model is built the way llama.cpp's llama2c converter builds
 * it: same tensor names and order, output.weight written out even when the
 * classifier is shared (pointing at the embedding's bytes), and the vocabulary
 * renamed and typed as that converter does (checked against
 * ../shared/models/stories260K.gguf by tests/unit/test_llama2c.c).
 *
 * Tokenizer rule (docs/io.md): qt_model_open_llama2c() takes an explicit
 * tokenizer path; otherwise the reader looks beside the checkpoint for
 * tok<vocab_size>.bin, then tokenizer.bin; with neither the model has no
 * vocabulary.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "io_internal.h"
#include "model/arch.h"
#include "quanta/llama2c.h"

#define L2C_MAGIC 0x616b3432u /* "ak42" */
#define L2C_V1_HEADER 256

typedef struct l2c_config {
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    bool shared_classifier;
    int version; /* 0 legacy, 1 */
} l2c_config;

static bool mul_ok(uint64_t a, uint64_t b, uint64_t *out) {
    if (a != 0 && b > UINT64_MAX / a) return false;
    *out = a * b;
    return true;
}

static bool add_ok(uint64_t *acc, uint64_t x) {
    if (*acc > UINT64_MAX - x) return false;
    *acc += x;
    return true;
}

static qt_status check_config(const char *name, const l2c_config *c) {
    const struct { const char *field; int32_t v; } pos[] = {
        {"dim", c->dim}, {"hidden_dim", c->hidden_dim}, {"n_layers", c->n_layers}, {"n_heads", c->n_heads},
        {"n_kv_heads", c->n_kv_heads}, {"vocab_size", c->vocab_size}, {"seq_len", c->seq_len},
    };
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        if (pos[i].v <= 0)
            return qt_error(QT_ERR_FORMAT, "%s: llama2.c header: %s is %" PRId32 ", must be positive", name, pos[i].field, pos[i].v);
    if (c->dim % c->n_heads != 0)
        return qt_error(QT_ERR_FORMAT, "%s: llama2.c header: n_heads %" PRId32 " does not divide dim %" PRId32, name, c->n_heads, c->dim);
    if (c->n_heads % c->n_kv_heads != 0)
        return qt_error(QT_ERR_FORMAT, "%s: llama2.c header: n_kv_heads %" PRId32 " does not divide n_heads %" PRId32, name,
                        c->n_kv_heads, c->n_heads);
    if ((c->dim / c->n_heads) % 2 != 0)
        return qt_error(QT_ERR_FORMAT, "%s: llama2.c header: head size %" PRId32 " is odd (RoPE needs pairs)", name, c->dim / c->n_heads);
    return QT_OK;
}

/* Float counts of each array, in file order for the given version. */
enum { A_EMB, A_RMS_ATT, A_WQ, A_WK, A_WV, A_WO, A_RMS_FFN, A_W1, A_W2, A_W3, A_RMS_FINAL, A_FREQ, A_WCLS, A_COUNT };

static bool array_sizes(const l2c_config *c, uint64_t n[A_COUNT]) {
    uint64_t D = (uint64_t)c->dim, H = (uint64_t)c->hidden_dim, L = (uint64_t)c->n_layers, V = (uint64_t)c->vocab_size;
    uint64_t hs = D / (uint64_t)c->n_heads, kv = hs * (uint64_t)c->n_kv_heads, DD, DKV, DH;
    if (!mul_ok(D, D, &DD) || !mul_ok(D, kv, &DKV) || !mul_ok(D, H, &DH)) return false;
    bool ok = mul_ok(V, D, &n[A_EMB]) && mul_ok(L, D, &n[A_RMS_ATT]) && mul_ok(L, DD, &n[A_WQ]) &&
              mul_ok(L, DKV, &n[A_WK]) && mul_ok(L, DKV, &n[A_WV]) && mul_ok(L, DD, &n[A_WO]) &&
              mul_ok(L, D, &n[A_RMS_FFN]) && mul_ok(L, DH, &n[A_W1]) && mul_ok(L, DH, &n[A_W2]) &&
              mul_ok(L, DH, &n[A_W3]) && mul_ok((uint64_t)c->seq_len, hs, &n[A_FREQ]);
    n[A_RMS_FINAL] = D;
    n[A_WCLS] = c->shared_classifier ? 0 : n[A_EMB];
    if (c->version == 1) n[A_FREQ] = 0; /* v1 drops the RoPE tables */
    return ok;
}

/* Byte offset of each array; total = expected file size. */
static bool layout(const l2c_config *c, uint64_t off[A_COUNT], uint64_t *total) {
    uint64_t n[A_COUNT];
    if (!array_sizes(c, n)) return false;
    static const int order0[A_COUNT] = {A_EMB, A_RMS_ATT, A_WQ, A_WK, A_WV, A_WO, A_RMS_FFN, A_W1, A_W2, A_W3,
                                        A_RMS_FINAL, A_FREQ, A_WCLS};
    static const int order1[A_COUNT] = {A_RMS_ATT, A_RMS_FFN, A_RMS_FINAL, A_EMB, A_WQ, A_WK, A_WV, A_WO, A_W1,
                                        A_W2, A_W3, A_FREQ, A_WCLS};
    const int *order = c->version == 1 ? order1 : order0;
    uint64_t pos = c->version == 1 ? L2C_V1_HEADER : 28;
    for (int i = 0; i < A_COUNT; i++) {
        uint64_t bytes;
        off[order[i]] = pos;
        if (!mul_ok(n[order[i]], 4, &bytes) || !add_ok(&pos, bytes)) return false;
    }
    *total = pos;
    return true;
}

static int32_t ld_i32(const uint8_t *p) { return (int32_t)qt__ld_u32(p); }

static qt_status read_config(const char *name, const uint8_t *d, size_t size, l2c_config *c) {
    memset(c, 0, sizeof *c);
    if (size >= 8 && qt__ld_u32(d) == L2C_MAGIC) {
        int32_t version = ld_i32(d + 4);
        if (version != 1)
            return qt_error(QT_ERR_UNSUPPORTED, "%s: llama2.c export version %" PRId32 " is not supported (legacy and version 1 are)",
                            name, version);
        if (size < L2C_V1_HEADER)
            return qt_error(QT_ERR_FORMAT, "%s: llama2.c header: truncated (%zu bytes, the version 1 header is %d)", name, size, L2C_V1_HEADER);
        c->version = 1;
        d += 8;
        c->shared_classifier = d[28] != 0;
        if (d[28] > 1)
            return qt_error(QT_ERR_FORMAT, "%s: llama2.c header: shared_classifier flag is %u, must be 0 or 1", name, d[28]);
    } else if (size < 28) {
        return qt_error(QT_ERR_FORMAT, "%s: llama2.c header: truncated (%zu bytes, the header is 28)", name, size);
    }
    c->dim = ld_i32(d);
    c->hidden_dim = ld_i32(d + 4);
    c->n_layers = ld_i32(d + 8);
    c->n_heads = ld_i32(d + 12);
    c->n_kv_heads = ld_i32(d + 16);
    c->vocab_size = ld_i32(d + 20);
    c->seq_len = ld_i32(d + 24);
    if (c->version == 0) {
        /* Legacy: a negative vocab_size means a separate classifier follows (§6.1). */
        c->shared_classifier = c->vocab_size > 0;
        if (c->vocab_size < 0 && c->vocab_size != INT32_MIN) c->vocab_size = -c->vocab_size;
    }
    return check_config(name, c);
}

bool qt__llama2c_sniff(const void *data, size_t size) {
    l2c_config c;
    uint64_t off[A_COUNT], total;
    qt_status s = read_config("", data, size, &c);
    qt_clear_error();
    return s == QT_OK && layout(&c, off, &total) && total == size;
}

/* ---- tokenizer.bin ------------------------------------------------------------- */
static bool is_byte_token(const char *s, size_t n) {
    /* "<0xHH>" with uppercase hex, as SentencePiece writes byte pieces. */
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return false;
    for (int i = 3; i < 5; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'F'))) return false;
    return true;
}

/* llama2.c writes SentencePiece's U+2581 as a plain space; GGUF keeps U+2581. */
static char *escape_spaces(qt_model *m, const char *s, size_t n) {
    size_t spaces = 0;
    for (size_t i = 0; i < n; i++) spaces += s[i] == ' ';
    char *out = qt__model_alloc(m, n + 2 * spaces + 1);
    if (!out) return NULL;
    char *o = out;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') { memcpy(o, "\xe2\x96\x81", 3); o += 3; }
        else *o++ = s[i];
    }
    *o = '\0';
    return out;
}

qt_status qt__llama2c_read_tokenizer(qt_model *m, const void *data, size_t size, const char *name, int32_t n_vocab) {
    const uint8_t *d = data;
    if (size < 4) return qt_error(QT_ERR_FORMAT, "%s: tokenizer header: truncated (%zu bytes, need 4)", name, size);
    if (n_vocab <= 0 || (uint64_t)n_vocab > (size - 4) / 8)
        return qt_error(QT_ERR_FORMAT, "%s: tokenizer: %zu bytes cannot hold %" PRId32 " tokens (vocab_size of the checkpoint)",
                        name, size, n_vocab);
    qt_vocab *v = &m->vocab;
    v->tokens = qt__model_alloc(m, (size_t)n_vocab * sizeof *v->tokens);
    v->scores = qt__model_alloc(m, (size_t)n_vocab * sizeof *v->scores);
    v->token_types = qt__model_alloc(m, (size_t)n_vocab * sizeof *v->token_types);
    if (!v->tokens || !v->scores || !v->token_types) return QT_ERR_NOMEM;
    size_t pos = 4;
    for (int32_t id = 0; id < n_vocab; id++) {
        if (size - pos < 8)
            return qt_error(QT_ERR_FORMAT, "%s: tokenizer: token %" PRId32 ": truncated at offset %zu", name, id, pos);
        float score;
        memcpy(&score, d + pos, 4);
        int32_t len = ld_i32(d + pos + 4);
        pos += 8;
        if (!isfinite(score))
            return qt_error(QT_ERR_FORMAT, "%s: tokenizer: token %" PRId32 ": score is not finite", name, id);
        if (len < 0 || (size_t)len > size - pos)
            return qt_error(QT_ERR_FORMAT, "%s: tokenizer: token %" PRId32 ": length %" PRId32 " at offset %zu exceeds the %zu bytes left",
                            name, id, len, pos - 4, size - pos);
        const char *text = (const char *)d + pos;
        pos += (size_t)len;
        if (memchr(text, '\0', (size_t)len))
            return qt_error(QT_ERR_FORMAT, "%s: tokenizer: token %" PRId32 ": text contains a NUL byte", name, id);
        /* What llama.cpp's llama2c converter does: fixed names and types for
         * unk/bos/eos (llama2.c stores BOS/EOS as "\n<s>\n"), BYTE for <0xHH>. */
        int32_t type = QT_TOKEN_NORMAL;
        if (id == 0) { text = "<unk>"; len = 5; type = QT_TOKEN_UNKNOWN; }
        else if (id == 1) { text = "<s>"; len = 3; type = QT_TOKEN_CONTROL; }
        else if (id == 2) { text = "</s>"; len = 4; type = QT_TOKEN_CONTROL; }
        else if (len == 0) type = QT_TOKEN_CONTROL;
        else if (is_byte_token(text, (size_t)len)) type = QT_TOKEN_BYTE;
        if (!(v->tokens[id] = escape_spaces(m, text, (size_t)len))) return QT_ERR_NOMEM;
        v->scores[id] = score;
        v->token_types[id] = type;
    }
    if (pos != size)
        return qt_error(QT_ERR_FORMAT, "%s: tokenizer: %zu bytes left after %" PRId32 " tokens (is it the tokenizer of this model?)",
                        name, size - pos, n_vocab);
    v->kind = QT_VOCAB_SPM;
    v->n_tokens = n_vocab;
    v->unk_id = 0;
    v->bos_id = n_vocab > 1 ? 1 : -1;
    v->eos_id = n_vocab > 2 ? 2 : -1;
    v->pad_id = -1;
    v->add_bos = true;
    v->add_eos = false;
    v->add_space_prefix = true;
    return QT_OK;
}

/* ---- checkpoint ------------------------------------------------------------------ */
static qt_status add(qt_model *m, const char *name, const uint8_t *base, uint64_t off, int64_t ne0, int64_t ne1,
                     int32_t source) {
    qt_tensor t = {0};
    snprintf(t.name, sizeof t.name, "%s", name);
    t.type = QT_TYPE_F32;
    t.n_dims = ne1 > 0 ? 2 : 1;
    t.ne[0] = ne0;
    t.ne[1] = ne1 > 0 ? ne1 : 1;
    t.ne[2] = t.ne[3] = 1;
    t.nbytes = (size_t)(ne0 * t.ne[1]) * sizeof(float);
    t.data = base + off;
    t.source = source;
    t.offset = off;
    return qt__model_add_tensor(m, &t);
}

qt_status qt__read_llama2c_mem(qt_model *m, const void *data, size_t size, int32_t source,
                               const void *tok, size_t tok_size, const char *tok_name) {
    l2c_config c;
    qt_status s = read_config(m->path, data, size, &c);
    if (s != QT_OK) return s;
    uint64_t off[A_COUNT], total;
    if (!layout(&c, off, &total))
        return qt_error(QT_ERR_FORMAT, "%s: llama2.c header: sizes overflow (dim %" PRId32 ", n_layers %" PRId32 ", vocab_size %" PRId32 ")",
                        m->path, c.dim, c.n_layers, c.vocab_size);
    if (total != size)
        return qt_error(QT_ERR_FORMAT, "%s: llama2.c checkpoint: the header (dim %" PRId32 ", hidden_dim %" PRId32 ", n_layers %" PRId32
                        ", n_heads %" PRId32 ", n_kv_heads %" PRId32 ", vocab_size %" PRId32 ", seq_len %" PRId32
                        ", %s classifier) implies %" PRIu64 " bytes, the file has %zu",
                        m->path, c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size, c.seq_len,
                        c.shared_classifier ? "shared" : "separate", total, size);
    qt_hparams *hp = &m->hp;
    hp->arch = QT_ARCH_LLAMA;
    snprintf(hp->arch_name, sizeof hp->arch_name, "llama");
    hp->n_vocab = c.vocab_size;
    hp->n_embd = c.dim;
    hp->n_layer = c.n_layers;
    hp->n_head = c.n_heads;
    hp->n_head_kv = c.n_kv_heads;
    hp->head_dim = c.dim / c.n_heads;
    hp->n_ff = c.hidden_dim;
    hp->n_ctx_train = c.seq_len;
    hp->n_rot = hp->head_dim;
    hp->rms_eps = 1e-5f;       /* fixed in run.c */
    hp->rope_theta = 10000.0f; /* fixed in run.c */
    hp->rope_factor = 1.0f;
    hp->rope_neox = false;     /* run.c rotates adjacent pairs, like llama.cpp's llama arch */

    const uint8_t *b = data;
    const int64_t D = c.dim, H = c.hidden_dim, KV = (int64_t)(c.dim / c.n_heads) * c.n_kv_heads, V = c.vocab_size;
    if ((s = add(m, "token_embd.weight", b, off[A_EMB], D, V, source)) != QT_OK) return s;
    if ((s = add(m, "output_norm.weight", b, off[A_RMS_FINAL], D, 0, source)) != QT_OK) return s;
    /* llama.cpp's converter writes output.weight even for a shared classifier. */
    if ((s = add(m, "output.weight", b, c.shared_classifier ? off[A_EMB] : off[A_WCLS], D, V, source)) != QT_OK) return s;
    for (int64_t l = 0; l < c.n_layers; l++) {
        char name[QT_MAX_NAME];
        const struct { const char *suffix; int arr; int64_t ne0, ne1; } per_layer[] = {
            {"attn_q.weight", A_WQ, D, D},       {"attn_k.weight", A_WK, D, KV},
            {"attn_v.weight", A_WV, D, KV},      {"attn_output.weight", A_WO, D, D},
            {"attn_norm.weight", A_RMS_ATT, D, 0}, {"ffn_gate.weight", A_W1, D, H},
            {"ffn_down.weight", A_W2, H, D},     {"ffn_up.weight", A_W3, D, H},
            {"ffn_norm.weight", A_RMS_FFN, D, 0},
        };
        for (size_t i = 0; i < sizeof per_layer / sizeof per_layer[0]; i++) {
            int64_t nel = per_layer[i].ne0 * (per_layer[i].ne1 > 0 ? per_layer[i].ne1 : 1);
            snprintf(name, sizeof name, "blk.%" PRId64 ".%s", l, per_layer[i].suffix);
            uint64_t o = off[per_layer[i].arr] + (uint64_t)l * (uint64_t)nel * 4; /* layer-major arrays */
            if ((s = add(m, name, b, o, per_layer[i].ne0, per_layer[i].ne1, source)) != QT_OK) return s;
        }
    }
    if (tok && (s = qt__llama2c_read_tokenizer(m, tok, tok_size, tok_name, c.vocab_size)) != QT_OK) return s;
    return qt__model_check_tensors(m);
}

/* ---- files --------------------------------------------------------------------- */
static qt_status open_with_tokenizer(qt_model *m, const char *path, const char *tok_path) {
    qt_mmap map;
    qt_status s = qt_mmap_open(path, &map);
    if (s != QT_OK) return s;
    int32_t src = qt__model_add_map(m, &map);
    if (src < 0) { qt_mmap_close(&map); return QT_ERR_NOMEM; }
    qt_mmap tok = {0};
    if (tok_path && (s = qt_mmap_open(tok_path, &tok)) != QT_OK) return s;
    s = qt__read_llama2c_mem(m, m->maps[src].data, m->maps[src].size, src, tok_path ? (tok.data ? tok.data : (const void *)"") : NULL,
                             tok.size, tok_path);
    qt_mmap_close(&tok); /* the vocabulary was copied */
    return s;
}

/* tok<vocab_size>.bin (llama2.c's naming for custom vocabularies), then tokenizer.bin. */
static char *find_tokenizer(const char *path, const void *data, size_t size) {
    l2c_config c;
    if (read_config(path, data, size, &c) != QT_OK) { qt_clear_error(); return NULL; }
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path) : 1;
    const char *dir = slash ? path : ".";
    char buf[4096];
    char name[32];
    snprintf(name, sizeof name, "tok%" PRId32 ".bin", c.vocab_size);
    const char *candidates[] = {name, "tokenizer.bin"};
    for (int i = 0; i < 2; i++) {
        if (snprintf(buf, sizeof buf, "%.*s/%s", dirlen, dir, candidates[i]) >= (int)sizeof buf) continue;
        if (access(buf, R_OK) == 0) return strdup(buf);
    }
    return NULL;
}

qt_status qt__read_llama2c(qt_model *m, const char *path) {
    qt_mmap map;
    qt_status s = qt_mmap_open(path, &map);
    if (s != QT_OK) return s;
    char *tok = find_tokenizer(path, map.data, map.size);
    qt_mmap_close(&map);
    s = open_with_tokenizer(m, path, tok);
    free(tok);
    return s;
}

qt_status qt_model_open_llama2c(const char *path, const char *tokenizer_path, qt_model **out) {
    *out = NULL;
    qt_model *m;
    qt_status s = qt__model_new(path, "llama2c", &m);
    if (s != QT_OK) return s;
    s = tokenizer_path ? open_with_tokenizer(m, path, tokenizer_path) : qt__read_llama2c(m, path);
    if (s != QT_OK) {
        qt_model_free(m);
        return s;
    }
    *out = m;
    return QT_OK;
}
