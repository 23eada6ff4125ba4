/*
 * A client of the cache functions of libloadstate, run by
 * Tests/LoadstateTests/CacheTests.swift.
 *
 *   cache_writer write PATH ROUND   opens the persistent cache PATH, prints
 *                                   "ready", then puts entries forever and
 *                                   prints "KEY LENGTH" after each put has
 *                                   returned; the test kills it with SIGKILL.
 *   cache_writer check DIR          checks the C API of both stores (return
 *                                   codes, ownership, bounds) with files in
 *                                   DIR; exits 0 when every check passed.
 *   cache_writer open-race DIR N    N times: 4 processes open one new cache
 *                                   file in DIR at the same moment; prints
 *                                   each failed open and exits 1 if any.
 *
 * The value of key K with length N is byte i = ((i + sum of K's bytes) *
 * 131) mod 256, so the test can check it from the printed line alone.
 */
#define _GNU_SOURCE
#include <loadstate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void fill(unsigned char *value, size_t length, const char *key) {
  unsigned sum = 0;
  for (const char *p = key; *p; p++) sum += (unsigned char)*p;
  for (size_t i = 0; i < length; i++) value[i] = (unsigned char)((i + sum) * 131);
}

/* write(2) the whole line: a killed process leaves at most one partial line. */
static void say(const char *line) {
  size_t left = strlen(line);
  while (left > 0) {
    ssize_t n = write(1, line, left);
    if (n <= 0) exit(3);
    line += n;
    left -= (size_t)n;
  }
}

static int writer(const char *path, unsigned round) {
  lds_runtime *rt;
  if (lds_runtime_new(NULL, &rt) != LDS_OK) return 1;
  lds_persistent_cache_options o = LDS_PERSISTENT_CACHE_OPTIONS_INIT;
  o.path = path;
  o.max_bytes = (uint64_t)1 << 40;
  lds_id cache;
  int rc = lds_persistent_cache_new(rt, &o, &cache);
  if (rc != LDS_OK) {
    fprintf(stderr, "cache_writer: open %s: %s\n", path, lds_strerror(rc));
    return 1;
  }
  say("ready\n");
  srand(round * 7919u + 1);
  static unsigned char value[100000];
  for (unsigned i = 0;; i++) {
    char key[64], line[96];
    snprintf(key, sizeof key, "r%u/%u", round, i);
    /* Mostly small values; one in ten spans many pages. */
    size_t length = rand() % 10 == 0 ? 20000 + (size_t)(rand() % 80000) : (size_t)(rand() % 2000);
    fill(value, length, key);
    rc = lds_cache_put(rt, cache, key, strlen(key), value, length);
    if (rc != LDS_OK) {
      fprintf(stderr, "cache_writer: put %s: %s\n", key, lds_strerror(rc));
      return 2;
    }
    snprintf(line, sizeof line, "%s %zu\n", key, length);
    say(line);
  }
}

static void ignore_event(const lds_event *event, void *data) {
  (void)event;
  (void)data;
}

static int failures;
#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "cache_writer check: line %d: %s\n", __LINE__, #cond); \
      failures++;                                                          \
    }                                                                      \
  } while (0)

