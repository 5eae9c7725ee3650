/*
 * act_alloc.h: the C interface of the act-backend memory allocator.
 *
 * The backend hands the allocator a placement problem that is already
 * scheduled (variables, linear equalities, buffer blocks with live ranges,
 * an objective) as a JSON document and receives the addresses as JSON.
 * The request and response formats are described in the allocator README.
 */
#ifndef ACT_ALLOC_H
#define ACT_ALLOC_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Solves the placement problem in `request_json` (a NUL-terminated UTF-8
 * JSON document) and stores a newly allocated NUL-terminated JSON response
 * in `*response_json`.
 *
 * Returns 0 when a response was written; its "status" field then says
 * whether a placement was found. A malformed request is answered with
 * status "invalid", not with a non-zero return. Returns non-zero only when
 * no response could be written: `response_json` is NULL (1) or memory ran
 * out (2); `*response_json` is then left NULL (when it is a valid pointer).
 *
 * Release the response with act_allocate_free.
 */
int act_allocate(const char *request_json, char **response_json);

/* Releases a response written by act_allocate. NULL is accepted. */
void act_allocate_free(char *response_json);

#ifdef __cplusplus
}
#endif

#endif /* ACT_ALLOC_H */
