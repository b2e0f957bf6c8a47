/* quanta/core.h — status codes, errors, CPU features, threads, progress, files.
 *
 * The library never prints and never exits: every fallible call returns a
 * qt_status, and the human-readable reason is kept per thread in
 * qt_last_error() (file, field and problem, e.g.
 * "model.gguf: tensor 'blk.0.attn_q.weight': data offset 1234 past end of file (size 1000)").
 */
#ifndef QUANTA_CORE_H
#define QUANTA_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the public API. The library is built with -fvisibility=hidden, so only
 * declarations carrying QT_API are exported from libquanta.so; lib/-internal
 * qt__ names stay private (tests and the CLI link the static library). */
#if defined(__GNUC__)
#define QT_API __attribute__((visibility("default")))
#else
#define QT_API
#endif

#define QT_VERSION_MAJOR 0
#define QT_VERSION_MINOR 1
#define QT_VERSION_PATCH 0
#define QT_VERSION_STRING "0.1.0"

QT_API const char *qt_version(void);

/* ---- status codes ------------------------------------------------------ */
typedef enum qt_status {
    QT_OK = 0,
    QT_ERR_ARG,          /* impossible option or argument (usage error) */
    QT_ERR_NOMEM,        /* allocation failed */
    QT_ERR_IO,           /* open/read/write/rename failed (errno in message) */
    QT_ERR_FORMAT,       /* malformed or truncated input file */
    QT_ERR_UNSUPPORTED,  /* valid input we do not handle (architecture, type...) */
    QT_ERR_SHAPE,        /* tensor/row shape incompatible with the request */
    QT_ERR_RANGE,        /* value out of representable range (NaN/Inf in data...) */
    QT_ERR_INTERRUPTED,  /* cancelled (Ctrl-C) */
    QT_ERR_NOT_FOUND,    /* named thing (tensor, key, preset) does not exist */
    QT_ERR_INTERNAL,
    QT_STATUS_COUNT
} qt_status;

/* Short fixed name of a status ("format error", ...). */
QT_API const char *qt_status_name(qt_status s);

/* The message recorded by the last failing call on this thread ("" if none). */
QT_API const char *qt_last_error(void);

/* Record a message for this thread and return `s`, so callers can write
 * `return qt_error(QT_ERR_FORMAT, "%s: header truncated", path);` */
