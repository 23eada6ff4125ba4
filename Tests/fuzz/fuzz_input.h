/*
 * fuzz_input.h — what both fuzz harnesses share: the report of a broken
 * invariant, and reading the fuzzer's input byte by byte.
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

#endif /* LOADSTATE_FUZZ_INPUT_H */
