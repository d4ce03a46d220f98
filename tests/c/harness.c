/*
 * harness.c: runs the tests listed in tests.h, one after another, each
 * under a watchdog (a hung test, e.g. a deadlock in zoo_agent_free, fails
 * the run with a message instead of hanging CI), and prints the summary.
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"

#include <fnmatch.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests.h"

#define X(name, seconds) void test_##name(void);
ZOO_TESTS(X)
#undef X

struct test_case {
    const char *name;
    void (*fn)(void);
    int seconds;
};

static const struct test_case tests[] = {
#define X(name, seconds) {#name, test_##name, seconds},
    ZOO_TESTS(X)
#undef X
};

/* The running test's state; checks may run on libzoo's threads. */
static atomic_int current_failures;
static int passed, failed;

/* Watchdog: fails the run if a test outlives its deadline. */
static pthread_mutex_t watch_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_cv = PTHREAD_COND_INITIALIZER;
static const char *watch_name;
static struct timespec watch_deadline;
static int watch_seconds;
static int remaining_after_current;

static void *watchdog(void *arg) {
    (void)arg;
    pthread_mutex_lock(&watch_mu);
    for (;;) {
        if (!watch_name) {
            pthread_cond_wait(&watch_cv, &watch_mu);
            continue;
        }
        if (pthread_cond_timedwait(&watch_cv, &watch_mu, &watch_deadline) == 0) continue;
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        if (watch_name && (now.tv_sec > watch_deadline.tv_sec ||
                           (now.tv_sec == watch_deadline.tv_sec &&
                            now.tv_nsec >= watch_deadline.tv_nsec))) {
            printf("    timed out after %d s (a hang or a deadlock)\n", watch_seconds);
            printf("[ FAIL ] %s\n", watch_name);
            printf("    %d test(s) not run after the hang\n", remaining_after_current);
            printf("%d passed, %d failed\n", passed, failed + 1 + remaining_after_current);
            fflush(stdout);
            _exit(1);
        }
    }
    return NULL;
}

static void watch(const char *name, int seconds, int remaining) {
    pthread_mutex_lock(&watch_mu);
    watch_name = name;
    watch_seconds = seconds;
    remaining_after_current = remaining;
    clock_gettime(CLOCK_REALTIME, &watch_deadline);
    watch_deadline.tv_sec += seconds;
    pthread_cond_signal(&watch_cv);
    pthread_mutex_unlock(&watch_mu);
}

static void unwatch(void) {
    pthread_mutex_lock(&watch_mu);
    watch_name = NULL;
    pthread_cond_signal(&watch_cv);
    pthread_mutex_unlock(&watch_mu);
}

/* Whether name matches one of the comma-separated fnmatch patterns. */
static bool matches_any(const char *patterns, const char *name) {
    char *copy = strdup(patterns);
    bool match = false;
    char *save = NULL;
    for (char *pat = strtok_r(copy, ",", &save); pat; pat = strtok_r(NULL, ",", &save)) {
        if (fnmatch(pat, name, 0) == 0) match = true;
    }
    free(copy);
    return match;
}

/* The quick tier: only the tests that need neither the model nor the MCP
 * servers from npm (tests.h). */
static bool quick_tier(void) {
    const char *quick = getenv("ZOO_TEST_QUICK");
    return quick && strcmp(quick, "1") == 0;
}

static bool selected(const char *name) {
    if (quick_tier() && (strncmp(name, "real_", 5) == 0 || matches_any(ZOO_TESTS_NEEDING_NPM, name)))
        return false;
    const char *filter = getenv("ZOO_TEST_FILTER");
    return !filter || !*filter || matches_any(filter, name);
}

