/* `quanta serve`: an OpenAI-compatible HTTP server on quanta's engine
 * (docs/serve.md). This file: options, startup, and shutdown on SIGTERM/SIGINT
 * (drain: no new requests, every accepted one answered, then exit 0; a second
 * signal exits at once). The endpoints are serve_http.c's. */
#include <arpa/inet.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine_opts.h"
#include "serve_http.h"

static void help(void) {
    printf("usage: quanta serve -m MODEL [options]\n\n"
           "Serve MODEL over HTTP with an OpenAI-compatible API: POST /v1/completions and\n"
           "/v1/chat/completions (streamed as server-sent events with \"stream\": true), GET /v1/models,\n"
           "/health and /metrics (Prometheus text). Up to --parallel requests run at once (continuous\n"
           "batching: one engine batch per step holds a token of every running request and the next\n"
           "prompt chunk of a new one); a request alone gets exactly `quanta run`'s tokens.\n"
           "SIGTERM or SIGINT drains (running and queued requests finish) and exits 0.\n\n"
           "  -m, --model PATH     GGUF file, HF directory or llama2.c .bin\n"
           "  --host ADDR          address to bind (default 127.0.0.1: this machine only)\n"
           "  --port N             TCP port (default 8080; 0: any free port, printed at startup)\n"
           "  --parallel N         requests decoded at once, one KV slot each (default 4)\n"
           "  --max-queue N        requests waiting for a slot before 503 + Retry-After (default 4 x parallel)\n"
           "  --api-key KEY        require 'Authorization: Bearer KEY' (all endpoints but /health)\n"
           "  --alias NAME         the model name clients send and /v1/models lists (default: the file name)\n"
           "  --chat-template T    model: the model's own tokenizer.chat_template, rendered by quanta's Jinja\n"
           "                       engine (the default when the model has one the engine can parse);\n"
           "                       chatml, llama3, llama2: a hand-written layout (the default otherwise, when\n"
           "                       recognised from the template's markers); none refuses chat requests\n"
           "  --max-body BYTES     largest request body (default 1048576; larger: 413)\n"
           "  --check              load, bind and report, then exit (a configuration check)\n"
           "  --json[=FILE]        the startup report as JSON (address, port, model, slots) on stdout or in FILE\n"
           "  -q, --quiet          no startup and shutdown lines on stderr\n"
           "  -c, --ctx-size N     context of EACH slot (default: the model's, at most 4096)\n"
           ENGINE_OPTS_HELP);
}

typedef struct serve_args {
    const char *model, *host, *api_key, *alias, *chat;
    long long port, parallel, max_queue, max_body;
    bool check, quiet;
    cli_json json;
    engine_cli_opts eng;
} serve_args;

static int parse(int argc, char **argv, serve_args *a) {
    *a = (serve_args){.host = "127.0.0.1", .port = 8080, .parallel = 4, .max_body = 1 << 20};
    engine_cli_defaults(&a->eng);
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = engine_cli_parse("serve", argc, argv, &i, &a->eng);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        int j = cli_json_arg("serve", o, &a->json);
        if (j < 0) return CLI_USAGE;
        if (j) continue;
        const char **str = !strcmp(o, "-m") || !strcmp(o, "--model") ? &a->model : !strcmp(o, "--host") ? &a->host
                         : !strcmp(o, "--api-key") ? &a->api_key : !strcmp(o, "--alias") ? &a->alias
                         : !strcmp(o, "--chat-template") ? &a->chat : NULL;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) { help(); return -1; }
        else if (str) { if (!v || !*v) return cli_usage("serve", "%s needs a value", o); *str = v; i++; }
        else if (!strcmp(o, "--port")) { if (cli_parse_int("serve", o, v, 0, 65535, &a->port)) return CLI_USAGE; i++; }
        else if (!strcmp(o, "--parallel")) { if (cli_parse_int("serve", o, v, 1, 256, &a->parallel)) return CLI_USAGE; i++; }
        else if (!strcmp(o, "--max-queue")) { if (cli_parse_int("serve", o, v, 1, 1 << 20, &a->max_queue)) return CLI_USAGE; i++; }
        else if (!strcmp(o, "--max-body")) { if (cli_parse_int("serve", o, v, 64, 1LL << 30, &a->max_body)) return CLI_USAGE; i++; }
        else if (!strcmp(o, "--check")) a->check = true;
        else if (cli_is_quiet(o)) a->quiet = true;
        else return cli_usage("serve", "unknown option '%s'", o);
    }
    if (!a->model) return cli_usage("serve", "missing -m MODEL");
    qt_chat_template t;
    if (a->chat && qt_chat_template_parse(a->chat, &t) != QT_OK) return cli_usage("serve", "--chat-template: %s", qt_last_error());
    return CLI_OK;
}

