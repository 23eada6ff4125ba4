/* test_cache.c — memory caches through the C API: many caches at once,
 * freed ids, and ids reused by later caches. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <stdlib.h>

#include "harness.h"

#define CACHES 80

static void check_value(lds_runtime *rt, lds_id cache, const char *want) {
  lds_cache_value v;
  CHECK_RC(lds_cache_get(rt, cache, "k", 1, &v), 1);
  CHECK_BYTES(v.value, v.value_len, want);
  lds_cache_value_clear(&v);
}

TEST(test_cache_many_memory_caches_keep_their_own_entries) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_id caches[CACHES + 10];
  char value[32];
  for (int i = 0; i < CACHES; i++) {
    REQUIRE_RC(lds_memory_cache_new(rt, NULL, &caches[i]), LDS_OK);
    snprintf(value, sizeof value, "value %d", i);
    REQUIRE_RC(lds_cache_put(rt, caches[i], "k", 1, value, strlen(value)), LDS_OK);
  }
  for (int i = 0; i < CACHES; i++) {
    snprintf(value, sizeof value, "value %d", i);
    check_value(rt, caches[i], value);
  }
  /* Freed caches are gone, whether they were found with or without the table. */
  lds_cache_value v;
  for (int i = 0; i < 10; i++) REQUIRE_RC(lds_cache_free(rt, caches[i]), LDS_OK);
  REQUIRE_RC(lds_cache_free(rt, caches[CACHES - 1]), LDS_OK);
  for (int i = 0; i < 10; i++) CHECK_RC(lds_cache_get(rt, caches[i], "k", 1, &v), LDS_ENOENT);
  CHECK_RC(lds_cache_get(rt, caches[CACHES - 1], "k", 1, &v), LDS_ENOENT);
  /* New caches take the freed places; each answers for itself only. */
  for (int i = CACHES; i < CACHES + 10; i++) {
    REQUIRE_RC(lds_memory_cache_new(rt, NULL, &caches[i]), LDS_OK);
    snprintf(value, sizeof value, "new %d", i);
    REQUIRE_RC(lds_cache_put(rt, caches[i], "k", 1, value, strlen(value)), LDS_OK);
  }
  for (int i = 10; i < CACHES + 10; i++) {
    if (i == CACHES - 1) continue;
    snprintf(value, sizeof value, i < CACHES ? "value %d" : "new %d", i);
    check_value(rt, caches[i], value);
  }
  for (int i = 0; i < 10; i++) CHECK_RC(lds_cache_get(rt, caches[i], "k", 1, &v), LDS_ENOENT);
  lds_cache_statistics st;
  REQUIRE_RC(lds_cache_stats(rt, caches[CACHES], &st), LDS_OK);
  CHECK_EQ(st.hits, 1);
  CHECK_EQ(st.entries, 1);
  rt_free(rt);
}

/* Past the first 1024 memory caches of a runtime (found without a lock),
 * caches are found through the handle table: nothing changes for callers. */
TEST(test_cache_caches_made_and_freed_by_the_thousand) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  char value[32];
  lds_id kept[3];
  int k = 0;
  for (int i = 0; i < 1500; i++) {
    lds_id c;
    REQUIRE_RC(lds_memory_cache_new(rt, NULL, &c), LDS_OK);
    snprintf(value, sizeof value, "value %d", i);
    REQUIRE_RC(lds_cache_put(rt, c, "k", 1, value, strlen(value)), LDS_OK);
    check_value(rt, c, value);
    if (i == 10 || i == 1030 || i == 1499) {
      kept[k++] = c;
    } else {
      REQUIRE_RC(lds_cache_free(rt, c), LDS_OK);
      lds_cache_value v;
      CHECK_RC(lds_cache_get(rt, c, "k", 1, &v), LDS_ENOENT);
    }
  }
  check_value(rt, kept[0], "value 10");
  check_value(rt, kept[1], "value 1030");
  check_value(rt, kept[2], "value 1499");
  rt_free(rt);
}

/* lds_loadable_refresh of a cell whose load was served by its cache
 * (LDS_POLICY_CACHE_FIRST) asks the loader, keeping the cached value
 * visible meanwhile, and stores the new value. */
