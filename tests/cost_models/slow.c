/*
 * slow.c: a test cost model that counts instructions like the default one but takes
 * SLOW_MS milliseconds (a macro, 300 unless defined) per candidate, so that a compile's time
 * limit fires in the middle of the candidate loop.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <string.h>
#include <time.h>

#ifndef SLOW_MS
#define SLOW_MS 300
#endif

int act_cost(const char *asm_path, double *cost) {
    struct timespec pause = {SLOW_MS / 1000, (SLOW_MS % 1000) * 1000000L};
    nanosleep(&pause, NULL);
    FILE *file = fopen(asm_path, "r");
    if (file == NULL) {
        return 1;
    }
    char line[4096];
    double instructions = 0;
    while (fgets(line, sizeof line, file) != NULL) {
        const char *text = line + strspn(line, " \t");
        if (strncmp(text, "api.", 4) == 0) {
            instructions += 1;
        }
    }
    fclose(file);
    *cost = instructions;
    return 0;
}