/* ---- signals: a self-pipe the main thread waits on ---------------------------- */

static int sig_pipe[2] = {-1, -1};
static volatile sig_atomic_t n_signals;

static void on_signal(int sig) {
    if (++n_signals >= 2) _exit(128 + sig); /* asked twice: no drain */
    const char b = (char)sig;
    if (write(sig_pipe[1], &b, 1) < 0) _exit(128 + sig);
}

static int install_signals(void) {
    if (pipe(sig_pipe) != 0) return -1;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

/* ---- startup ---------------------------------------------------------------------- */

static const char *base_name(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--; /* an HF directory given as dir/ */
    const char *end = path + n, *p = end;
    while (p > path && p[-1] != '/') p--;
    static char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(end - p), p);
    return name;
}

/* The address to bind: a numeric IPv4/IPv6 address or a name (first result). */
static int resolve(const char *host, int port, struct sockaddr_storage *ss, bool *v6) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res = NULL;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    const int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc != 0 || !res) return cli_fail(qt_error(QT_ERR_ARG, "--host %s: %s", host, gai_strerror(rc)));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *v6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    return CLI_OK;
}

static int report_start(const serve_args *a, const serve_ctx *s, int port) {
    if (!a->quiet)
        fprintf(stderr, "quanta serve: listening on http://%s%s%s:%d (model '%s', %lld slots of %d positions, queue %lld)\n"
                        "quanta serve: %s\n",
                strchr(a->host, ':') ? "[" : "", a->host, strchr(a->host, ':') ? "]" : "", port, s->model_name,
                a->parallel, s->n_ctx, a->max_queue, qt_engine_describe(s->engine));
    if (!a->json.on) return CLI_OK;
    json_t *o = json_pack("{s:s, s:i, s:s, s:s, s:I, s:i, s:I, s:s, s:b, s:s}", "host", a->host, "port", port, "model",
                          s->model_name, "path", s->model_path, "parallel", (json_int_t)a->parallel, "ctx_size", s->n_ctx,
                          "max_queue", (json_int_t)a->max_queue, "chat_template", qt_chat_template_name(s->chat),
                          "api_key", a->api_key != NULL, "numerics", qt_engine_describe(s->engine));
    /* one line, so that a script can read the port as soon as it is there */
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    char *line = text ? malloc(strlen(text) + 2) : NULL;
    if (!line) {
        free(text);
        return cli_fail(qt_error(QT_ERR_NOMEM, "serve: cannot build the JSON report"));
    }
    sprintf(line, "%s\n", text);
    const int rc = cli_json_emit(&a->json, line);
    fflush(stdout);
    free(line);
    free(text);
    return rc;
}

static struct MHD_Daemon *start_daemon(const serve_args *a, serve_ctx *s, int *port) {
    struct sockaddr_storage ss;
    bool v6 = false;
    if (resolve(a->host, (int)a->port, &ss, &v6) != CLI_OK) return NULL;
    const unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                           (v6 ? MHD_USE_IPv6 : 0);
    struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL, serve_http_access, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                                            MHD_OPTION_NOTIFY_COMPLETED, serve_http_completed, s,
                                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)1000, MHD_OPTION_LISTEN_BACKLOG_SIZE,
                                            (unsigned)1024, MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024),
                                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600, MHD_OPTION_END);
    if (!d) {
        cli_fail(qt_error(QT_ERR_IO, "cannot listen on %s port %lld (in use, or not an address of this machine)", a->host, a->port));
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    *port = di ? di->port : (int)a->port;
    return d;
}