static void check_store(lds_runtime *rt, lds_id cache) {
  lds_cache_value v = {0};
  lds_cache_statistics st;
  CHECK(lds_cache_get(rt, cache, "a", 1, &v) == 0);
  CHECK(v.value == NULL && v.value_len == 0);
  CHECK(lds_cache_put(rt, cache, "a", 1, "alpha", 5) == LDS_OK);
  CHECK(lds_cache_put(rt, cache, "e", 1, NULL, 0) == LDS_OK);
  CHECK(lds_cache_put(rt, cache, NULL, 0, "empty key", 9) == LDS_OK);
  CHECK(lds_cache_get(rt, cache, "a", 1, &v) == 1);
  CHECK(v.value_len == 5 && memcmp(v.value, "alpha", 5) == 0);
  CHECK(v.stored_at_ms > 1700000000000ull && v.expires_at_ms == 0 && v.stale == 0);
  lds_cache_value_clear(&v);
  CHECK(v.value == NULL && v.value_len == 0);
  lds_cache_value_clear(&v);
  lds_cache_value_clear(NULL);
  CHECK(lds_cache_get(rt, cache, "e", 1, &v) == 1);
  CHECK(v.value != NULL && v.value_len == 0);
  lds_cache_value_clear(&v);
  CHECK(lds_cache_get(rt, cache, NULL, 0, &v) == 1);
  CHECK(v.value_len == 9);
  lds_cache_value_clear(&v);
  CHECK(lds_cache_remove(rt, cache, "a", 1) == 1);
  CHECK(lds_cache_remove(rt, cache, "a", 1) == 0);
  CHECK(lds_cache_get(rt, cache, "a", 1, &v) == 0);
  CHECK(lds_cache_stats(rt, cache, &st) == LDS_OK);
  CHECK(st.hits == 3 && st.misses == 2 && st.entries == 2 && st.bytes == 1 + 9);
  CHECK(lds_cache_clear(rt, cache) == LDS_OK);
  CHECK(lds_cache_stats(rt, cache, &st) == LDS_OK);
  CHECK(st.entries == 0 && st.bytes == 0 && st.hits == 3);
  /* Bad arguments. */
  CHECK(lds_cache_put(rt, cache, NULL, 1, "x", 1) == LDS_EINVAL);
  CHECK(lds_cache_put(rt, cache, "k", 1, NULL, 1) == LDS_EINVAL);
  CHECK(lds_cache_put(rt, cache, "k", 1, "x", LDS_VALUE_MAX + 1) == LDS_ETOOBIG);
  CHECK(lds_cache_get(rt, cache, "k", 1, NULL) == LDS_EINVAL);
  CHECK(lds_cache_get(rt, cache, NULL, 1, &v) == LDS_EINVAL);
  CHECK(lds_cache_get(NULL, cache, "k", 1, &v) == LDS_EINVAL);
  CHECK(lds_cache_stats(rt, cache, NULL) == LDS_EINVAL);
  CHECK(lds_cache_remove(rt, cache, NULL, 1) == LDS_EINVAL);
  CHECK(lds_cache_clear(NULL, cache) == LDS_EINVAL);
}

static int check(const char *dir) {
  lds_runtime *rt;
  if (lds_runtime_new(NULL, &rt) != LDS_OK) return 1;
  char path[4096];
  snprintf(path, sizeof path, "%s/check.db", dir);

  /* Memory cache: defaults, options, bounds. */
  lds_id mem, bounded, pc, cell;
  CHECK(lds_memory_cache_new(rt, NULL, &mem) == LDS_OK);
  check_store(rt, mem);
  lds_memory_cache_options mo = LDS_MEMORY_CACHE_OPTIONS_INIT;
  mo.name = "bounded";
  mo.max_entries = 2;
  CHECK(lds_memory_cache_new(rt, &mo, &bounded) == LDS_OK);
  CHECK(bounded != mem && bounded != 0);
  CHECK(lds_cache_put(rt, bounded, "1", 1, "x", 1) == LDS_OK);
  CHECK(lds_cache_put(rt, bounded, "2", 1, "x", 1) == LDS_OK);
  CHECK(lds_cache_put(rt, bounded, "3", 1, "x", 1) == LDS_OK);
  lds_cache_statistics st;
  CHECK(lds_cache_stats(rt, bounded, &st) == LDS_OK && st.entries == 2 && st.evictions == 1);
  mo.size = 4;
  CHECK(lds_memory_cache_new(rt, &mo, &pc) == LDS_EINVAL);
  CHECK(lds_memory_cache_new(rt, NULL, NULL) == LDS_EINVAL);
  CHECK(lds_memory_cache_new(NULL, NULL, &pc) == LDS_EINVAL);

  /* Persistent cache. */
  lds_persistent_cache_options po = LDS_PERSISTENT_CACHE_OPTIONS_INIT;
  CHECK(lds_persistent_cache_new(rt, &po, &pc) == LDS_EINVAL);
  CHECK(lds_persistent_cache_new(rt, NULL, &pc) == LDS_EINVAL);
  po.path = path;
  po.flags = 2;
  CHECK(lds_persistent_cache_new(rt, &po, &pc) == LDS_EINVAL);
  po.flags = 0;
  po.size = 8;
  CHECK(lds_persistent_cache_new(rt, &po, &pc) == LDS_EINVAL);
  po.size = sizeof po;
  CHECK(lds_persistent_cache_new(rt, &po, &pc) == LDS_OK);
  struct stat sb;
  CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
  check_store(rt, pc);
  CHECK(lds_cache_put(rt, pc, "kept", 4, "value", 5) == LDS_OK);
  CHECK(lds_cache_free(rt, pc) == LDS_OK);
  CHECK(lds_cache_free(rt, pc) == LDS_ENOENT);
  CHECK(lds_cache_put(rt, pc, "k", 1, "x", 1) == LDS_ENOENT);
  CHECK(lds_persistent_cache_new(rt, &po, &pc) == LDS_OK);
  lds_cache_value v;
  CHECK(lds_cache_get(rt, pc, "kept", 4, &v) == 1 && v.value_len == 5 && memcmp(v.value, "value", 5) == 0);
  lds_cache_value_clear(&v);

  /* A file that is not a database. */
  char junk[4096];
  snprintf(junk, sizeof junk, "%s/junk.db", dir);
  FILE *f = fopen(junk, "w");
  for (int i = 0; i < 200; i++) fputs("not a database. ", f);
  fclose(f);
  lds_id bad;
  po.path = junk;
  CHECK(lds_persistent_cache_new(rt, &po, &bad) == LDS_EIO);
  po.flags = LDS_CACHE_REPLACE_DAMAGED;
  CHECK(lds_persistent_cache_new(rt, &po, &bad) == LDS_OK);
  CHECK(lds_cache_put(rt, bad, "k", 1, "x", 1) == LDS_OK);
  snprintf(junk, sizeof junk, "%s/no-such-dir/x.db", dir);
  po.path = junk;
  CHECK(lds_persistent_cache_new(rt, &po, &bad) == LDS_EIO);

  /* Ids of other kinds, and other kinds given cache ids. */
  CHECK(lds_loadable_new(rt, ignore_event, NULL, &cell) == LDS_OK);
  lds_cache_value v2;
  CHECK(lds_cache_get(rt, cell, "k", 1, &v2) == LDS_ENOENT);
  CHECK(lds_cache_free(rt, cell) == LDS_ENOENT);
  CHECK(lds_loadable_free(rt, mem) == LDS_ENOENT);
  CHECK(lds_cache_stats(rt, 12345, &st) == LDS_ENOENT);

  /* The runtime closes the caches still open. */
  CHECK(lds_runtime_free(rt) == LDS_OK);
  CHECK(lds_cache_put(rt, mem, "k", 1, "x", 1) == LDS_ECLOSED);
  CHECK(lds_cache_get(rt, mem, "k", 1, &v2) == LDS_ECLOSED);
  char wal[4200];
  snprintf(wal, sizeof wal, "%s-wal", path);
  CHECK(access(wal, F_OK) != 0); /* the last connection closed: WAL checkpointed and removed */
  if (failures == 0) printf("ok\n");
  return failures == 0 ? 0 : 1;
}

