/* test_cache_get_many.c — lds_cache_get_many on memory and persistent
 * caches: a batch that mixes hits, misses, expired entries and bad keys,
 * the count bound, NULL pointers, and every whole-call code. (The Redis
 * cache's batches are in Tests/redis/test_redis.c.) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* Waits until the wall clock reads at least ms (the entries' time to
 * live is measured on it). */
static void wait_until_wall_ms(uint64_t ms) {
  struct timespec at = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000};
  while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL) == EINTR) {
  }
}

/* A memory cache (persistent 0) or a persistent cache in a new file,
 * both with a time to live of ttl_ms. */
static lds_id new_cache(lds_runtime *rt, int persistent, uint64_t ttl_ms, char *path) {
  lds_id cache = 0;
  if (!persistent) {
    lds_memory_cache_options mo = LDS_MEMORY_CACHE_OPTIONS_INIT;
    mo.ttl_ms = ttl_ms;
    CHECK_RC(lds_memory_cache_new(rt, &mo, &cache), LDS_OK);
    return cache;
  }
  int fd = mkstemp(path);
  if (fd < 0) return 0;
  close(fd);
  lds_persistent_cache_options po = LDS_PERSISTENT_CACHE_OPTIONS_INIT;
  po.path = path;
  po.flags = LDS_CACHE_REPLACE_DAMAGED;
  po.ttl_ms = ttl_ms;
  CHECK_RC(lds_persistent_cache_new(rt, &po, &cache), LDS_OK);
  return cache;
}

/* One batch: a hit, a miss, an expired entry, a NULL key with a length,
 * a key over LDS_VALUE_MAX, an empty key holding an empty value, and the
 * first key again. */
static void mixed_batch(int persistent) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  char path[] = "/tmp/lds-get-many-XXXXXX";
  uint64_t ttl = test_slow() ? 3000 : 300;
  lds_id cache = new_cache(rt, persistent, ttl, path);
  REQUIRE(cache != 0);
  REQUIRE_RC(lds_cache_put(rt, cache, "old", 3, "gone", 4), LDS_OK);
  /* Past the old entry's expiry, then the live ones are put. */
  wait_until_wall_ms(wall_ms() + ttl + 1);
  uint64_t before = wall_ms();
  REQUIRE_RC(lds_cache_put(rt, cache, "a", 1, "alpha", 5), LDS_OK);
  REQUIRE_RC(lds_cache_put(rt, cache, "", 0, NULL, 0), LDS_OK);
  const void *keys[] = {"a", "missing", "old", NULL, "big", "", "a"};
  size_t lens[] = {1, 7, 3, 1, (size_t)LDS_VALUE_MAX + 1, 0, 1};
  enum { N = sizeof lens / sizeof lens[0] };
  lds_cache_value out[N];
  int results[N];
  memset(out, 0xAB, sizeof out);
  memset(results, 0x7F, sizeof results);
  CHECK_RC(lds_cache_get_many(rt, cache, N, keys, lens, out, results), 3);
  int want[N] = {1, 0, 0, LDS_EINVAL, LDS_ETOOBIG, 1, 1};
  for (int i = 0; i < N; i++) {
    if (results[i] != want[i]) check_fail(__FILE__, __LINE__, "results[%d] = %d, expected %d", i, results[i], want[i]);
    if (results[i] == 1) continue;
    CHECK(out[i].value == NULL);
    CHECK_EQ(out[i].value_len, 0);
    CHECK_EQ(out[i].stored_at_ms, 0);
  }
  CHECK_BYTES(out[0].value, out[0].value_len, "alpha");
  CHECK_OP(out[0].stored_at_ms, >=, before);
  CHECK_OP(out[0].expires_at_ms, >=, out[0].stored_at_ms + ttl);
  CHECK_EQ(out[0].stale, 0);
  CHECK(out[5].value != NULL);
  CHECK_EQ(out[5].value_len, 0);
  CHECK_BYTES(out[6].value, out[6].value_len, "alpha");
  CHECK(out[0].value != out[6].value); /* each hit is its own copy */
  for (int i = 0; i < N; i++) lds_cache_value_clear(&out[i]);
  /* Counted per key, as lds_cache_get counts; bad keys are not counted.
   * The expired entry was dropped. */
  lds_cache_statistics st;
  if (CHECK_RC(lds_cache_stats(rt, cache, &st), LDS_OK)) {
    CHECK_EQ(st.hits, 3);
    CHECK_EQ(st.misses, 2);
    CHECK_EQ(st.expirations, 1);
    CHECK_EQ(st.entries, 2);
  }
  lds_cache_value v;
  CHECK_RC(lds_cache_get(rt, cache, "old", 3, &v), 0);
  rt_free(rt);
  if (persistent) unlink(path);
}

