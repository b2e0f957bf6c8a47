/* lib/io/ct_resume.h — the state file of a resumable compressed-tensors run
 * (OUT.partial.state beside the staging directory OUT.partial; ct_resume.c,
 * docs/quantize.md "Staging and resume"). Internal. */
#ifndef QT_CT_RESUME_H
#define QT_CT_RESUME_H

#include <stdbool.h>
#include <stdint.h>

#include "quanta/core.h"
#include "quanta/model.h"

typedef struct json_t json_t;

/* Progress: shards complete (renamed into OUT.partial under their names, with
 * their sizes), and in the shard being written the stored tensors complete
 * (in file order) and the staging file's bytes that hold them. */
typedef struct qt__ct_progress {
    int32_t shards_done;
    uint64_t *shard_bytes;     /* (n_shards) sizes of the complete shards */
    int32_t shard_tensors;     /* stored tensors complete in shard shards_done */
    uint64_t shard_at;         /* bytes of its staging file holding them (0: none) */
    int32_t tensors_done;      /* stored tensors complete in all */
} qt__ct_progress;

typedef struct qt__ct_resume {
    char *state_path;          /* OUT.partial.state */
    json_t *state;
    int32_t n_shards;
    qt__ct_progress at;        /* where the run is (a resume: where it starts) */
    int32_t resumed;           /* stored tensors complete when the run began */
    bool resume;               /* --resume: its staging is never removed here */
    bool state_written;
} qt__ct_resume;

/* A fresh resumable run (resume false): any old state removed, this run's
 * identity made (input, `options`, taken; output_bytes, the shard and stored
 * tensor counts). A resume: the state
 * loaded and checked against this run's (QT_ERR_ARG naming the first input or
 * option that differs; QT_ERR_FORMAT when malformed), and its progress in r->at. */
qt_status qt__ct_resume_begin(qt__ct_resume *r, const qt_model *m, const char *out, bool resume, json_t *options,
                              uint64_t output_bytes, int32_t n_shards, int32_t n_stored);
/* A saved state (text, len bytes; path names it in messages) against this
 * run's (`now`: what begin made): QT_ERR_FORMAT when malformed, QT_ERR_ARG
 * naming the first input or option that differs; on success the progress in
 * *at (shard_bytes: room for n_shards values), inside this run's n_shards. */
qt_status qt__ct_resume_state_check(const char *path, const char *text, size_t len, json_t *now, int32_t n_shards,
                                    qt__ct_progress *at);
/* r->at is on disk (synced): record it, atomically. */
qt_status qt__ct_resume_checkpoint(qt__ct_resume *r);
/* After the run with status s: the state removed on success; on failure kept
 * when it was written or this is a resume (*kept). Frees r. */
void qt__ct_resume_end(qt__ct_resume *r, qt_status s, bool *kept);

#endif
