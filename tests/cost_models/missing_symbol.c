/*
 * missing_symbol.c: a test cost model that is not complete: it calls a function nobody
 * defines, so linking it into a backend fails.
 */
double act_test_undefined_helper(const char *asm_path);

int act_cost(const char *asm_path, double *cost) {
    *cost = act_test_undefined_helper(asm_path);
    return 0;
}
