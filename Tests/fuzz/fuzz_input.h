/*
 * fuzz_input.h — what the fuzz harnesses share: the report of a broken
 * invariant, reading the fuzzer's input byte by byte, and a growing
 * buffer for the bytes a harness writes.
 *
 * A harness defines FUZZ_NAME (its name, for the report) before including it.
 */
#ifndef LOADSTATE_FUZZ_INPUT_H
#define LOADSTATE_FUZZ_INPUT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reports a broken invariant and aborts, so that libFuzzer keeps the input. */
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs(FUZZ_NAME ": invariant broken: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}

/* The input not read yet. */
typedef struct input {
  const uint8_t *p;
  size_t n;
} input;

/* The next byte; 0 once the input is used up. */
static uint8_t u8(input *in) {
  if (in->n == 0) return 0;
  in->n--;
  return *in->p++;
}

/* Up to max bytes of the input (a length byte first), pointed at in place. */
static inline const uint8_t *bytes(input *in, size_t max, size_t *len) {
  size_t n = max ? u8(in) % (max + 1) : 0;
  if (n > in->n) n = in->n;
  const uint8_t *p = in->p;
  in->p += n;
  in->n -= n;
  *len = n;
  return p;
}

/* A growing buffer for bytes a harness writes. */
typedef struct buf {
  uint8_t *p;
  size_t n, cap;
} buf;

static inline void b_put(buf *b, const void *data, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    if (!b->p) abort();
  }
  if (n) memcpy(b->p + b->n, data, n);
  b->n += n;
}

#endif /* LOADSTATE_FUZZ_INPUT_H */
