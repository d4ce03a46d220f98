/*
 * harness.h: the tests' runner (no external framework).
 *
 * A test is a `void name(void)` listed in tests.h. CHECK* macros record a
 * failure and carry on (so one run shows every broken expectation);
 * REQUIRE* macros also return from the test. Each test prints "[ RUN  ]"
 * and "[  OK  ]" or "[ FAIL ]" with its name, and the run ends with the line
 * "N passed, M failed" that CI reads.
 *
 * Environment:
 *   ZOO_TEST_FILTER         comma-separated fnmatch patterns of tests to run
 *   ZOO_TEST_TIMEOUT_SCALE  multiplies every test's time limit (valgrind)
 *   ZOO_MODEL               the GGUF for the real-model tests
 */
#ifndef ZOO_TEST_HARNESS_H
#define ZOO_TEST_HARNESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zoo.h"

/* Records the outcome of one check; returns cond. */
bool th_check(bool cond, const char *what, const char *file, int line);
/* Like th_check, with a printf-style explanation on failure. */
bool th_checkf(bool cond, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Checks a status; on mismatch prints both statuses and `error` (may be NULL). */
bool th_check_status(zoo_status got, zoo_status want, const char *error, const char *expr,
                     const char *file, int line);
/* Checks two strings for equality (NULL equals only NULL). */
bool th_check_str(const char *got, const char *want, const char *expr, const char *file, int line);

#define CHECK(cond) th_check((cond), #cond, __FILE__, __LINE__)
#define CHECKF(cond, ...) th_checkf((cond), __FILE__, __LINE__, __VA_ARGS__)
#define CHECK_STR(got, want) th_check_str((got), (want), #got, __FILE__, __LINE__)
/* Runs `expr` (a call returning zoo_status) and checks it against `want`;
 * `err` is the call's out_error, printed on mismatch. */
#define CHECK_STATUS(expr, want, err)                                                 \
    th_check_status((expr), (want), (err), #expr, __FILE__, __LINE__)
#define REQUIRE(cond)                                                                 \
    do {                                                                              \
        if (!CHECK(cond)) return;                                                     \
    } while (0)
#define REQUIRE_STATUS(expr, want, err)                                               \
    do {                                                                              \
        if (!CHECK_STATUS(expr, want, err)) return;                                   \
    } while (0)

/* Prints a note under the running test (indented). */
void th_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- helpers shared by the tests ---- */

/* The model for real-model tests (ZOO_MODEL, else the repository's default
 * SmolLM2 file). */
const char *th_model_path(void);
/* Checks that the model file exists; on failure records a test failure
 * saying how to get it. */
bool th_require_model(void);
/* Sleeps for ms milliseconds. */
void th_sleep_ms(int ms);
/* Monotonic milliseconds. */
int64_t th_now_ms(void);
/* Waits (polling) until *v == want or timeout_ms passes; returns *v == want. */
bool th_wait_int(atomic_int *v, int want, int timeout_ms);
/* The time-limit multiplier (ZOO_TEST_TIMEOUT_SCALE, default 1). */
int th_timeout_scale(void);

/* A free_user_data that counts its calls in the atomic_int at user_data. */
void th_count_free(void *user_data);

/* Frees an out_error (or any libzoo string) and sets the pointer to NULL. */
void th_free_string(char **s);

/* Checks that a failed call set a non-empty message in *error, then frees
 * it. */
#define CHECK_ERROR_MESSAGE(error)                                                    \
    do {                                                                              \
        CHECKF((error) != NULL && (error)[0] != '\0', "%s: expected a message",      \
               #error);                                                               \
        th_free_string(&(error));                                                     \
    } while (0)

#endif /* ZOO_TEST_HARNESS_H */
