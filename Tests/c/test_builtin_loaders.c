/* test_builtin_loaders.c — the exec and file loaders against lds_runtime_free. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

/* Whether pid names no process at all (not even a zombie). */
static bool process_gone(pid_t pid) {
  return kill(pid, 0) == -1 && errno == ESRCH;
}

/* Loads an exec request for argv into the recorder's cell. */
static int load_exec(lds_runtime *rt, lds_id cell, lds_id loader, const char *const *argv) {
  lds_exec_request req = LDS_EXEC_REQUEST_INIT;
  req.argv = argv;
  void *buf = NULL;
  size_t len = 0;
  int rc = lds_exec_request_encode(&req, &buf, &len);
  if (rc != LDS_OK) return rc;
  rc = lds_loadable_load(rt, cell, loader, buf, len, NULL);
  lds_free(buf);
  return rc;
}

/* The pid a command printed as its first line, from the first partial value. */
static pid_t first_line_pid(recorder *rec) {
  pid_t pid = 0;
  harness_lock();
  for (size_t i = 0; i < rec->count && pid == 0; i++) {
    const lds_event *e = &rec->events[i]->ev;
    if (e->status == LDS_LOADED && (e->flags & LDS_FLAG_PARTIAL) && e->value_len > 0) {
      char text[32] = {0};
      memcpy(text, e->value, e->value_len < sizeof text - 1 ? e->value_len : sizeof text - 1);
      pid = (pid_t)atoi(text);
    }
  }
  harness_unlock();
  return pid;
}

static bool has_partial(recorder *rec) {
  for (size_t i = 0; i < rec->count; i++) {
    if (rec->events[i]->ev.flags & LDS_FLAG_PARTIAL) return true;
  }
  return false;
}

static bool has_cancelled(recorder *rec) {
  for (size_t i = 0; i < rec->count; i++) {
    if (rec->events[i]->ev.flags & LDS_FLAG_CANCELLED) return true;
  }
  return false;
}

/* A command that ignores SIGTERM, cancelled, then its runtime freed at
 * once (well inside the grace period): the free sends SIGKILL, waits for
 * the exit and reaps the command, so that by the time it returns the pid
 * names no process, not even a zombie. */
TEST(test_exec_runtime_free_during_kill_grace_kills_and_reaps) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  recorder rec;
  rec_init(&rec, rt);
  lds_id cell = cell_new(rt, &rec);
  lds_exec_options opts = LDS_EXEC_OPTIONS_INIT;
  opts.flags = LDS_EXEC_STREAM_LINES;
  opts.kill_grace_ms = 600000;
  lds_id loader = 0;
  REQUIRE_RC(lds_exec_loader_new(rt, &opts, &loader), LDS_OK);
  const char *const argv[] = {"sh", "-c", "trap '' TERM; echo $$; exec sleep 1000", NULL};
  REQUIRE_RC(load_exec(rt, cell, loader, argv), LDS_OK);
  REQUIRE(WAIT_FOR(has_partial(&rec)));
  pid_t pid = first_line_pid(&rec);
  REQUIRE(pid > 0);
  REQUIRE_RC(lds_loadable_cancel(rt, cell), LDS_OK);
  /* The cancel has run on the loop: SIGTERM sent, grace period started. */
  REQUIRE(WAIT_FOR(has_cancelled(&rec)));
  uint64_t start = wall_ms();
  rt_free(rt);
  uint64_t took = wall_ms() - start;
  harness_lock();
  rec.closed = true;
  harness_unlock();
  bool gone = process_gone(pid);
  CHECK(gone);
  /* The free is bounded: one second for lingering commands, plus slack. */
  CHECK_OP(took, <, test_slow() ? 20000 : 5000);
  if (!gone) kill(pid, SIGKILL);
  rec_destroy(&rec);
}

/* What a thread that frees a runtime reports. */
typedef struct free_call {
  lds_runtime *rt;
  bool done;  /* guarded by the harness lock */
  int rc;
} free_call;

static void *free_in_thread(void *arg) {
  free_call *call = arg;
  int rc = lds_runtime_free(call->rt);
  harness_lock();
  call->rc = rc;
  call->done = true;
  harness_notify();
  harness_unlock();
  return NULL;
}

/* A FIFO with no writer is refused at once (an open that would block is
 * not waited for): LDS_EINVAL in the loadstate domain. The runtime's free
 * then returns; it runs in a thread so that a regression fails here
 * instead of hanging the suite. */
/* A new runtime with a file loader, and a cell reporting to rec that loads path. */
static lds_runtime *start_file_load(const char *path, recorder *rec) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  rec_init(rec, rt);
  lds_id cell = cell_new(rt, rec);
  lds_id loader = 0;
  CHECK_RC(lds_file_loader_new(rt, NULL, &loader), LDS_OK);
  CHECK_RC(lds_loadable_load(rt, cell, loader, path, strlen(path), NULL), LDS_OK);
  return rt;
}

