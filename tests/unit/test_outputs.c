/* The one output rule (include/quanta/core.h, qt_afile_open) and what signals
 * do to a write in progress (tools/quanta/cli_signals.c, included below so the
 * CLI's own handler is what is tested):
 *   "-" is stdout; a regular file is replaced atomically (mode kept); a
 *   symlink's target is replaced and the link kept; a device or FIFO is written
 *   in place; a directory is refused; an output naming the input is refused;
 *   an HF directory must be empty unless forced; repeated SIGINT/SIGTERM in the
 *   middle of a few-hundred-MB write leave no temporary file and no output.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../tools/quanta/cli_signals.c"
#include "fixtures.h"
#include "qtest.h"
#include "quanta.h"

static const char *tpath(const char *name) {
    static char buf[8][1024];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", qt_test_tmpdir(), name);
    return p;
}

static void put_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f) { fputs(text, f); fclose(f); }
}

static int read_text(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    fclose(f);
    return (int)got;
}

static qt_status write_all(const char *path, const char *text) {
    qt_afile *f;
    qt_status s = qt_afile_open(path, &f);
    if (s != QT_OK) return s;
    if ((s = qt_afile_write(f, text, strlen(text))) != QT_OK) { qt_afile_abort(f); return s; }
    return qt_afile_commit(f);
}

/* Names in dir starting with '.' (the writer's temporaries), "." and ".." aside. */
static int hidden_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    const struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void test_dash_is_stdout(void) {
    const char *cap = tpath("stdout.txt");
    fflush(stdout);
    int saved = dup(STDOUT_FILENO), fd = open(cap, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    close(fd);
    qt_status s = write_all("-", "to stdout\n");
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    CHECK_OK(s);
    char buf[64];
    CHECK_EQ_INT(read_text(cap, buf, sizeof buf), 10);
    CHECK_EQ_STR(buf, "to stdout\n");
    CHECK(access(tpath("-"), F_OK) != 0); /* no file named "-" */
}

static void test_regular_file_replaced_atomically_mode_kept(void) {
    const char *p = tpath("regular.txt");
    put_text(p, "old");
    chmod(p, 0600);
    qt_afile *f;
    CHECK_OK(qt_afile_open(p, &f));
    CHECK_OK(qt_afile_write(f, "new!", 4));
    char buf[64];
    read_text(p, buf, sizeof buf);
    CHECK_EQ_STR(buf, "old"); /* untouched until the commit */
    CHECK_EQ_INT(qt_afile_live_temps(), 1);
    CHECK_OK(qt_afile_commit(f));
    read_text(p, buf, sizeof buf);
    CHECK_EQ_STR(buf, "new!");
    struct stat st;
    CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK_EQ_INT(qt_afile_live_temps(), 0);
    CHECK_EQ_INT(hidden_files(qt_test_tmpdir()), 0);
}

static void test_symlink_target_replaced_link_kept(void) {
    const char *real = tpath("real.txt"), *link = tpath("link.txt");
    put_text(real, "keep");
    CHECK(symlink("real.txt", link) == 0);
    CHECK_OK(write_all(link, "through the link"));
    struct stat ls;
    CHECK(lstat(link, &ls) == 0 && S_ISLNK(ls.st_mode));
    char buf[64];
    read_text(real, buf, sizeof buf);
    CHECK_EQ_STR(buf, "through the link");
    /* A dangling link: its target is created, the link stays. */
    const char *dangling = tpath("dangling.txt");
    CHECK(symlink("made-by-writer.txt", dangling) == 0);
    CHECK_OK(write_all(dangling, "made"));
    CHECK(lstat(dangling, &ls) == 0 && S_ISLNK(ls.st_mode));
    read_text(tpath("made-by-writer.txt"), buf, sizeof buf);
    CHECK_EQ_STR(buf, "made");
}

static void test_fifo_written_in_place(void) {
    const char *p = tpath("fifo");
    CHECK(mkfifo(p, 0644) == 0);
    int rd = open(p, O_RDONLY | O_NONBLOCK); /* a reader, so opening for writing does not block */
    CHECK(rd >= 0);
    CHECK_OK(write_all(p, "through the fifo"));
    char buf[64] = "";
    ssize_t n = read(rd, buf, sizeof buf - 1);
    CHECK_EQ_INT(n, 16);
    if (n > 0) buf[n] = '\0';
    CHECK_EQ_STR(buf, "through the fifo");
    close(rd);
    struct stat st;
    CHECK(lstat(p, &st) == 0 && S_ISFIFO(st.st_mode));
}

static void test_device_written_in_place(void) {
    /* As root (where the old writer destroyed /dev/null) a private copy of the
     * null device; otherwise /dev/null itself, which the writer must not try to replace. */
    const char *p = tpath("fakenull");
    if (mknod(p, S_IFCHR | 0666, makedev(1, 3)) != 0) p = "/dev/null";
    CHECK_OK(write_all(p, "discarded"));
    struct stat st;
    CHECK(lstat(p, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3));
    CHECK_EQ_INT(hidden_files(qt_test_tmpdir()), 0);
}

static void test_directory_and_empty_name_refused(void) {
    qt_afile *f = NULL;
    CHECK_STATUS(qt_afile_open(qt_test_tmpdir(), &f), QT_ERR_IO);
    CHECK(strstr(qt_last_error(), "is a directory") != NULL);
    CHECK_STATUS(qt_afile_open("", &f), QT_ERR_ARG);
    CHECK(f == NULL);
}

static void test_cleanup_registry(void) {
    const char *p = tpath("registry.bin");
    qt_afile *f;
    CHECK_OK(qt_afile_open(p, &f));
    CHECK_OK(qt_afile_write(f, "x", 1));
    CHECK_EQ_INT(hidden_files(qt_test_tmpdir()), 1);
    qt_afile_cleanup(); /* what the signal path and atexit run */
    CHECK_EQ_INT(hidden_files(qt_test_tmpdir()), 0);
    CHECK_EQ_INT(qt_afile_live_temps(), 0);
    CHECK(qt_afile_commit(f) != QT_OK); /* its temporary is gone: nothing to rename */
    CHECK(access(p, F_OK) != 0);
}

static void test_output_is_input_refused(void) {
    const char *in = tpath("in.gguf"), *alias = tpath("alias.gguf"), *hard = tpath("hard.gguf");
    CHECK_EQ_INT(fx_copy_file(qt_test_shared("models/stories260K.gguf"), in), 0);
    size_t n0;
    void *before = qt_test_read(in, &n0);
    CHECK(symlink("in.gguf", alias) == 0);
    CHECK(link(in, hard) == 0);
    qt_model *m;
    CHECK_OK(qt_model_open(in, &m));
    if (!m) { free(before); return; }
    qt_gguf_write_opts o = qt_gguf_write_opts_default();
    o.outtype = QT_TYPE_F16;
    const char *outs[] = {in, alias, hard};
    for (int i = 0; i < 3; i++) {
        CHECK_STATUS(qt_gguf_write(m, outs[i], &o), QT_ERR_ARG);
        CHECK_MSG(strstr(qt_last_error(), "is the input") != NULL, "%s", qt_last_error());
    }
    CHECK_STATUS(qt_hf_write(m, in, NULL), QT_ERR_ARG); /* a directory over the input file: refused too */
    qt_model_free(m);
    size_t n1;
    void *after = qt_test_read(in, &n1);
    CHECK(n0 == n1 && memcmp(before, after, n0) == 0);
    free(before);
    free(after);
}

static void test_hf_directory_rule(void) {
    qt_model *m;
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &m));
    if (!m) return;
    /* "" used to read past the end of the name (ASan heap-buffer-overflow in make_dirs) */
    CHECK_STATUS(qt_hf_write(m, "", NULL), QT_ERR_ARG);
    CHECK_STATUS(qt_hf_write(m, "-", NULL), QT_ERR_ARG);
    /* missing parent: refused, as for a GGUF output */
    CHECK_STATUS(qt_hf_write(m, tpath("no/such/parent"), NULL), QT_ERR_IO);
    CHECK(access(tpath("no"), F_OK) != 0);
    /* non-empty without force: refused, the directory untouched */
    const char *full = tpath("full");
    mkdir(full, 0755);
    char keep[1100];
    snprintf(keep, sizeof keep, "%s/notes.txt", full);
    put_text(keep, "mine");
    CHECK_STATUS(qt_hf_write(m, full, NULL), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "not empty") && strstr(qt_last_error(), "--force"));
    char cfg[1100];
    snprintf(cfg, sizeof cfg, "%s/config.json", full);
    CHECK(access(cfg, F_OK) != 0);
    qt_hf_write_opts o = {.force = true};
    CHECK_OK(qt_hf_write(m, full, &o));
    CHECK(access(cfg, F_OK) == 0 && access(keep, F_OK) == 0);
    /* missing leaf and an existing empty directory: fine */
    CHECK_OK(qt_hf_write(m, tpath("leaf"), NULL));
    mkdir(tpath("empty"), 0755);
    CHECK_OK(qt_hf_write(m, tpath("empty"), NULL));
    qt_model_free(m);
}

