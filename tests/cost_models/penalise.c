/*
 * penalise.c: a test cost model. The cost of a candidate is its number of instructions plus
 * 1e300 (large, finite, and so legal) when it calls the instruction named by the PENALISED
 * macro at least once, so that a candidate without it wins. Build it with, for example,
 * -DPENALISED='"gemm_33"'.
 *
 * On its first call it registers an atexit handler that appends "exit <calls>" to the file
 * named by the environment variable ACT_TEST_COST_LOG: the line appears only if the backend
 * ends with a normal exit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PENALISED
#error "define PENALISED as the quoted name of the instruction to penalise"
#endif

static unsigned long calls;

static void write_log(void) {
    const char *path = getenv("ACT_TEST_COST_LOG");
    if (path == NULL) {
        return;
    }
    FILE *log = fopen(path, "a");
    if (log != NULL) {
        fprintf(log, "exit %lu\n", calls);
        fclose(log);
    }
}

/* Whether `line` (without its newline) is a call: its text starts with "api.". Sets *name to
 * the instruction name that follows. */
static int is_call(const char *line, const char **name) {
    while (*line == ' ' || *line == '\t') {
        line++;
    }
    if (strncmp(line, "api.", 4) != 0) {
        return 0;
    }
    *name = line + 4;
    return 1;
}

int act_cost(const char *asm_path, double *cost) {
    if (calls++ == 0) {
        atexit(write_log);
    }
    FILE *file = fopen(asm_path, "r");
    if (file == NULL) {
        return 1;
    }
    char line[4096];
    double instructions = 0;
    int penalised = 0;
    const size_t length = strlen(PENALISED);
    while (fgets(line, sizeof line, file) != NULL) {
        const char *name;
        if (is_call(line, &name)) {
            instructions += 1;
            if (strncmp(name, PENALISED, length) == 0 && name[length] == '(') {
                penalised = 1;
            }
        }
    }
    fclose(file);
    *cost = instructions + (penalised ? 1e300 : 0.0);
    return 0;
}
