/* test_names.c — names of loaders and cells: given at creation, checked
 * (LDS_NAME_MAX, UTF-8, no control characters), copied, and shown by the
 * metrics text in place of the loader's id, escaped. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static void noop_start(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)request, (void)len, (void)data;
  lds_job_succeed(rt, job, "v", 1);
}

static void noop_event(const lds_event *event, void *user_data) { (void)event, (void)user_data; }

static int named_loader(lds_runtime *rt, const char *name, lds_id *out) {
  lds_loader_options o = LDS_LOADER_OPTIONS_INIT;
  o.start = noop_start;
  o.name = name;
  return lds_loader_new_ex(rt, &o, out);
}

static int named_cell(lds_runtime *rt, const char *name, lds_id *out) {
  lds_cell_options o = LDS_CELL_OPTIONS_INIT;
  o.on_event = noop_event;
  o.name = name;
  return lds_loadable_new_ex(rt, &o, out);
}

/* The metrics text, malloc'd ("" when it cannot be had: the checks then fail). */
static char *metrics_text(lds_runtime *rt) {
  size_t len = 0;
  CHECK_RC(lds_runtime_metrics_text(rt, NULL, 0, &len), LDS_ETOOBIG);
  char *text = calloc(len + 4096, 1);
  if (text == NULL) abort();
  CHECK_RC(lds_runtime_metrics_text(rt, text, len + 4096, &len), LDS_OK);
  return text;
}

static size_t occurrences(const char *text, const char *what) {
  size_t n = 0;
  for (const char *p = strstr(text, what); p; p = strstr(p + 1, what)) n++;
  return n;
}

TEST(test_names_are_checked_at_creation) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_id id = 0;
  char longest[LDS_NAME_MAX + 2];
  memset(longest, 'n', sizeof longest);
  longest[LDS_NAME_MAX] = 0;
  CHECK_RC(named_loader(rt, longest, &id), LDS_OK);
  CHECK_RC(named_cell(rt, longest, &id), LDS_OK);
  longest[LDS_NAME_MAX] = 'n';
  longest[LDS_NAME_MAX + 1] = 0; /* one byte too many */
  id = 0;
  CHECK_RC(named_loader(rt, longest, &id), LDS_EINVAL);
  CHECK_RC(named_cell(rt, longest, &id), LDS_EINVAL);
  CHECK_EQ(id, 0);
  /* Not UTF-8; control characters. */
  const char *bad[] = { "\xff", "caf\xc3", "a\nb", "tab\there", "del\x7f", "c1\xc2\x85" };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_RC(named_loader(rt, bad[i], &id), LDS_EINVAL);
    CHECK_RC(named_cell(rt, bad[i], &id), LDS_EINVAL);
  }
  /* Multi-byte UTF-8, quotes and backslashes are names; so is "" (none). */
  CHECK_RC(named_loader(rt, "caf\xc3\xa9 \"q\" \\ \xe2\x9c\x93", &id), LDS_OK);
  CHECK_RC(named_loader(rt, "", &id), LDS_OK);
  CHECK_RC(named_cell(rt, NULL, &id), LDS_OK);

  lds_file_options fo = LDS_FILE_OPTIONS_INIT;
  fo.name = "a\rb";
  CHECK_RC(lds_file_loader_new(rt, &fo, &id), LDS_EINVAL);
  fo.name = "files";
  CHECK_RC(lds_file_loader_new(rt, &fo, &id), LDS_OK);
  lds_exec_options eo = LDS_EXEC_OPTIONS_INIT;
  eo.name = longest;
  CHECK_RC(lds_exec_loader_new(rt, &eo, &id), LDS_EINVAL);
  eo.name = "commands";
  CHECK_RC(lds_exec_loader_new(rt, &eo, &id), LDS_OK);
  lds_http_options ho = LDS_HTTP_OPTIONS_INIT;
  ho.name = "\xc0\x80"; /* an overlong NUL */
  CHECK_RC(lds_http_loader_new(rt, &ho, &id), LDS_EINVAL);
  ho.name = "api";
  CHECK_RC(lds_http_loader_new(rt, &ho, &id), LDS_OK);

  lds_cell_options co = LDS_CELL_OPTIONS_INIT;
  co.name = "p";
  CHECK_RC(lds_process_new_ex(rt, &co, &id), LDS_EINVAL); /* no on_event */
  co.on_event = noop_event;
  CHECK_RC(lds_process_new_ex(rt, &co, &id), LDS_OK);
  CHECK_RC(lds_process_free(rt, id), LDS_OK);
  CHECK_RC(lds_process_new_ex(NULL, &co, &id), LDS_EINVAL);
  CHECK_RC(lds_process_new_ex(rt, NULL, &id), LDS_EINVAL);
  CHECK_RC(lds_loadable_new_ex(rt, &co, NULL), LDS_EINVAL);
  co.size = (uint32_t)offsetof(lds_cell_options, name);
  CHECK_RC(lds_loadable_new_ex(rt, &co, &id), LDS_EINVAL);
  rt_free(rt);
}