/* ---- signals in the middle of a large write --------------------------------- */

/* ~220 MB of F16 weights: 32000 x 1024 embeddings and output, 4 layers. */
static const fx_spec big = {"big", "LlamaForCausalLM", "llama", 32000, 1024, 4, 16, 4, 2816, 2048, 64, false,
                            false, false, false, false, 1e-5f, 10000.0f, 0, QT_ST_F16, 1, NULL, false};

typedef struct signal_plan {
    int sig, times;
    double at;      /* share of the write after which the signals are raised */
    bool raised;
    int64_t seen_done, seen_total;
} signal_plan;

static void raise_midway(void *user, const char *what, int64_t done, int64_t total) {
    (void)what;
    signal_plan *p = user;
    p->seen_done = done;
    p->seen_total = total;
    if (p->raised || total <= 0 || (double)done < p->at * (double)total) return;
    p->raised = true;
    for (int i = 0; i < p->times; i++) raise(p->sig); /* delivered before raise returns */
}

static const char *big_model_dir(void) {
    static bool made;
    const char *dir = tpath("big_hf");
    if (!made && fx_write_hf(dir, &big, 7) == 0) made = true;
    return made ? dir : NULL;
}

static void reset_signals(void) {
    n_signals = 0;
    qt_cancel_reset();
}