QT_API qt_status qt_error(qt_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
QT_API qt_status qt_verror(qt_status s, const char *fmt, va_list ap);
QT_API void qt_clear_error(void);

/* ---- cancellation ------------------------------------------------------ */
/* Long-running loops poll qt_cancelled() and return QT_ERR_INTERRUPTED.
 * The CLI sets it from its SIGINT handler (async-signal-safe). */
QT_API void qt_request_cancel(void);
QT_API void qt_cancel_reset(void);   /* clears the request (a library user starting a new job) */
QT_API bool qt_cancelled(void);

/* ---- CPU features (detected once) ------------------------------------- */
typedef struct qt_cpu_features {
    bool sse42, avx, avx2, fma, f16c;
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512_vnni, avx512_bf16;
    bool avx_vnni;
    bool amx_tile, amx_int8, amx_bf16;
    bool amx_usable;       /* kernel granted XFEATURE_XTILEDATA (arch_prctl) */
} qt_cpu_features;

/* Detected on first call; QUANTA_CPU=scalar|avx2|avx512 in the environment caps
 * what is reported (to test and benchmark the fallbacks on a big machine; avx512 turns AMX off). */
QT_API const qt_cpu_features *qt_cpu(void);
/* "amx" / "avx512" / "avx2" / "scalar": the kernel level dispatch chose. */
QT_API const char *qt_cpu_level_name(void);
/* The level with, where the CPU has AMX-INT8 but the level is below amx, why:
 * "avx512 (AMX off: QUANTA_CPU=avx512)", "avx512 (AMX off: the kernel refused
 * tile data: arch_prctl ...: Operation not permitted)". */
QT_API const char *qt_cpu_level_detail(void);

/* ---- threads ------------------------------------------------------------ */
/* A fixed pool: qt_parallel_for runs fn(ctx, begin, end, thread_index) over
 * [0, n) split into contiguous chunks, one per worker, and returns when all are
 * done. n_threads <= 0 means "number of online CPUs". The pool is created once
 * per qt_threadpool and reused; nothing is allocated per call. */
typedef struct qt_threadpool qt_threadpool;
typedef void (*qt_range_fn)(void *ctx, int64_t begin, int64_t end, int thread_index);

QT_API qt_status qt_threadpool_create(int n_threads, qt_threadpool **out);
QT_API void qt_threadpool_free(qt_threadpool *tp);
QT_API int qt_threadpool_size(const qt_threadpool *tp);
/* tp may be NULL: runs inline on the caller. */
QT_API void qt_parallel_for(qt_threadpool *tp, int64_t n, qt_range_fn fn, void *ctx);
/* The same chunks, claimed `grain` indices at a time (grain <= 0: 1): each thread takes its
 * own chunk's grains in order, then whatever is left of the others', so a thread that starts
 * late (asleep, preempted) holds the call up until it runs, not for its whole chunk. fn may run several times per thread, on any whole grains
 * (the chunk's last one shorter), and which thread runs which range differs between calls: for
 * work whose results do not depend on which thread runs a range (per-thread scratch indexed by
 * thread_index is fine) or on where [0, n) is cut. */
QT_API void qt_parallel_for_balanced(qt_threadpool *tp, int64_t n, int64_t grain, qt_range_fn fn, void *ctx);
QT_API int qt_default_threads(void);

/* ---- progress ------------------------------------------------------------ */
/* Library code reports progress through a callback; the CLI supplies the
 * renderer (bar with ETA on a TTY, plain lines otherwise, nothing with --quiet). */
typedef void (*qt_progress_fn)(void *user, const char *what, int64_t done, int64_t total);
typedef struct qt_progress {
    qt_progress_fn fn;  /* NULL: silent */
    void *user;
} qt_progress;
static inline void qt_progress_report(const qt_progress *p, const char *what, int64_t done, int64_t total) {
    if (p && p->fn) p->fn(p->user, what, done, total);
}

/* A ready-made renderer writing to a FILE* (stderr in the CLI). */
typedef struct qt_progress_term qt_progress_term;
/* mode: 0 auto (bar if the stream is a TTY), 1 force bar, 2 force lines, 3 quiet */
QT_API qt_progress_term *qt_progress_term_new(void *file_stream, int mode);
QT_API void qt_progress_term_free(qt_progress_term *t);
QT_API qt_progress qt_progress_term_sink(qt_progress_term *t);

/* ---- files ---------------------------------------------------------------- */
/* Read-only memory map of a whole file. Empty files map to data=NULL, size=0. */
typedef struct qt_mmap {
    const uint8_t *data;
    size_t size;
    char *path;  /* owned copy, for messages */
} qt_mmap;
QT_API qt_status qt_mmap_open(const char *path, qt_mmap *out);
QT_API void qt_mmap_close(qt_mmap *m);

/* Atomic writer, and the one output rule of every writer:
 *   "-"                       standard output;
 *   a missing or regular file bytes go to a temporary file beside it, which
 *                             qt_afile_commit fsyncs and renames over it
 *                             (mode kept); qt_afile_abort, a failed write or a
 *                             cancel removes it, so no partial output is left;
 *   a symlink                 resolved: its target is replaced, the link stays;
 *   a device, FIFO or socket  written in place, never replaced;
 *   a directory               refused (QT_ERR_IO).
 * A cancel (qt_request_cancel) stops writes and commits with QT_ERR_INTERRUPTED. */
typedef struct qt_afile qt_afile;
QT_API qt_status qt_afile_open(const char *path, qt_afile **out);
QT_API qt_status qt_afile_write(qt_afile *f, const void *buf, size_t n);
QT_API qt_status qt_afile_pad(qt_afile *f, size_t n, uint8_t byte);
QT_API uint64_t qt_afile_tell(const qt_afile *f);
QT_API qt_status qt_afile_commit(qt_afile *f); /* frees f */
QT_API void qt_afile_abort(qt_afile *f);       /* frees f; NULL ok */
/* Staged writes, for long jobs that must be resumable (`quanta quantize`,
 * docs/quantize.md): the bytes go to a staging file the caller names (e.g.
 * "OUT.partial", in OUT's directory) instead of a hidden temporary, and
 * qt_afile_commit fsyncs and renames it over OUT as above. `path` must be a
 * missing or regular file (QT_ERR_ARG otherwise). Without `keep` the staging
 * file is a temporary like any other: an abort, an error, a cancel and
 * qt_afile_cleanup remove it. With `keep` an abort leaves it (and it is not in
 * the cleanup table). `resume_at` > 0 reopens an existing staging file, keeps
 * its first resume_at bytes (truncating the rest) and writes after them:
 * qt_afile_tell starts there. resume_at 0 creates or truncates the file. */
typedef struct qt_afile_stage {
    const char *path;     /* the staging file */
    bool keep;            /* an abort leaves it (resumable runs) */
    uint64_t resume_at;   /* bytes to keep from an existing staging file; 0: start empty */
} qt_afile_stage;
QT_API qt_status qt_afile_open_staged(const char *path, const qt_afile_stage *st, qt_afile **out);
/* fdatasync: what was written so far survives a crash (a no-op on stdout). */
QT_API qt_status qt_afile_sync(qt_afile *f);
/* n bytes at offset off of what is already in the file (a staged or
 * temporary file; QT_ERR_IO for stdout, or a short file). */
QT_API qt_status qt_afile_read_at(qt_afile *f, uint64_t off, void *buf, size_t n);
/* Unlinks every temporary file of a qt_afile still open. Async-signal-safe
 * (unlink(2) only): for a signal handler about to end the process, and atexit.
 * The qt_afile objects stay valid; committing them then fails. */
QT_API void qt_afile_cleanup(void);
/* How many temporary files are open now (tests: nothing may be left). */
QT_API int qt_afile_live_temps(void);
/* *same = a and b name one file (device and inode compared, links followed);
 * false when either does not exist. */
QT_API qt_status qt_same_file(const char *a, const char *b, bool *same);

/* Whole small file into a NUL-terminated heap buffer (config.json etc.). */
QT_API qt_status qt_read_file(const char *path, char **out, size_t *size);

#ifdef __cplusplus
}
#endif
#endif
