#pragma once
// The libc headers come first: libevent's event-config.h defines _GNU_SOURCE, and libc's
// feature macros must be settled the same way Swift's Glibc module settled them, or clang
// sees two different definitions of types such as fd_set.
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <pthread.h>
#include <event2/event.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <event2/util.h>
#include <event2/dns.h>