static void test_double_sigint_mid_gguf_write(void) {
    const char *dir = big_model_dir();
    CHECK(dir != NULL);
    if (!dir) return;
    struct stat st;
    char st_path[1100];
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir);
    CHECK(stat(st_path, &st) == 0 && st.st_size > 200000000);
    qt_model *m;
    CHECK_OK(qt_model_open(dir, &m));
    if (!m) return;
    const char *outdir = tpath("sig_gguf");
    mkdir(outdir, 0755);
    char out[1100];
    snprintf(out, sizeof out, "%s/big.gguf", outdir);
    const int sigs[] = {SIGINT, SIGTERM};
    for (int k = 0; k < 2; k++) {
        reset_signals();
        signal_plan plan = {.sig = sigs[k], .times = 2, .at = 0.4};
        qt_gguf_write_opts o = qt_gguf_write_opts_default();
        o.progress = (qt_progress){raise_midway, &plan};
        CHECK_STATUS(qt_gguf_write(m, out, &o), QT_ERR_INTERRUPTED); /* the old handler died on the second */
        CHECK(plan.raised && plan.seen_done < plan.seen_total);
        CHECK_EQ_INT(n_signals, 2);
        CHECK(access(out, F_OK) != 0);
        CHECK_EQ_INT(hidden_files(outdir), 0);
        CHECK_EQ_INT(qt_afile_live_temps(), 0);
    }
    reset_signals();
    qt_model_free(m);
}

static void test_double_sigint_mid_hf_write(void) {
    const char *dir = big_model_dir();
    if (!dir) { CHECK(dir != NULL); return; }
    qt_model *m;
    CHECK_OK(qt_model_open(dir, &m));
    if (!m) return;
    const char *out = tpath("sig_hf");
    reset_signals();
    signal_plan plan = {.sig = SIGINT, .times = 2, .at = 0.5};
    qt_hf_write_opts o = {.progress = {raise_midway, &plan}};
    CHECK_STATUS(qt_hf_write(m, out, &o), QT_ERR_INTERRUPTED);
    CHECK(plan.raised);
    CHECK(access(out, F_OK) != 0); /* the directory it created is removed again */
    CHECK_EQ_INT(hidden_files(qt_test_tmpdir()), 0);
    CHECK_EQ_INT(qt_afile_live_temps(), 0);
    reset_signals();
    qt_model_free(m);
}

/* A third signal ends the process at once, by that signal, after removing the temporaries. */
static void test_third_signal_cleans_up_and_dies(void) {
    const char *dir = tpath("third");
    mkdir(dir, 0755);
    char out[1100];
    snprintf(out, sizeof out, "%s/out.bin", dir);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        cli_signals_install();
        qt_afile *f;
        if (qt_afile_open(out, &f) != QT_OK || qt_afile_write(f, "partial", 7) != QT_OK) _exit(3);
        for (int i = 0; i < 3; i++) raise(SIGINT);
        _exit(4); /* not reached */
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT, "child status %#x", status);
    CHECK(access(out, F_OK) != 0);
    CHECK_EQ_INT(hidden_files(dir), 0);
}

int main(void) {
    QT_RUN(test_third_signal_cleans_up_and_dies); /* forks: first, before any thread exists */
    cli_signals_install();
    QT_RUN(test_dash_is_stdout);
    QT_RUN(test_regular_file_replaced_atomically_mode_kept);
    QT_RUN(test_symlink_target_replaced_link_kept);
    QT_RUN(test_fifo_written_in_place);
    QT_RUN(test_device_written_in_place);
    QT_RUN(test_directory_and_empty_name_refused);
    QT_RUN(test_cleanup_registry);
    QT_RUN(test_output_is_input_refused);
    QT_RUN(test_hf_directory_rule);
    QT_RUN(test_double_sigint_mid_gguf_write);
    QT_RUN(test_double_sigint_mid_hf_write);
    return qt_test_finish("test_outputs");
}
