/* lib/io/hf_internal.h — helpers shared by the HF reader/writer and the fuzzers. */
#ifndef QT_IO_HF_INTERNAL_H
#define QT_IO_HF_INTERNAL_H

#include "hf_config.h"
#include "quanta/hf.h"

/* config.json text -> hyperparameters of an architecture the engine runs
 * (qt__hf_config_read_text, then the class defaults; the fuzzers' entry). */
qt_status qt__hf_config_parse(const char *text, size_t len, const char *path, qt_hparams *hp);
/* A config read by qt__hf_config_read -> hyperparameters (QT_ERR_UNSUPPORTED
 * for architectures, activations and rope scalings the engine does not run). */
qt_status qt__hf_config_hparams(const qt_hf_config *c, qt_hparams *hp);

/* Shortest decimal text that reads back as the same float32, spelled like
 * Python's repr of that decimal ("1e-05", "500000.0", "0.5"). */
void qt__hf_format_float(float v, char *buf, size_t cap);

/* Pieces of the HF directory writer (hf_write.c) that the compressed-tensors
 * exporter (ct_write.c) shares: config.json text for a model written in
 * `dtype`, tokenizer.json / tokenizer_config.json texts (NULL, NULL: no
 * vocabulary) and the output-directory rule. */
qt_status qt__hf_config_text(const qt_model *m, qt_type dtype, char **out);
qt_status qt__hf_tokenizer_texts(const qt_model *m, char **tok, char **cfg);
qt_status qt__hf_prepare_dir(const qt_model *m, const char *dir, bool force, bool *created);

#endif
