/* tools/quanta/serve_http.h — `quanta serve`'s HTTP side (libmicrohttpd):
 * the OpenAI-compatible endpoints over the library's request parser and
 * scheduler (quanta/serve.h). cmd_serve.c owns startup and shutdown. */
#ifndef QT_CLI_SERVE_HTTP_H
#define QT_CLI_SERVE_HTTP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <microhttpd.h>

#include "cli.h"

/* Fixed-bucket latency histogram (Prometheus "le" buckets, seconds). */
#define SERVE_N_BUCKETS 14
typedef struct serve_hist {
    uint64_t count[SERVE_N_BUCKETS + 1]; /* last: +Inf */
    double sum;
} serve_hist;

/* Endpoints, for per-endpoint counts. */
enum { EP_COMPLETIONS, EP_CHAT, EP_MODELS, EP_HEALTH, EP_METRICS, EP_OTHER, EP_COUNT };

typedef struct serve_ctx {
    /* fixed at startup */
    qt_model *model;
    qt_tokenizer *tok;
    qt_engine_ctx *engine;
    qt_sched *sched;
    const char *model_name;     /* --alias, else the file name of -m */
    const char *model_path;     /* -m as given (also accepted as the model name) */
    const char *api_key;        /* NULL: no authentication */
    qt_chat_template chat;      /* what chat requests are rendered with */
    int32_t n_ctx, eos_id;
    bool add_bos;
    const char *bos_text;       /* the BOS token's text (a chat template may write it), or NULL */
    size_t max_body;            /* bytes */
    int64_t created;            /* start time, seconds since the epoch */

    atomic_bool draining;       /* SIGTERM: new generation requests get 503 */
    atomic_int in_flight;       /* generation requests not yet fully answered */
    atomic_uint_fast64_t next_id;

    /* metrics, under mu */
    pthread_mutex_t mu;
    uint64_t http[EP_COUNT][9];  /* answers by status: serve_http.c codes[] */
    serve_hist ttft, itl, e2el;
} serve_ctx;

/* libmicrohttpd's access handler and request-completed callback, cls = serve_ctx. */
enum MHD_Result serve_http_access(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls);
void serve_http_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe);

/* The Prometheus text of /metrics (malloc'd). */
char *serve_metrics_text(serve_ctx *s);

#endif