TEST(test_cache_get_many_memory_mixes_hits_misses_expired_and_bad_keys) { mixed_batch(0); }

TEST(test_cache_get_many_persistent_mixes_hits_misses_expired_and_bad_keys) { mixed_batch(1); }

/* A hit makes its entry the most recently used, as lds_cache_get does:
 * the next eviction takes another one. */
TEST(test_cache_get_many_hit_is_most_recently_used) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_memory_cache_options mo = LDS_MEMORY_CACHE_OPTIONS_INIT;
  mo.max_entries = 2;
  lds_id cache;
  REQUIRE_RC(lds_memory_cache_new(rt, &mo, &cache), LDS_OK);
  REQUIRE_RC(lds_cache_put(rt, cache, "first", 5, "1", 1), LDS_OK);
  REQUIRE_RC(lds_cache_put(rt, cache, "second", 6, "2", 1), LDS_OK);
  const void *keys[] = {"first"};
  size_t lens[] = {5};
  lds_cache_value out[1];
  int results[1];
  CHECK_RC(lds_cache_get_many(rt, cache, 1, keys, lens, out, results), 1);
  lds_cache_value_clear(&out[0]);
  REQUIRE_RC(lds_cache_put(rt, cache, "third", 5, "3", 1), LDS_OK);
  lds_cache_value v;
  CHECK_RC(lds_cache_get(rt, cache, "second", 6, &v), 0);
  if (CHECK_RC(lds_cache_get(rt, cache, "first", 5, &v), 1)) lds_cache_value_clear(&v);
  rt_free(rt);
}

/* LDS_CACHE_GET_MANY_MAX keys in one call; one more is LDS_ETOOBIG, and
 * leaves both arrays as they were. */
TEST(test_cache_get_many_count_bound) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_id cache;
  REQUIRE_RC(lds_memory_cache_new(rt, NULL, &cache), LDS_OK);
  enum { MAX = LDS_CACHE_GET_MANY_MAX };
  static char names[MAX + 1][16];
  static const void *keys[MAX + 1];
  static size_t lens[MAX + 1];
  static lds_cache_value out[MAX + 1];
  static int results[MAX + 1];
  for (int i = 0; i <= MAX; i++) {
    lens[i] = (size_t)snprintf(names[i], sizeof names[i], "key:%d", i);
    keys[i] = names[i];
    if (i % 2 == 0) REQUIRE_RC(lds_cache_put(rt, cache, names[i], lens[i], names[i], lens[i]), LDS_OK);
  }
  CHECK_RC(lds_cache_get_many(rt, cache, MAX, keys, lens, out, results), MAX / 2);
  for (int i = 0; i < MAX; i++) {
    if (results[i] != (i % 2 == 0)) check_fail(__FILE__, __LINE__, "results[%d] = %d", i, results[i]);
    if (results[i] == 1 && (out[i].value_len != lens[i] || memcmp(out[i].value, names[i], lens[i]) != 0))
      check_fail(__FILE__, __LINE__, "out[%d] is not its key's value", i);
    lds_cache_value_clear(&out[i]);
  }
  memset(out, 0xAB, sizeof out);
  memset(results, 0x7F, sizeof results);
  CHECK_RC(lds_cache_get_many(rt, cache, MAX + 1, keys, lens, out, results), LDS_ETOOBIG);
  CHECK_RC(lds_cache_get_many(rt, cache, (size_t)-1, keys, lens, out, results), LDS_ETOOBIG);
  CHECK_RC(lds_cache_get_many(rt, cache, (size_t)1 << 63, keys, lens, out, results), LDS_ETOOBIG);
  CHECK_EQ(results[0], 0x7F7F7F7F);
  CHECK_EQ(results[MAX], 0x7F7F7F7F);
  CHECK(out[0].value == (void *)(uintptr_t)0xABABABABABABABABull);
  lds_cache_statistics st;
  if (CHECK_RC(lds_cache_stats(rt, cache, &st), LDS_OK)) {
    CHECK_EQ(st.hits, MAX / 2);
    CHECK_EQ(st.misses, MAX / 2);
  }
  rt_free(rt);
}

