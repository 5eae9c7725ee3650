/*
 * default_cost.c: the cost model a backend is built with unless the user links their own.
 *
 * The cost of a candidate is its number of instructions: the lines of the assembly whose
 * first non-blank text starts with "api.". The file is scanned one character at a time, so
 * lines of any length are handled and nothing after a line's first word is looked at.
 */
#include <stdio.h>

static const char kCall[] = "api.";

/* Where the scanner is within the current line. */
enum line_state {
    LEADING_BLANKS, /* only spaces and tabs so far */
    MATCHING,       /* the first non-blank text matches a prefix of "api." */
    DONE            /* the line is decided; skip to its end */
};

int act_cost(const char *asm_path, double *cost) {
    if (asm_path == NULL || cost == NULL) {
        return 1;
    }
    FILE *file = fopen(asm_path, "rb");
    if (file == NULL) {
        return 2;
    }
    unsigned long calls = 0;
    enum line_state state = LEADING_BLANKS;
    size_t matched = 0;
    int c;
    while ((c = fgetc(file)) != EOF) {
        if (c == '\n') {
            state = LEADING_BLANKS;
            matched = 0;
            continue;
        }
        if (state == DONE) {
            continue;
        }
        if (state == LEADING_BLANKS) {
            if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
                continue;
            }
            state = MATCHING; /* c is the first character of the line's text */
        }
        if (c != kCall[matched]) {
            state = DONE;
        } else if (kCall[++matched] == '\0') {
            calls++;
            state = DONE;
        }
    }
    int failed = ferror(file);
    if (fclose(file) != 0 || failed) {
        return 3;
    }
    *cost = (double)calls;
    return 0;
}
