/* libcurl for Swift: typed wrappers over the variadic setopt calls. */
#include <curl/curl.h>

static inline CURLcode lds_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode lds_easy_setopt_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode lds_easy_setopt_str(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode lds_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode lds_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode lds_easy_setopt_write(CURL *h, size_t (*f)(char *, size_t, size_t, void *)) {
  return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, f);
}
static inline CURLcode lds_easy_setopt_header(CURL *h, size_t (*f)(char *, size_t, size_t, void *)) {
  return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, f);
}
/* Sockets opened and closed through the caller, with `open_data` and `close_data` as their client pointers. */
static inline CURLcode lds_easy_setopt_sockets(CURL *h, curl_socket_t (*open)(void *, curlsocktype, struct curl_sockaddr *),
                                               void *open_data, int (*close)(void *, curl_socket_t),
                                               void *close_data) {
  CURLcode rc = curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open);
  if (rc == CURLE_OK) rc = curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, open_data);
  if (rc == CURLE_OK) rc = curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, close);
  if (rc == CURLE_OK) rc = curl_easy_setopt(h, CURLOPT_CLOSESOCKETDATA, close_data);
  return rc;
}
/* CURLOPT_PREREQFUNCTION (libcurl 7.80.0 or later): called just before each request is sent. */
static inline CURLcode lds_easy_setopt_prereq(CURL *h, int (*f)(void *, char *, char *, int, int), void *data) {
  CURLcode rc = curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, f);
  if (rc == CURLE_OK) rc = curl_easy_setopt(h, CURLOPT_PREREQDATA, data);
  return rc;
}
static inline CURLcode lds_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode lds_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode lds_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }

static inline CURLMcode lds_multi_setopt_socket(CURLM *m, int (*f)(CURL *, curl_socket_t, int, void *, void *), void *data) {
  CURLMcode rc = curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, f);
  if (rc != CURLM_OK) return rc;
  return curl_multi_setopt(m, CURLMOPT_SOCKETDATA, data);
}
static inline CURLMcode lds_multi_setopt_timer(CURLM *m, int (*f)(CURLM *, long, void *), void *data) {
  CURLMcode rc = curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, f);
  if (rc != CURLM_OK) return rc;
  return curl_multi_setopt(m, CURLMOPT_TIMERDATA, data);
}
static inline CURLMcode lds_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