/* A caller built against 0.4 has no name field: what follows its size is
 * never read (here, bytes that would be a wild pointer). */
TEST(test_names_not_read_past_an_older_size) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  unsigned char raw[sizeof(lds_loader_options)];
  memset(raw, 0xAB, sizeof raw);
  lds_loader_options o = LDS_LOADER_OPTIONS_INIT;
  o.start = noop_start;
  memcpy(raw, &o, offsetof(lds_loader_options, name));
  ((lds_loader_options *)raw)->size = (uint32_t)offsetof(lds_loader_options, name);
  lds_id id = 0;
  CHECK_RC(lds_loader_new_ex(rt, (lds_loader_options *)raw, &id), LDS_OK);
  char *text = metrics_text(rt);
  char want[64];
  snprintf(want, sizeof want, "loadstate_loads_started_total{loader=\"%llu\"} 0\n", (unsigned long long)id);
  CHECK(strstr(text, want) != NULL);
  free(text);

  unsigned char fraw[sizeof(lds_file_options)];
  memset(fraw, 0xAB, sizeof fraw);
  lds_file_options fo = LDS_FILE_OPTIONS_INIT;
  memcpy(fraw, &fo, offsetof(lds_file_options, name));
  ((lds_file_options *)fraw)->size = (uint32_t)offsetof(lds_file_options, name);
  CHECK_RC(lds_file_loader_new(rt, (lds_file_options *)fraw, &id), LDS_OK);
  rt_free(rt);
}

/* The loader label is the name (escaped), the id without one; loaders of
 * one name share one series, their loads added. */
TEST(test_names_label_loaders_in_the_metrics_text) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  recorder rec;
  rec_init(&rec, rt);
  lds_id cell = cell_new(rt, &rec);
  lds_id quoted, twin_a, twin_b, plain;
  REQUIRE_RC(named_loader(rt, "say \"hi\" \\ caf\xc3\xa9", &quoted), LDS_OK);
  REQUIRE_RC(named_loader(rt, "twin", &twin_a), LDS_OK);
  REQUIRE_RC(named_loader(rt, "twin", &twin_b), LDS_OK);
  REQUIRE_RC(named_loader(rt, NULL, &plain), LDS_OK);
  lds_id order[] = { quoted, twin_a, twin_b, twin_b, plain };
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
    REQUIRE_RC(lds_loadable_load(rt, cell, order[i], "r", 1, NULL), LDS_OK);
    REQUIRE(REC_WAIT(&rec, 2 * (i + 1)));
    CHECK_EQ(rec_last(&rec)->status, LDS_LOADED);
  }
  char *text = metrics_text(rt);
  CHECK(strstr(text, "\nloadstate_loads_started_total{loader=\"say \\\"hi\\\" \\\\ caf\xc3\xa9\"} 1\n") != NULL);
  CHECK(strstr(text, "\nloadstate_loads_started_total{loader=\"twin\"} 3\n") != NULL);
  CHECK_EQ(occurrences(text, "loadstate_loads_started_total{loader=\"twin\"}"), 1);
  CHECK(strstr(text, "\nloadstate_load_duration_seconds_count{loader=\"twin\"} 3\n") != NULL);
  char want[96];
  snprintf(want, sizeof want, "\nloadstate_loads_started_total{loader=\"%llu\"} 1\n", (unsigned long long)plain);
  CHECK(strstr(text, want) != NULL);
  snprintf(want, sizeof want, "loader=\"%llu\"", (unsigned long long)twin_a);
  CHECK(strstr(text, want) == NULL);
  free(text);

  /* A freed loader's loads move to "freed", the twin's stay. */
  REQUIRE_RC(lds_loader_free(rt, twin_b), LDS_OK);
  text = metrics_text(rt);
  CHECK(strstr(text, "\nloadstate_loads_started_total{loader=\"twin\"} 1\n") != NULL);
  CHECK(strstr(text, "\nloadstate_loads_started_total{loader=\"freed\"} 2\n") != NULL);
  free(text);
  CHECK_RC(lds_loadable_free(rt, cell), LDS_OK);
  rt_free(rt);
  rec_destroy(&rec);
}