/* Whole-call failures: every out[i] zeroed, every results[i] the code. */
static void check_failed(const lds_cache_value *out, const int *results, int n, int rc) {
  for (int i = 0; i < n; i++) {
    CHECK(out[i].value == NULL);
    CHECK_EQ(out[i].value_len, 0);
    CHECK_EQ(results[i], rc);
  }
}

TEST(test_cache_get_many_whole_call_codes) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_id cache, freed;
  REQUIRE_RC(lds_memory_cache_new(rt, NULL, &cache), LDS_OK);
  REQUIRE_RC(lds_memory_cache_new(rt, NULL, &freed), LDS_OK);
  REQUIRE_RC(lds_cache_put(rt, cache, "k", 1, "v", 1), LDS_OK);
  REQUIRE_RC(lds_cache_free(rt, freed), LDS_OK);
  const void *keys[] = {"k", "k"};
  size_t lens[] = {1, 1};
  lds_cache_value out[2];
  int results[2];

#define FAILS(call, rc)                                                     \
  do {                                                                      \
    memset(out, 0xAB, sizeof out);                                          \
    memset(results, 0x7F, sizeof results);                                  \
    CHECK_RC(call, rc);                                                     \
    check_failed(out, results, 2, rc);                                      \
  } while (0)

  FAILS(lds_cache_get_many(NULL, cache, 2, keys, lens, out, results), LDS_EINVAL);
  FAILS(lds_cache_get_many(rt, 424242, 2, keys, lens, out, results), LDS_ENOENT);
  FAILS(lds_cache_get_many(rt, freed, 2, keys, lens, out, results), LDS_ENOENT);
  FAILS(lds_cache_get_many(rt, 0, 2, keys, lens, out, results), LDS_ENOENT);
  /* A NULL array: the others are filled. */
  FAILS(lds_cache_get_many(rt, cache, 2, NULL, lens, out, results), LDS_EINVAL);
  FAILS(lds_cache_get_many(rt, cache, 2, keys, NULL, out, results), LDS_EINVAL);
  memset(results, 0x7F, sizeof results);
  CHECK_RC(lds_cache_get_many(rt, cache, 2, keys, lens, NULL, results), LDS_EINVAL);
  CHECK_EQ(results[0], LDS_EINVAL);
  memset(out, 0xAB, sizeof out);
  CHECK_RC(lds_cache_get_many(rt, cache, 2, keys, lens, out, NULL), LDS_EINVAL);
  CHECK(out[1].value == NULL);
  /* count 0: nothing is read or written, NULL arrays included. */
  CHECK_RC(lds_cache_get_many(rt, cache, 0, NULL, NULL, NULL, NULL), 0);
  CHECK_RC(lds_cache_get_many(rt, 424242, 0, NULL, NULL, NULL, NULL), LDS_ENOENT);
  CHECK_RC(lds_cache_get_many(NULL, cache, 0, NULL, NULL, NULL, NULL), LDS_EINVAL);
  lds_cache_statistics st;
  if (CHECK_RC(lds_cache_stats(rt, cache, &st), LDS_OK)) {
    CHECK_EQ(st.hits, 0);
    CHECK_EQ(st.misses, 0);
  }
  CHECK_RC(lds_cache_get_many(rt, cache, 2, keys, lens, out, results), 2);
  lds_cache_value_clear(&out[0]);
  lds_cache_value_clear(&out[1]);
  rt_free(rt);
  FAILS(lds_cache_get_many(rt, cache, 2, keys, lens, out, results), LDS_ECLOSED);
