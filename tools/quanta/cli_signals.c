/* tools/quanta/cli_signals.c — what Ctrl-C, `timeout` and a closed terminal do.
 *
 * SIGINT, SIGTERM and SIGHUP all ask the library to cancel: writers stop at
 * their next write (or before their rename) and remove their temporary files,
 * and the verb exits 128 + signal. The handler stays installed, so a second
 * signal (Ctrl-C pressed again; `timeout -s INT` signals twice) is one more
 * cancel request rather than the default action killing the process mid-write.
 * A third signal means the user wants out now: the handler removes every
 * temporary file (qt_afile_cleanup, async-signal-safe) and the process dies
 * of that signal. The same cleanup runs at exit. SIGXFSZ is ignored so that
 * a file-size limit is a clear write error rather than a killed process.
 */
#include <signal.h>
#include <stdlib.h>

#include "cli.h"

static volatile sig_atomic_t n_signals, last_signal;

static void on_signal(int sig) {
    n_signals++;
    last_signal = sig;
    qt_request_cancel();
    if (n_signals >= 3) {
        qt_afile_cleanup();
        signal(sig, SIG_DFL);
        raise(sig); /* delivered when this handler returns */
    }
}

void cli_signals_install(void) {
    struct sigaction sa;
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESETHAND: the handler stays for the next signal */
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        sigaddset(&sa.sa_mask, sigs[i]);
    }
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
    /* A file-size limit (ulimit -f) would kill the process mid-write; ignored,
     * write(2) fails with EFBIG and the writer says what happened. */
    signal(SIGXFSZ, SIG_IGN);
    atexit(qt_afile_cleanup);
}

int cli_signal_exit(int rc) {
    return rc != CLI_OK && qt_cancelled() && last_signal ? 128 + last_signal : rc;
}