TEST(test_cache_refresh_of_a_cache_first_load_asks_the_loader) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  lds_id cache;
  REQUIRE_RC(lds_memory_cache_new(f.rt, NULL, &cache), LDS_OK);
  REQUIRE_RC(lds_cache_put(f.rt, cache, "k", 1, "cached", 6), LDS_OK);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.cache = cache;
  o.cache_key = "k";
  o.cache_key_len = 1;
  o.cache_policy = LDS_POLICY_CACHE_FIRST;
  o.fresh_ms = 60000;
  REQUIRE_RC(fx_load(&f, "fresh", &o), LDS_OK);
  if (!REC_WAIT(&f.rec, 1)) return;
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADED, LDS_FLAG_FROM_CACHE);
  CHECK_EQ(f.h.starts, 0);
  REQUIRE_RC(lds_loadable_refresh(f.rt, f.cell), LDS_OK);
  if (REC_WAIT(&f.rec, 3)) {
    const lds_event *refreshing = rec_at(&f.rec, 1);
    CHECK_STATE(refreshing, 2, LDS_LOADED, LDS_FLAG_FROM_CACHE | LDS_FLAG_REFRESHING);
    CHECK_BYTES(refreshing->value, refreshing->value_len, "cached");
    CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADED, 0);
    CHECK_BYTES(rec_at(&f.rec, 2)->value, rec_at(&f.rec, 2)->value_len, "fresh");
  }
  CHECK_EQ(f.h.starts, 1);
  check_value(f.rt, cache, "fresh");
  fixture_finish(&f);
}

static void check_keys(const lds_cache_key_list *list, const char *const *want, size_t count) {
  CHECK_EQ(list->count, count);
  for (size_t i = 0; i < count && i < list->count; i++) CHECK_BYTES(list->keys[i], list->lengths[i], want[i]);
}

/* lds_cache_keys: a memory cache lists its live keys by recency, a
 * persistent one in byte order, both filtered by prefix; the list is a
 * copy that later changes leave alone, and listing is not a use. */
TEST(test_cache_keys_lists_live_keys_by_prefix) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_memory_cache_options mo = LDS_MEMORY_CACHE_OPTIONS_INIT;
  mo.max_entries = 3;
  lds_id memory;
  REQUIRE_RC(lds_memory_cache_new(rt, &mo, &memory), LDS_OK);
  char path[] = "/tmp/lds-keys-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  lds_persistent_cache_options po = LDS_PERSISTENT_CACHE_OPTIONS_INIT;
  po.path = path;
  po.flags = LDS_CACHE_REPLACE_DAMAGED;
  lds_id persistent;
  REQUIRE_RC(lds_persistent_cache_new(rt, &po, &persistent), LDS_OK);
  const char *keys[] = {"user/2", "user/1", "", "item/1"};
  for (int i = 0; i < 4; i++) {
    REQUIRE_RC(lds_cache_put(rt, memory, keys[i], strlen(keys[i]), "v", 1), LDS_OK);
    REQUIRE_RC(lds_cache_put(rt, persistent, keys[i], strlen(keys[i]), "v", 1), LDS_OK);
  }
  lds_cache_key_list list;
  REQUIRE_RC(lds_cache_keys(rt, memory, NULL, 0, &list), LDS_OK);
  check_keys(&list, (const char *[]){"item/1", "", "user/1"}, 3); /* "user/2" was evicted */
  lds_cache_key_list_clear(&list);
  CHECK_EQ(list.count, 0);
  CHECK(list.block == NULL);
  lds_cache_key_list_clear(&list);
  /* Listing leaves the order alone: the next eviction still takes "user/1". */
  REQUIRE_RC(lds_cache_keys(rt, memory, "user/", 5, &list), LDS_OK);
  check_keys(&list, (const char *[]){"user/1"}, 1);
  REQUIRE_RC(lds_cache_put(rt, memory, "item/2", 6, "v", 1), LDS_OK);
  check_keys(&list, (const char *[]){"user/1"}, 1);
  lds_cache_key_list_clear(&list);
  REQUIRE_RC(lds_cache_keys(rt, memory, "user/", 5, &list), LDS_OK);
  CHECK_EQ(list.count, 0);
  CHECK(list.keys == NULL && list.lengths == NULL);
  lds_cache_key_list_clear(&list);

  REQUIRE_RC(lds_cache_keys(rt, persistent, NULL, 0, &list), LDS_OK);
  check_keys(&list, (const char *[]){"", "item/1", "user/1", "user/2"}, 4);
  lds_cache_key_list_clear(&list);
  REQUIRE_RC(lds_cache_keys(rt, persistent, "user", 4, &list), LDS_OK);
  check_keys(&list, (const char *[]){"user/1", "user/2"}, 2);
  lds_cache_key_list_clear(&list);

  CHECK_RC(lds_cache_keys(rt, memory, NULL, 1, &list), LDS_EINVAL);
  CHECK_RC(lds_cache_keys(rt, memory, NULL, 0, NULL), LDS_EINVAL);
  CHECK_RC(lds_cache_keys(NULL, memory, NULL, 0, &list), LDS_EINVAL);
  CHECK_RC(lds_cache_keys(rt, 999999, NULL, 0, &list), LDS_ENOENT);
  lds_cache_key_list_clear(NULL);
  REQUIRE_RC(lds_cache_free(rt, persistent), LDS_OK);
  CHECK_RC(lds_cache_keys(rt, persistent, NULL, 0, &list), LDS_ENOENT);
  CHECK_EQ(list.count, 0);
  rt_free(rt);
  unlink(path);
}

