/* bench_util.h — what the C benchmarks share: a monotonic clock, medians,
 * and the line that says where and with what a run was made. */
#ifndef LOADSTATE_BENCH_UTIL_H
#define LOADSTATE_BENCH_UTIL_H

#include <loadstate.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Sorts v and returns its median. */
static inline double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Prints "# date, cpus (model), libloadstate x.y.z, <what> <version>". */
static inline void print_machine(const char *what, const char *version) {
  char model[256] = "?", line[512];
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "model name : %255[^\n]", model) == 1) break;
    fclose(f);
  }
  time_t t = time(NULL);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&t));
  printf("# %s, %ld cpus (%s), libloadstate %u.%u.%u, %s %s\n", date, sysconf(_SC_NPROCESSORS_ONLN), model,
         lds_version() >> 16, (lds_version() >> 8) & 0xff, lds_version() & 0xff, what, version);
}

#endif