/* SIGTERM: stop accepting, answer every accepted request, then stop. */
static void drain(const serve_args *a, serve_ctx *s, struct MHD_Daemon *d) {
    if (!a->quiet) fprintf(stderr, "quanta serve: draining (%d requests in flight)\n", atomic_load(&s->in_flight));
    atomic_store(&s->draining, true);
    const MHD_socket ls = MHD_quiesce_daemon(d); /* no new connections */
    qt_sched_drain(s->sched);
    for (int i = 0; i < 3000 && atomic_load(&s->in_flight) > 0; i++) usleep(10000); /* answers still being written */
    MHD_stop_daemon(d);
    if (ls != MHD_INVALID_SOCKET) close(ls);
    if (!a->quiet) fprintf(stderr, "quanta serve: stopped\n");
}

/* The model's own template when the Jinja engine parses it (or when asked
 * for), else a named layout recognised from its markers, else none. */
static int choose_chat(const serve_args *a, const qt_vocab *voc, qt_chat_template *out) {
    qt_template *t = NULL;
    qt_status st = voc->chat_template ? qt_template_parse(voc->chat_template, strlen(voc->chat_template), &t) : QT_ERR_NOT_FOUND;
    qt_template_free(t);
    *out = st == QT_OK ? QT_CHAT_MODEL : qt_chat_template_detect(voc->chat_template);
    if (a->chat) qt_chat_template_parse(a->chat, out);
    if (*out == QT_CHAT_MODEL && st != QT_OK) {
        if (!voc->chat_template) fprintf(stderr, "quanta: error: --chat-template model: the model has no chat template\n");
        else fprintf(stderr, "quanta: error: --chat-template model: the model's chat template: %s\n", qt_last_error());
        return CLI_FAIL;
    }
    if (st != QT_OK && voc->chat_template && !a->quiet)
        fprintf(stderr, "quanta serve: warning: the model's chat template is outside quanta's Jinja subset (%s); chat requests use "
                        "the '%s' layout\n", qt_last_error(), qt_chat_template_name(*out));
    return CLI_OK;
}

static int serve(const serve_args *a, serve_ctx *s) {
    const qt_vocab *voc = qt_model_vocab(s->model);
    if (choose_chat(a, voc, &s->chat) != CLI_OK) return CLI_FAIL;
    s->eos_id = voc->eos_id;
    s->add_bos = voc->add_bos;
    s->bos_text = voc->bos_id >= 0 && voc->bos_id < voc->n_tokens ? voc->tokens[voc->bos_id] : NULL;
    s->model_path = a->model;
    s->model_name = a->alias ? a->alias : base_name(a->model);
    s->api_key = a->api_key;
    s->max_body = (size_t)a->max_body;
    s->created = (int64_t)time(NULL);
    s->n_ctx = qt_engine_n_ctx(s->engine);
    qt_sched_opts so = {.max_queue = (int32_t)a->max_queue};
    qt_status st = qt_sched_new(s->engine, voc->eos_id, &so, &s->sched);
    if (st != QT_OK) return cli_fail(st);
    int port = 0;
    struct MHD_Daemon *d = start_daemon(a, s, &port);
    int rc = d ? report_start(a, s, port) : CLI_FAIL;
    if (d && rc == CLI_OK && !a->check) {
        char b;
        while (read(sig_pipe[0], &b, 1) < 0) {} /* until SIGTERM / SIGINT */
        drain(a, s, d);
    } else if (d) {
        MHD_stop_daemon(d);
    }
    qt_sched_free(s->sched);
    return rc;
}

int cmd_serve(int argc, char **argv) {
    serve_args a;
    int rc = parse(argc, argv, &a);
    if (rc < 0) return CLI_OK;
    if (rc != CLI_OK) return rc;
    if (!a.max_queue) a.max_queue = 4 * a.parallel;
    if (install_signals() != 0) return cli_fail(qt_error(QT_ERR_IO, "cannot set up signal handling"));
    serve_ctx s = {0};
    pthread_mutex_init(&s.mu, NULL);
    qt_status st = qt_model_open(a.model, &s.model);
    if (st == QT_OK) st = qt_tokenizer_new(qt_model_vocab(s.model), &s.tok);
    engine_cli_opts eng = a.eng;
    if (st == QT_OK) st = engine_cli_create_seqs(s.model, &eng, (int32_t)a.parallel, &s.engine);
    rc = st == QT_OK ? serve(&a, &s) : cli_fail(st);
    qt_engine_free(s.engine);
    qt_tokenizer_free(s.tok);
    qt_model_free(s.model);
    pthread_mutex_destroy(&s.mu);
    return rc;
}
