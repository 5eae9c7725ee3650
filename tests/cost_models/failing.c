/*
 * failing.c: a test cost model that cannot evaluate anything: act_cost returns 7. Its atexit
 * handler appends "exit" to the file named by ACT_TEST_COST_LOG, to show that a compile that
 * fails because of the model still ends with a normal exit.
 */
#include <stdio.h>
#include <stdlib.h>

static void write_log(void) {
    const char *path = getenv("ACT_TEST_COST_LOG");
    FILE *log = path != NULL ? fopen(path, "a") : NULL;
    if (log != NULL) {
        fputs("exit\n", log);
        fclose(log);
    }
}

int act_cost(const char *asm_path, double *cost) {
    (void)asm_path;
    (void)cost;
    atexit(write_log);
    return 7;
}
