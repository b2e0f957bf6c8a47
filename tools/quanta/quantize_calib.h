/* tools/quanta/quantize_calib.h — `quanta quantize --calib`: the calibration
 * samples, and what they become (an importance matrix for GGUF schemes,
 * input activation ranges for static compressed-tensors schemes). */
#ifndef QT_CLI_QUANTIZE_CALIB_H
#define QT_CLI_QUANTIZE_CALIB_H

#include "cli.h"

typedef struct qcalib {
    qt_calib_set set;
    char imatrix_path[4096]; /* the computed imatrix while the plan maps it ("" when none) */
    qt_act_amax amax;
} qcalib;

/* Cuts the samples only (--algo gptq). Prints errors; returns CLI_OK or CLI_FAIL. */
int qcalib_samples(const qt_model *m, const cli_calib *c, qcalib *q);
/* Cuts the samples and computes llama-imatrix's statistic over them (what
 * `quanta imatrix --calib ...` writes, byte for byte) into a temporary file,
 * q->imatrix_path. Prints errors; returns CLI_OK or CLI_FAIL. */
int qcalib_imatrix(const qt_model *m, const cli_calib *c, int threads, int quiet, qcalib *q);
/* Cuts the samples and observes every linear's input absmax (q->amax). */
int qcalib_amax(const qt_model *m, const cli_calib *c, int threads, int quiet, qcalib *q);
/* Removes the temporary imatrix (the plan keeps its mapping). */
void qcalib_drop_file(qcalib *q);
void qcalib_free(qcalib *q);
/* qt_ct_export_opts.input_amax over q->amax. */
float qcalib_amax_cb(void *q, const char *name);

#endif
