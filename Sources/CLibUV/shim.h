/* libuv and the few Linux calls the runtime needs, for Swift. */
#include <uv.h>
#include <sys/eventfd.h>
#include <pthread.h>
