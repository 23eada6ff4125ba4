/*
 * cache.c — cache hits through the C API, each store next to a baseline
 * measured in the same run.
 *
 *   usage: cache [keys] [value_bytes] [gets] [rounds]
 *          defaults: 100000 100 2000000 3
 *
 * Keys are "key:%012u" (16 bytes); every value is value_bytes long. Gets
 * visit the keys in a fixed random order, so every get is a hit.
 *
 * 1. Memory cache: lds_cache_get + lds_cache_value_clear on a memory cache
 *    holding every key. Baseline: an open-addressing hash map (FNV-1a,
 *    linear probing) over the same keys and values; a lookup copies the
 *    value into a malloc'd buffer and frees it, the work the API's
 *    ownership contract asks of lds_cache_get.
 *
 * 2. Persistent cache: lds_cache_get on a persistent cache in a new file
 *    under /tmp holding every key (the puts are timed too). Baseline: a
 *    second SQLite connection to the same file, with the same page cache
 *    size (32 MiB), running one prepared "SELECT value FROM entries WHERE
 *    key = ?" per lookup and copying the value into a malloc'd buffer.
 *    The cache's gets also record their recency in memory; it is written
 *    when the cache closes (lds_runtime_free, timed separately). Persistent
 *    runs make gets / 4 lookups.
 *
 * Every variant runs `rounds` times, interleaved; the summary gives medians.
 */
#include "bench_util.h"
#include <loadstate.h>
#include <sqlite3.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEY_LEN 16

static void die(const char *what, int rc) {
  fprintf(stderr, "cache: %s failed: %d (%s)\n", what, rc, rc < 0 ? lds_strerror(rc) : "");
  exit(1);
}

/* ---- the baseline hash map ---- */

typedef struct {
  const char *key; /* KEY_LEN bytes; NULL: empty slot */
  const unsigned char *value;
  size_t value_len;
} slot;

typedef struct {
  slot *slots;
  size_t mask;
} map;