/* After a file load's runtime is freed: rec (no callback may come now),
 * the file and its directory go. */
static void end_file_load(recorder *rec, const char *path, const char *dir) {
  harness_lock();
  rec->closed = true;
  harness_unlock();
  rec_destroy(rec);
  unlink(path);
  rmdir(dir);
}

TEST(test_file_fifo_is_refused_and_free_returns) {
  char dir[] = "/tmp/loadstate-fifo-XXXXXX";
  REQUIRE(mkdtemp(dir) != NULL);
  char path[sizeof dir + 16];
  snprintf(path, sizeof path, "%s/fifo", dir);
  REQUIRE(mkfifo(path, 0600) == 0);

  recorder rec;
  lds_runtime *rt = start_file_load(path, &rec);
  if (REC_WAIT(&rec, 2)) {
    const lds_event *e = rec_last(&rec);
    CHECK_EQ(e->status, LDS_ERROR);
    CHECK_EQ(e->error_domain, LDS_DOMAIN_LOADSTATE);
    CHECK_EQ(e->error_code, LDS_EINVAL);
    CHECK(e->error_message != NULL && strstr(e->error_message, "not a regular file") != NULL);
  }

  free_call call = {.rt = rt};
  pthread_t thread = thread_start(free_in_thread, &call);
  bool returned = WAIT_FOR(call.done);
  CHECK_EQ(call.rc, LDS_OK);
  /* Whatever happened, a worker stuck in open() is released by a writer. */
  int writer = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (writer >= 0) close(writer);
  if (returned) thread_join(thread);
  end_file_load(&rec, path, dir);
}

/* Text that is not UTF-8 is refused by the encoders, never repaired into
 * other text (a URL or an argument that was not asked for). */
TEST(test_encoders_refuse_text_that_is_not_utf8) {
  const char *bad = "http://127.0.0.1/caf\xe9";
  void *buf = NULL;
  size_t len = 0;
  lds_http_request http = LDS_HTTP_REQUEST_INIT;
  http.url = bad;
  CHECK_RC(lds_http_request_encode(&http, &buf, &len), LDS_EINVAL);
  CHECK(buf == NULL);
  http.url = "http://127.0.0.1/caf\xc3\xa9"; /* the same in UTF-8 */
  CHECK_RC(lds_http_request_encode(&http, &buf, &len), LDS_OK);
  lds_free(buf);
  buf = NULL;
  http.method = "G\xffT";
  CHECK_RC(lds_http_request_encode(&http, &buf, &len), LDS_EINVAL);
  http.method = NULL;
  const char *headers[1] = {"X-Name: \xff"};
  http.headers = headers;
  http.header_count = 1;
  CHECK_RC(lds_http_request_encode(&http, &buf, &len), LDS_EINVAL);

  lds_exec_request exec = LDS_EXEC_REQUEST_INIT;
  const char *argv[] = {"/bin/echo", "\xff\xfe", NULL};
  exec.argv = argv;
  CHECK_RC(lds_exec_request_encode(&exec, &buf, &len), LDS_EINVAL);
  const char *good[] = {"/bin/echo", "ok", NULL};
  exec.argv = good;
  const char *env[] = {"A=\xff", NULL};
  exec.env = env;
  CHECK_RC(lds_exec_request_encode(&exec, &buf, &len), LDS_EINVAL);
  exec.env = NULL;
  exec.cwd = "/tmp/\xff";
  CHECK_RC(lds_exec_request_encode(&exec, &buf, &len), LDS_EINVAL);
  exec.cwd = NULL;
  CHECK_RC(lds_exec_request_encode(&exec, &buf, &len), LDS_OK);
  lds_free(buf);
}

/* A path is bytes: a file whose name is not UTF-8 is opened by that name. */
TEST(test_file_loader_opens_a_path_that_is_not_utf8) {
  char dir[] = "/tmp/loadstate-bytes-XXXXXX";
  REQUIRE(mkdtemp(dir) != NULL);
  char path[sizeof dir + 16];
  snprintf(path, sizeof path, "%s/caf\xe9", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "latin-1 name", 12) == 12);
  close(fd);

  recorder rec;
  lds_runtime *rt = start_file_load(path, &rec);
  /* Progress events may come first: the load settles with LOADED. */
  if (WAIT_FOR(rec.count > 0 && rec.events[rec.count - 1]->ev.status != LDS_LOADING)) {
    const lds_event *e = rec_last(&rec);
    CHECK_EQ(e->status, LDS_LOADED);
    CHECK_BYTES(e->value, e->value_len, "latin-1 name");
  }
  CHECK_RC(lds_runtime_free(rt), LDS_OK);
  end_file_load(&rec, path, dir);
}
