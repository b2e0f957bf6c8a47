/* lib/io/open.c — qt_model_open: tell the formats apart and call the reader.
 *
 *   directory                 -> Hugging Face layout (qt__read_hf_dir)
 *   "GGUF" magic              -> GGUF (qt__read_gguf)
 *   "ak42" magic              -> llama2.c version 1/2 export (qt__read_llama2c)
 *   header + exact size match -> llama2.c legacy checkpoint
 *   anything else             -> one error naming the file and what it is not
 */
#include <errno.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "io_internal.h"

/* safetensors: u64 header length, then a JSON object (docs/formats.md §1.1). */
static bool looks_like_safetensors(const uint8_t *d, size_t size) {
    if (size < 10) return false;
    uint64_t n = qt__ld_u64(d);
    return n >= 2 && n <= size - 8 && d[8] == '{';
}

static qt_status open_file(qt_model *m, const char *path) {
    qt_mmap map;
    qt_status s = qt_mmap_open(path, &map);
    if (s != QT_OK) return s;
    const uint8_t *d = map.data;
    size_t size = map.size;
    if (size >= 4 && !memcmp(d, "GGUF", 4)) {
        m->source_format = "gguf";
        int32_t src = qt__model_add_map(m, &map);
        if (src < 0) { qt_mmap_close(&map); return QT_ERR_NOMEM; }
        return qt__read_gguf_mem(m, m->maps[src].data, m->maps[src].size, src);
    }
    bool l2c = (size >= 4 && qt__ld_u32(d) == 0x616b3432u) || qt__llama2c_sniff(d, size);
    bool st = !l2c && looks_like_safetensors(d, size);
    qt_mmap_close(&map);
    if (l2c) {
        m->source_format = "llama2c";
        return qt__read_llama2c(m, path);
    }
    if (st)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: a safetensors file: open the Hugging Face directory that holds it "
                        "(with config.json and the tokenizer) instead", path);
    if (size == 0) return qt_error(QT_ERR_FORMAT, "%s: empty file", path);
    return qt_error(QT_ERR_FORMAT, "%s: unrecognized format: not GGUF (no 'GGUF' magic), not a llama2.c checkpoint "
                    "(header does not match the file size of %zu bytes), not a Hugging Face directory", path, size);
}

qt_status qt_model_open(const char *path, qt_model **out) {
    *out = NULL;
    if (!path || !*path) return qt_error(QT_ERR_ARG, "no model path given");
    struct stat st;
    if (stat(path, &st) != 0) return qt_error(QT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    bool dir = S_ISDIR(st.st_mode);
    qt_model *m;
    qt_status s = qt__model_new(path, dir ? "safetensors" : "unknown", &m);
    if (s != QT_OK) return s;
    s = dir ? qt__read_hf_dir(m, path) : open_file(m, path);
    if (s != QT_OK) {
        qt_model_free(m);
        return s;
    }
    *out = m;
    return QT_OK;
}