/* lds_cache_read copies into the caller's buffer when the value fits and
 * gives its length either way; a miss gives 0 and a length of 0. */
TEST(test_cache_read_copies_into_the_callers_buffer) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_id cache;
  REQUIRE_RC(lds_memory_cache_new(rt, NULL, &cache), LDS_OK);
  REQUIRE_RC(lds_cache_put(rt, cache, "k", 1, "a value", 7), LDS_OK);
  REQUIRE_RC(lds_cache_put(rt, cache, "empty", 5, NULL, 0), LDS_OK);
  char buf[16];
  size_t len = 99;
  memset(buf, '#', sizeof buf);
  CHECK_RC(lds_cache_read(rt, cache, "k", 1, buf, sizeof buf, &len), 1);
  CHECK_EQ(len, 7);
  CHECK_BYTES(buf, len, "a value");
  memset(buf, '#', sizeof buf);
  CHECK_RC(lds_cache_read(rt, cache, "k", 1, buf, 6, &len), 1); /* too small: the length only */
  CHECK_EQ(len, 7);
  CHECK(buf[0] == '#');
  CHECK_RC(lds_cache_read(rt, cache, "k", 1, NULL, 0, &len), 1);
  CHECK_EQ(len, 7);
  CHECK_RC(lds_cache_read(rt, cache, "empty", 5, buf, sizeof buf, &len), 1);
  CHECK_EQ(len, 0);
  CHECK_RC(lds_cache_read(rt, cache, "missing", 7, buf, sizeof buf, &len), 0);
  CHECK_EQ(len, 0);
  lds_cache_statistics st;
  REQUIRE_RC(lds_cache_stats(rt, cache, &st), LDS_OK);
  CHECK_EQ(st.hits, 4);
  CHECK_EQ(st.misses, 1);
  CHECK_RC(lds_cache_read(rt, cache, "k", 1, NULL, 4, &len), LDS_EINVAL);
  CHECK_RC(lds_cache_read(rt, cache, "k", 1, buf, sizeof buf, NULL), LDS_EINVAL);
  CHECK_RC(lds_cache_read(rt, cache, NULL, 1, buf, sizeof buf, &len), LDS_EINVAL);
  CHECK_RC(lds_cache_read(rt, cache, "k", 1, buf, (size_t)-1, &len), LDS_EINVAL);
  CHECK_RC(lds_cache_read(NULL, cache, "k", 1, buf, sizeof buf, &len), LDS_EINVAL);
  CHECK_RC(lds_cache_read(rt, 424242, "k", 1, buf, sizeof buf, &len), LDS_ENOENT);
  rt_free(rt);
}
