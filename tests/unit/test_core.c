/* Core services: status messages, mmap, atomic writes, CPU detection. */
#include <sys/stat.h>
#include <unistd.h>

#include "qtest.h"
#include "quanta.h"

static void test_error_message(void) {
    qt_status s = qt_error(QT_ERR_FORMAT, "%s: field '%s': %s", "x.gguf", "n_tensors", "too large");
    CHECK_EQ_INT(s, QT_ERR_FORMAT);
    CHECK_EQ_STR(qt_last_error(), "x.gguf: field 'n_tensors': too large");
    CHECK_EQ_STR(qt_status_name(QT_ERR_FORMAT), "format error");
    CHECK_EQ_STR(qt_status_name((qt_status)999), "unknown status");
}

static int count_dir_entries(const char *dir) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p) { if (fscanf(p, "%d", &n) != 1) n = -1; pclose(p); }
    return n;
}

static void test_atomic_write_commit_and_abort(void) {
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/aw", qt_test_tmpdir());
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/out.bin", dir);

    qt_afile *f;
    CHECK_OK(qt_afile_open(path, &f));
    CHECK_OK(qt_afile_write(f, "abc", 3));
    CHECK_OK(qt_afile_pad(f, 5, 0));
    CHECK_EQ_INT(qt_afile_tell(f), 8);
    CHECK(access(path, F_OK) != 0); /* nothing under the real name before commit */
    CHECK_OK(qt_afile_commit(f));

    qt_mmap m;
    CHECK_OK(qt_mmap_open(path, &m));
    CHECK_EQ_INT(m.size, 8);
    CHECK(m.data && memcmp(m.data, "abc\0\0\0\0\0", 8) == 0);
    qt_mmap_close(&m);

    CHECK_OK(qt_afile_open(path, &f));
    CHECK_OK(qt_afile_write(f, "zzzz", 4));
    qt_afile_abort(f);
    CHECK_OK(qt_mmap_open(path, &m)); /* old content intact */
    CHECK_EQ_INT(m.size, 8);
    qt_mmap_close(&m);
    CHECK_EQ_INT(count_dir_entries(dir), 1); /* no temporary left behind */
}

static void test_open_errors_name_the_file(void) {
    qt_mmap m;
    CHECK_STATUS(qt_mmap_open("/nonexistent/dir/model.gguf", &m), QT_ERR_IO);
    CHECK(strstr(qt_last_error(), "/nonexistent/dir/model.gguf") != NULL);
    qt_afile *f;
    CHECK_STATUS(qt_afile_open("/nonexistent/dir/out.gguf", &f), QT_ERR_IO);
    CHECK(strstr(qt_last_error(), "out.gguf") != NULL);
}

static void test_cpu_detect_consistent(void) {
    const qt_cpu_features *f = qt_cpu();
    CHECK(f == qt_cpu());
    if (f->avx512bw) CHECK(f->avx512f);
    if (f->avx2) CHECK(f->avx);
    const char *lvl = qt_cpu_level_name();
    CHECK(!strcmp(lvl, "amx") || !strcmp(lvl, "avx512") || !strcmp(lvl, "avx2") || !strcmp(lvl, "scalar"));
    /* the detail starts with the level; AMX only with the kernel's permission, and never under QUANTA_CPU=avx512 */
    CHECK(!strncmp(qt_cpu_level_detail(), lvl, strlen(lvl)));
    if (!strcmp(lvl, "amx")) CHECK(f->amx_usable && f->amx_int8 && f->amx_tile);
    const char *cap = getenv("QUANTA_CPU");
    if (cap && (!strcmp(cap, "avx512") || !strcmp(cap, "avx2"))) {
        CHECK(strcmp(lvl, "amx") != 0);
        CHECK(!f->amx_usable);
    }
}

int main(void) {
    QT_RUN(test_error_message);
    QT_RUN(test_atomic_write_commit_and_abort);
    QT_RUN(test_open_errors_name_the_file);
    QT_RUN(test_cpu_detect_consistent);
    return qt_test_finish("test_core");
}