int main(void) {
    /* Every line should reach a pipe (CI, tee) before a crash, in order. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_t dog;
    pthread_create(&dog, NULL, watchdog, NULL);
    pthread_detach(dog);

    size_t count = sizeof tests / sizeof tests[0];
    int to_run = 0;
    for (size_t i = 0; i < count; i++) to_run += selected(tests[i].name);
    printf("libzoo %s: running %d test(s)%s\n", zoo_version(), to_run,
           quick_tier() ? " (quick tier: none that needs the model or the npm MCP servers)" : "");

    for (size_t i = 0; i < count; i++) {
        const struct test_case *t = &tests[i];
        if (!selected(t->name)) continue;
        to_run--;
        printf("[ RUN  ] %s\n", t->name);
        atomic_store(&current_failures, 0);
        int64_t start = th_now_ms();
        watch(t->name, t->seconds * th_timeout_scale(), to_run);
        t->fn();
        unwatch();
        int64_t took = th_now_ms() - start;
        if (atomic_load(&current_failures) == 0) {
            passed++;
            printf("[  OK  ] %s (%lld ms)\n", t->name, (long long)took);
        } else {
            failed++;
            printf("[ FAIL ] %s (%lld ms)\n", t->name, (long long)took);
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}

/* ---- checks ---- */

bool th_check(bool cond, const char *what, const char *file, int line) {
    if (!cond) {
        atomic_fetch_add(&current_failures, 1);
        printf("    %s:%d: check failed: %s\n", file, line, what);
    }
    return cond;
}

bool th_checkf(bool cond, const char *file, int line, const char *fmt, ...) {
    if (!cond) {
        atomic_fetch_add(&current_failures, 1);
        char buf[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        printf("    %s:%d: %s\n", file, line, buf);
    }
    return cond;
}

bool th_check_status(zoo_status got, zoo_status want, const char *error, const char *expr,
                     const char *file, int line) {
    if (got == want) return true;
    atomic_fetch_add(&current_failures, 1);
    printf("    %s:%d: %s\n      returned %d (%s), expected %d (%s)%s%s\n", file, line, expr,
           (int)got, zoo_status_str(got), (int)want, zoo_status_str(want),
           error ? ": " : "", error ? error : "");
    return false;
}

bool th_check_str(const char *got, const char *want, const char *expr, const char *file,
                  int line) {
    bool ok = (got == NULL && want == NULL) || (got && want && strcmp(got, want) == 0);
    if (!ok) {
        atomic_fetch_add(&current_failures, 1);
        printf("    %s:%d: %s\n      is   \"%s\"\n      want \"%s\"\n", file, line, expr,
               got ? got : "(null)", want ? want : "(null)");
    }
    return ok;
}

void th_note(const char *fmt, ...) {
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    printf("    %s\n", buf);
}

/* ---- helpers ---- */

#ifndef ZOO_DEFAULT_MODEL
#define ZOO_DEFAULT_MODEL "../../models/SmolLM2-135M-Instruct.Q4_1.gguf"
#endif

const char *th_model_path(void) {
    const char *env = getenv("ZOO_MODEL");
    return env && *env ? env : ZOO_DEFAULT_MODEL;
}

bool th_require_model(void) {
    /* The quick tier selects no test that needs the model: a test that
     * gets here there is missing its real_ prefix. */
    if (!CHECKF(!quick_tier(), "this test needs the model: name it real_* (the quick tier "
                               "runs without the model)"))
        return false;
    struct stat st;
    const char *path = th_model_path();
    return CHECKF(stat(path, &st) == 0 && S_ISREG(st.st_mode),
                  "model file not found: %s (run scripts/fetch-models, or set ZOO_MODEL to "
                  "a GGUF file); the real-model tests need it",
                  path);
}

void th_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int64_t th_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int th_timeout_scale(void) {
    const char *env = getenv("ZOO_TEST_TIMEOUT_SCALE");
    int scale = env ? atoi(env) : 1;
    return scale > 0 ? scale : 1;
}

bool th_wait_int(atomic_int *v, int want, int timeout_ms) {
    int64_t deadline = th_now_ms() + (int64_t)timeout_ms * th_timeout_scale();
    while (atomic_load(v) != want && th_now_ms() < deadline) th_sleep_ms(1);
    return atomic_load(v) == want;
}

void th_count_free(void *user_data) {
    atomic_fetch_add((atomic_int *)user_data, 1);
}

void th_free_string(char **s) {
    zoo_string_free(*s);
    *s = NULL;
}