static uint64_t fnv1a(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static void map_init(map *m, size_t keys) {
  size_t cap = 16;
  while (cap < keys * 2) cap <<= 1;
  m->slots = calloc(cap, sizeof *m->slots);
  if (!m->slots) die("calloc", 0);
  m->mask = cap - 1;
}

static void map_put(map *m, const char *key, const unsigned char *value, size_t len) {
  size_t i = fnv1a(key, KEY_LEN) & m->mask;
  while (m->slots[i].key && memcmp(m->slots[i].key, key, KEY_LEN) != 0) i = (i + 1) & m->mask;
  m->slots[i] = (slot){key, value, len};
}

static const slot *map_get(const map *m, const char *key) {
  size_t i = fnv1a(key, KEY_LEN) & m->mask;
  while (m->slots[i].key) {
    if (memcmp(m->slots[i].key, key, KEY_LEN) == 0) return &m->slots[i];
    i = (i + 1) & m->mask;
  }
  return NULL;
}

/* ---- the runs ---- */

typedef struct {
  size_t keys, value_len, gets;
  char *key_bytes;   /* keys * KEY_LEN */
  unsigned char *values; /* keys * value_len */
  uint32_t *order;   /* a permutation of the keys */
  lds_runtime *rt;
  lds_id memory, persistent;
  map baseline;
  sqlite3 *db;
  sqlite3_stmt *select;
  char path[256];
} bench;

static bench B;

static const char *key_of(size_t i) { return B.key_bytes + i * KEY_LEN; }

static volatile uint64_t sink;

static double run_memory(size_t gets) {
  uint64_t t0 = now_ns();
  for (size_t i = 0; i < gets; i++) {
    lds_cache_value v;
    int rc = lds_cache_get(B.rt, B.memory, key_of(B.order[i % B.keys]), KEY_LEN, &v);
    if (rc != 1) die("lds_cache_get (memory)", rc);
    sink += ((unsigned char *)v.value)[0];
    lds_cache_value_clear(&v);
  }
  return (double)gets / ((double)(now_ns() - t0) / 1e9);
}

static double run_map(size_t gets) {
  uint64_t t0 = now_ns();
  for (size_t i = 0; i < gets; i++) {
    const slot *s = map_get(&B.baseline, key_of(B.order[i % B.keys]));
    if (!s) die("map_get", 0);
    unsigned char *copy = malloc(s->value_len ? s->value_len : 1);
    memcpy(copy, s->value, s->value_len);
    sink += copy[0];
    free(copy);
  }
  return (double)gets / ((double)(now_ns() - t0) / 1e9);
}

static double run_persistent(size_t gets) {
  uint64_t t0 = now_ns();
  for (size_t i = 0; i < gets; i++) {
    lds_cache_value v;
    int rc = lds_cache_get(B.rt, B.persistent, key_of(B.order[i % B.keys]), KEY_LEN, &v);
    if (rc != 1) die("lds_cache_get (persistent)", rc);
    sink += ((unsigned char *)v.value)[0];
    lds_cache_value_clear(&v);
  }
  return (double)gets / ((double)(now_ns() - t0) / 1e9);
}

static double run_select(size_t gets) {
  uint64_t t0 = now_ns();
  for (size_t i = 0; i < gets; i++) {
    sqlite3_bind_blob(B.select, 1, key_of(B.order[i % B.keys]), KEY_LEN, SQLITE_STATIC);
    if (sqlite3_step(B.select) != SQLITE_ROW) die("sqlite3_step", 0);
    const void *p = sqlite3_column_blob(B.select, 0);
    size_t n = (size_t)sqlite3_column_bytes(B.select, 0);
    unsigned char *copy = malloc(n ? n : 1);
    memcpy(copy, p, n);
    sink += copy[0];
    free(copy);
    sqlite3_reset(B.select);
  }
  return (double)gets / ((double)(now_ns() - t0) / 1e9);
}


static void setup(void) {
  B.key_bytes = malloc(B.keys * KEY_LEN + 1);
  B.values = malloc(B.keys * B.value_len + 1);
  B.order = malloc(B.keys * sizeof *B.order);
  if (!B.key_bytes || !B.values || !B.order) die("malloc", 0);
  char tmp[32];
  for (size_t i = 0; i < B.keys; i++) {
    snprintf(tmp, sizeof tmp, "key:%012zu", i);
    memcpy(B.key_bytes + i * KEY_LEN, tmp, KEY_LEN);
    for (size_t j = 0; j < B.value_len; j++) B.values[i * B.value_len + j] = (unsigned char)(i + j);
    B.order[i] = (uint32_t)i;
  }
  srand(42);
  for (size_t i = B.keys - 1; i > 0; i--) {
    size_t j = (size_t)rand() % (i + 1);
    uint32_t t = B.order[i];
    B.order[i] = B.order[j];
    B.order[j] = t;
  }

  int rc = lds_runtime_new(NULL, &B.rt);
  if (rc) die("lds_runtime_new", rc);
  lds_memory_cache_options mo = LDS_MEMORY_CACHE_OPTIONS_INIT;
  mo.name = "bench";
  mo.max_entries = B.keys;
  mo.max_bytes = (uint64_t)B.keys * (KEY_LEN + B.value_len);
  if ((rc = lds_memory_cache_new(B.rt, &mo, &B.memory))) die("lds_memory_cache_new", rc);
  map_init(&B.baseline, B.keys);
  for (size_t i = 0; i < B.keys; i++) {
    const unsigned char *v = B.values + i * B.value_len;
    if ((rc = lds_cache_put(B.rt, B.memory, key_of(i), KEY_LEN, v, B.value_len))) die("lds_cache_put", rc);
    map_put(&B.baseline, key_of(i), v, B.value_len);
  }

  char dir[] = "/tmp/lds-bench-cache-XXXXXX";
  if (!mkdtemp(dir)) die("mkdtemp", 0);
  snprintf(B.path, sizeof B.path, "%s/cache.db", dir);
  lds_persistent_cache_options po = LDS_PERSISTENT_CACHE_OPTIONS_INIT;
  po.path = B.path;
  po.max_bytes = (uint64_t)B.keys * (KEY_LEN + B.value_len);
  if ((rc = lds_persistent_cache_new(B.rt, &po, &B.persistent))) die("lds_persistent_cache_new", rc);
  uint64_t t0 = now_ns();
  for (size_t i = 0; i < B.keys; i++) {
    rc = lds_cache_put(B.rt, B.persistent, key_of(i), KEY_LEN, B.values + i * B.value_len, B.value_len);
    if (rc) die("lds_cache_put (persistent)", rc);
  }
  double put_s = (double)(now_ns() - t0) / 1e9;
  printf("persistent puts: %zu in %.2f s = %.0f puts/s (one transaction each, WAL, synchronous=NORMAL)\n\n",
         B.keys, put_s, (double)B.keys / put_s);

  if (sqlite3_open_v2(B.path, &B.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) die("sqlite3_open_v2", 0);
  /* The page cache the library gives its own connection. */
  if (sqlite3_exec(B.db, "PRAGMA cache_size = -32768", NULL, NULL, NULL) != SQLITE_OK) die("cache_size", 0);
  if (sqlite3_prepare_v2(B.db, "SELECT value FROM entries WHERE key = ?1", -1, &B.select, NULL) != SQLITE_OK)
    die("sqlite3_prepare_v2", 0);
}

static void teardown(void) {
  sqlite3_finalize(B.select);
  sqlite3_close(B.db);
  uint64_t t0 = now_ns();
  int rc = lds_runtime_free(B.rt);
  if (rc) die("lds_runtime_free", rc);
  printf("  lds_runtime_free: %.3f s (closes the persistent cache, writing the recency its gets recorded)\n",
         (double)(now_ns() - t0) / 1e9);
  char tmp[300];
  const char *suffixes[] = {"", "-wal", "-shm"};
  for (int i = 0; i < 3; i++) {
    snprintf(tmp, sizeof tmp, "%s%s", B.path, suffixes[i]);
    unlink(tmp);
  }
  *strrchr(B.path, '/') = 0;
  rmdir(B.path);
}

int main(int argc, char **argv) {
  long keys = argc > 1 ? atol(argv[1]) : 100000;
  long value_len = argc > 2 ? atol(argv[2]) : 100;
  long gets = argc > 3 ? atol(argv[3]) : 2000000;
  long rounds = argc > 4 ? atol(argv[4]) : 3;
  if (keys < 1 || keys > 100000000 || value_len < 1 || gets < 4 || rounds < 1 || rounds > 99) {
    fprintf(stderr, "usage: %s [keys] [value_bytes] [gets] [rounds]\n", argv[0]);
    return 2;
  }
  B.keys = (size_t)keys;
  B.value_len = (size_t)value_len;
  B.gets = (size_t)gets;

  printf("# command: make bench-cache BENCH_CACHE_ARGS=\"%ld %ld %ld %ld\"   (runs: build/cache %ld %ld %ld %ld)\n",
         keys, value_len, gets, rounds, keys, value_len, gets, rounds);
  print_machine("SQLite", sqlite3_libversion());
  printf("# %ld keys of %d bytes, values of %ld bytes, every get a hit, keys in a fixed random order;\n"
         "# memory runs make %ld gets, persistent runs %ld.\n\n",
         keys, KEY_LEN, value_len, gets, gets / 4);
  setup();

  double mem[99], base[99], pers[99], sel[99];
  printf("%-22s %6s %14s\n", "run", "round", "gets/s");
  for (long r = 0; r < rounds; r++) {
    base[r] = run_map(B.gets);
    printf("%-22s %6ld %14.0f\n", "hash map baseline", r + 1, base[r]);
    mem[r] = run_memory(B.gets);
    printf("%-22s %6ld %14.0f\n", "memory cache", r + 1, mem[r]);
    sel[r] = run_select(B.gets / 4);
    printf("%-22s %6ld %14.0f\n", "SQLite SELECT baseline", r + 1, sel[r]);
    pers[r] = run_persistent(B.gets / 4);
    printf("%-22s %6ld %14.0f\n", "persistent cache", r + 1, pers[r]);
  }
  lds_cache_statistics st;
  int rc = lds_cache_stats(B.rt, B.persistent, &st);
  if (rc) die("lds_cache_stats", rc);
  if (st.misses != 0 || st.evictions != 0 || st.entries != B.keys) die("persistent cache contents", 0);

  double m = median(mem, (int)rounds), b = median(base, (int)rounds);
  double p = median(pers, (int)rounds), s = median(sel, (int)rounds);
  printf("\nmedian of %ld rounds:\n", rounds);
  printf("  memory cache      %12.0f hits/s  (%.3f us/get)   target >= 2000000: %s\n", m, 1e6 / m,
         m >= 2e6 ? "met" : "MISSED");
  printf("  hash map baseline %12.0f hits/s  (%.3f us/get)   baseline/memory cache: %.1fx\n", b, 1e6 / b, b / m);
  printf("  persistent cache  %12.0f hits/s  (%.3f us/get)   target >= 100000: %s\n", p, 1e6 / p,
         p >= 1e5 ? "met" : "MISSED");
  printf("  SQLite baseline   %12.0f hits/s  (%.3f us/get)   baseline/persistent cache: %.1fx\n", s, 1e6 / s, s / p);
  teardown();
  return sink == 42 ? 3 : 0;
}