#undef FAILS
}

/* lds_cache_count counts what lds_cache_keys lists: live entries by
 * prefix, expired ones left out although lds_cache_stats still holds
 * them; a limit stops the count; counting is no use and no hit. */
static void count_like_keys(int persistent) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  char path[] = "/tmp/lds-count-XXXXXX";
  uint64_t ttl = test_slow() ? 3000 : 300;
  lds_id cache = new_cache(rt, persistent, ttl, path);
  REQUIRE(cache != 0);
  REQUIRE_RC(lds_cache_put(rt, cache, "user/old", 8, "v", 1), LDS_OK);
  wait_until_wall_ms(wall_ms() + ttl + 1);
  const char *live[] = {"user/1", "user/2", "item/1", ""};
  for (int i = 0; i < 4; i++) REQUIRE_RC(lds_cache_put(rt, cache, live[i], strlen(live[i]), "v", 1), LDS_OK);
  lds_cache_statistics stats;
  REQUIRE_RC(lds_cache_stats(rt, cache, &stats), LDS_OK);
  CHECK_EQ(stats.entries, 5); /* the expired entry is still held */
  uint64_t count = 99;
  CHECK_RC(lds_cache_count(rt, cache, NULL, 0, 0, &count), LDS_OK);
  CHECK_EQ(count, 4);
  lds_cache_key_list list;
  REQUIRE_RC(lds_cache_keys(rt, cache, NULL, 0, &list), LDS_OK);
  CHECK_EQ(list.count, count);
  lds_cache_key_list_clear(&list);
  CHECK_RC(lds_cache_count(rt, cache, "user/", 5, 0, &count), LDS_OK);
  CHECK_EQ(count, 2);
  CHECK_RC(lds_cache_count(rt, cache, NULL, 0, 1, &count), LDS_OK);
  CHECK_EQ(count, 1);
  CHECK_RC(lds_cache_count(rt, cache, NULL, 0, 3, &count), LDS_OK);
  CHECK_EQ(count, 3);
  CHECK_RC(lds_cache_count(rt, cache, "none/", 5, 0, &count), LDS_OK);
  CHECK_EQ(count, 0);
  lds_cache_statistics after;
  REQUIRE_RC(lds_cache_stats(rt, cache, &after), LDS_OK);
  CHECK_EQ(after.hits, stats.hits);
  CHECK_EQ(after.misses, stats.misses);
  CHECK_EQ(after.entries, 5);
  count = 99;
  CHECK_RC(lds_cache_count(rt, cache, NULL, 1, 0, &count), LDS_EINVAL);
  CHECK_EQ(count, 0);
  CHECK_RC(lds_cache_count(rt, cache, NULL, 0, 0, NULL), LDS_EINVAL);
  CHECK_RC(lds_cache_count(NULL, cache, NULL, 0, 0, &count), LDS_EINVAL);
  CHECK_RC(lds_cache_count(rt, 999999, NULL, 0, 0, &count), LDS_ENOENT);
  REQUIRE_RC(lds_cache_free(rt, cache), LDS_OK);
  CHECK_RC(lds_cache_count(rt, cache, NULL, 0, 0, &count), LDS_ENOENT);
  rt_free(rt);
  if (persistent) unlink(path);
}

TEST(test_cache_count_memory_counts_what_keys_lists) { count_like_keys(0); }

TEST(test_cache_count_persistent_counts_what_keys_lists) { count_like_keys(1); }