/* One process of a round: waits for the start (its end of the pipe
 * closing), opens the file, exits with 0 or 1. */
static int open_when_told(const char *path, int start, unsigned round) {
  char byte;
  if (read(start, &byte, 1) < 0) return 1;
  lds_runtime *rt;
  if (lds_runtime_new(NULL, &rt) != LDS_OK) return 1;
  lds_persistent_cache_options o = LDS_PERSISTENT_CACHE_OPTIONS_INIT;
  o.path = path;
  lds_id cache;
  int rc = lds_persistent_cache_new(rt, &o, &cache);
  if (rc != LDS_OK) printf("round %u: lds_persistent_cache_new: %s\n", round, lds_strerror(rc));
  lds_runtime_free(rt);
  return rc == LDS_OK ? 0 : 1;
}

static int open_race(const char *dir, unsigned rounds) {
  enum { OPENERS = 4 };
  int failed = 0;
  for (unsigned round = 0; round < rounds; round++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/race-%u.db", dir, round);
    int start[2];
    if (pipe(start) != 0) return 2;
    fflush(stdout);
    pid_t children[OPENERS];
    for (int i = 0; i < OPENERS; i++) {
      children[i] = fork();
      if (children[i] < 0) return 2;
      if (children[i] == 0) {
        close(start[1]);
        int rc = open_when_told(path, start[0], round);
        fflush(stdout);
        _exit(rc);
      }
    }
    close(start[0]);
    close(start[1]); /* every child's read returns now */
    for (int i = 0; i < OPENERS; i++) {
      int status = 0;
      if (waitpid(children[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
    }
  }
  printf("%d of %u opens failed\n", failed, rounds * OPENERS);
  return failed == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "write") == 0) return writer(argv[2], (unsigned)atoi(argv[3]));
  if (argc == 3 && strcmp(argv[1], "check") == 0) return check(argv[2]);
  if (argc == 4 && strcmp(argv[1], "open-race") == 0) return open_race(argv[2], (unsigned)atoi(argv[3]));
  fprintf(stderr, "usage: cache_writer write PATH ROUND | cache_writer check DIR | cache_writer open-race DIR N\n");
  return 64;
}
