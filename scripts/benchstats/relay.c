/*
 * The delay relay of scripts/bench's remote mode: a loopback TCP relay that makes a round trip
 * of 2 x DELAY between its clients and a target, as a path to a distant server would.
 *
 *   relay LISTEN_PORT TARGET_PORT DELAY_MS
 *
 * prints `listening PORT` once it accepts (LISTEN_PORT 0: a free port), then one
 * `accept UNIX_TIME` line per connection (scripts/bench keeps them: upstream connections
 * opened per round; benchstats.relay.accepts reads them).
 *
 * Each chunk read from one side is written to the other DELAY after it was read: chunks of one
 * direction leave in the order they came, and the delays of chunks in flight overlap (a chunk's
 * delay runs from its own arrival, never from the previous chunk's departure). The TCP handshake
 * pays a round trip too: the target is dialled DELAY after the accept (the SYN on its way), and a
 * client's first bytes reach it no sooner than 3 x DELAY after the accept (SYN, SYN-ACK, then the
 * data). An end of stream travels behind the data, DELAY late, like one.
 *
 * Why C and not Python (it was asyncio once): the relay stands for a network, whose delay does
 * not depend on how many packets cross it. An asyncio loop woke up to a millisecond late at
 * each hop (epoll's millisecond timeout, rounded up) and later still under load, so a proxy that
 * writes many small chunks paid more than one that writes few, and the direct path's median was
 * 4 ms over the round trip. Here the waits are nanosecond timeouts (epoll_pwait2) with a 1 us
 * timer slack, and one thread does nothing else.
 *
 * Bounded: a direction holds at most HIGH_WATER bytes (read, not yet written); past it the
 * relay stops reading that direction's source until it is under LOW_WATER. Bytes due but not
 * taken by a full socket stay counted until the socket takes them.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HIGH_WATER (4 * 1024 * 1024)
#define LOW_WATER (HIGH_WATER / 2)
#define READ_SIZE 65536
#define MAX_EVENTS 256

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void fail(const char *what) {
    perror(what);
    exit(1);
}

/* One chunk on its way; `len` 0 is the end of the stream. */
struct chunk {
    struct chunk *next;
    int64_t due;
    size_t len, written;
    unsigned char bytes[];
};

/* The chunks of one direction, oldest first. Due times never decrease (a chunk is never due
 * before the one ahead of it), so the queue is in order of arrival and of departure alike. */
struct line {
    struct chunk *head, *tail;
    size_t queued;        /* bytes read and not yet taken by the destination's socket */
    int64_t not_before;   /* the earliest time a chunk may leave */
    int eof_read;         /* the source ended: nothing more is read */
    int eof_sent;         /* the end went out (shutdown), or the destination is gone */
    int blocked;          /* the destination's socket is full: wait for EPOLLOUT */
};

struct conn;

/* One socket of a relayed connection; `in` is the line it reads into (towards the other side),
 * `out` the line it writes from. */
struct side {
    struct conn *conn;
    int fd;
    struct line *in, *out;
    uint32_t events;      /* what epoll watches now */
    int gone;             /* failed or hung up: out of epoll (drop_side) */
};

struct conn {
    struct conn *prev, *next;   /* the live connections; `next` alone links the closed ones */
    int closed;                 /* closed in this turn: freed once its events are handled */
    struct side client, target;
    struct line up, down;       /* client -> target, target -> client */
    int64_t dial_at;            /* when the target is dialled; 0 once it was */
    int connecting;             /* the target's connect is under way */
    int connected;
};

static int epoll_fd;
static int listen_fd;
static int target_port;
static int64_t delay_ns;
static struct conn *conns;
static struct conn *closed_conns;

static void set_nonblocking_nodelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Watches what the side needs now: reading while its line has room and its source has not
 * ended; writing while its outgoing line is blocked or its connect is under way. */
static void update_events(struct side *s) {
    if (s->fd < 0 || s->gone)
        return;
    uint32_t events = 0;
    if (!s->in->eof_read && s->in->queued < HIGH_WATER &&
        (s == &s->conn->client || s->conn->connected))
        events |= EPOLLIN;
    if (s->out->blocked || (s == &s->conn->target && s->conn->connecting))
        events |= EPOLLOUT;
    if (events == s->events)
        return;
    struct epoll_event ev = { .events = events, .data.ptr = s };
    if (epoll_ctl(epoll_fd, EPOLL_CTL_MOD, s->fd, &ev) < 0)
        fail("epoll_ctl");
    s->events = events;
}

static void add_fd(struct side *s) {
    struct epoll_event ev = { .events = 0, .data.ptr = s };
    s->events = 0;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, s->fd, &ev) < 0)
        fail("epoll_ctl");
}

static void push(struct line *l, const unsigned char *bytes, size_t len);
static void push_end(struct line *l, const unsigned char *none) { push(l, none, 0); }

static void clear_line(struct line *l) {
    while (l->head) {
        struct chunk *c = l->head;
        l->head = c->next;
        free(c);
    }
    l->tail = NULL;
    l->queued = 0;
}

/* Closes both sockets at once; the memory waits for the end of the turn, since events of the
 * same epoll batch may still name this connection. */
static void close_conn(struct conn *c) {
    if (c->closed)
        return;
    c->closed = 1;
    if (c->client.fd >= 0)
        close(c->client.fd);
    if (c->target.fd >= 0)
        close(c->target.fd);
    c->client.fd = c->target.fd = -1;
    clear_line(&c->up);
    clear_line(&c->down);
    if (c->prev)
        c->prev->next = c->next;
    else
        conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->next = closed_conns;
    closed_conns = c;
}

/* A socket that failed (reset) or hung up for good: nothing more is read from it or written to
 * it, and epoll stops reporting it (it would report the hang-up on every turn). Its end of stream
 * still travels to the other side, DELAY late. */
static void drop_side(struct side *s) {
    if (!s->in->eof_read) {
        static const unsigned char none[1];
        s->in->eof_read = 1;
        push_end(s->in, none);
    }
    clear_line(s->out);
    s->out->eof_sent = 1;
    s->out->blocked = 0;
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, s->fd, NULL);
    s->events = 0;
    s->gone = 1;
}

static void push(struct line *l, const unsigned char *bytes, size_t len) {
    struct chunk *c = malloc(sizeof *c + len);
    if (!c)
        fail("malloc");
    int64_t due = now_ns() + delay_ns;
    if (due < l->not_before)
        due = l->not_before;
    if (l->tail && due < l->tail->due)
        due = l->tail->due;
    c->next = NULL;
    c->due = due;
    c->len = len;
    c->written = 0;
    memcpy(c->bytes, bytes, len);
    if (l->tail)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
    l->queued += len;
}

/* Reads what the side's socket has into its line. */
static void read_side(struct side *s) {
    static unsigned char buffer[READ_SIZE];
    while (s->in->queued < HIGH_WATER && !s->in->eof_read) {
        ssize_t n = read(s->fd, buffer, sizeof buffer);
        if (n > 0) {
            push(s->in, buffer, (size_t)n);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        /* The end, or a reset: it travels behind the data. */
        push(s->in, buffer, 0);
        s->in->eof_read = 1;
    }
}

/* Writes the side's outgoing line as far as it is due and the socket takes it. Returns 0 when
 * the connection is to be closed. */
static int write_side(struct side *s, int64_t now) {
    struct line *l = s->out;
    l->blocked = 0;
    while (l->head && l->head->due <= now && !l->eof_sent) {
        struct chunk *c = l->head;
        if (c->len == 0) {
            l->eof_sent = 1;
            shutdown(s->fd, SHUT_WR);
        } else {
            ssize_t n = write(s->fd, c->bytes + c->written, c->len - c->written);
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR) {
                    l->blocked = 1;
                    break;
                }
                return 0; /* the destination is gone */
            }
            c->written += (size_t)n;
            l->queued -= (size_t)n;
            if (c->written < c->len) {
                l->blocked = 1;
                break;
            }
        }
        l->head = c->next;
        if (!l->head)
            l->tail = NULL;
        free(c);
    }
    return 1;
}

/* Moves a connection on: dials the target when it is time, writes what is due both ways,
 * closes it once both ends have gone out. Returns 0 when it was closed. */
static int advance(struct conn *c, int64_t now) {
    if (c->dial_at && now >= c->dial_at) {
        c->dial_at = 0;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            close_conn(c);
            return 0;
        }
        set_nonblocking_nodelay(fd);
        struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(target_port) };
        to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        c->target.fd = fd;
        add_fd(&c->target);
        if (connect(fd, (struct sockaddr *)&to, sizeof to) == 0) {
            c->connected = 1;
        } else if (errno == EINPROGRESS) {
            c->connecting = 1;
        } else {
            close_conn(c);
            return 0;
        }
    }
    if (c->connected && !write_side(&c->target, now)) {
        close_conn(c);
        return 0;
    }
    if (!write_side(&c->client, now)) {
        close_conn(c);
        return 0;
    }
    if (c->up.eof_sent && c->down.eof_sent) {
        close_conn(c);
        return 0;
    }
    update_events(&c->client);
    update_events(&c->target);
    return 1;
}

static void accept_all(void) {
    for (;;) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
                return;
            if (errno == EMFILE || errno == ENFILE)
                return; /* the backlog keeps it; a later turn tries again */
            fail("accept");
        }
        set_nonblocking_nodelay(fd);
        struct conn *c = calloc(1, sizeof *c);
        if (!c)
            fail("calloc");
        int64_t now = now_ns();
        c->client = (struct side){ .conn = c, .fd = fd, .in = &c->up, .out = &c->down };
        c->target = (struct side){ .conn = c, .fd = -1, .in = &c->down, .out = &c->up };
        c->up.not_before = now + 3 * delay_ns;
        c->dial_at = now + delay_ns;
        c->next = conns;
        if (conns)
            conns->prev = c;
        conns = c;
        add_fd(&c->client);
        update_events(&c->client);
        struct timespec wall;
        clock_gettime(CLOCK_REALTIME, &wall);
        printf("accept %lld.%06ld\n", (long long)wall.tv_sec, wall.tv_nsec / 1000);
        fflush(stdout);
    }
}

/* The earliest time anything is due: a dial, or the head of a line that can be written. */
static int64_t next_due(void) {
    int64_t next = INT64_MAX;
    for (struct conn *c = conns; c; c = c->next) {
        if (c->dial_at && c->dial_at < next)
            next = c->dial_at;
        if (c->up.head && !c->up.blocked && c->connected && c->up.head->due < next)
            next = c->up.head->due;
        if (c->down.head && !c->down.blocked && c->down.head->due < next)
            next = c->down.head->due;
    }
    return next;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: relay LISTEN_PORT TARGET_PORT DELAY_MS\n");
        return 2;
    }
    int listen_port = atoi(argv[1]);
    target_port = atoi(argv[2]);
    delay_ns = (int64_t)(strtod(argv[3], NULL) * 1e6);
    if (listen_port < 0 || listen_port > 65535 || target_port <= 0 || target_port > 65535 || delay_ns < 0) {
        fprintf(stderr, "relay: a port or the delay is out of range\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    /* Timers wake up within a microsecond of their time, not the default 50 us. */
    prctl(PR_SET_TIMERSLACK, 1000UL);

    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd < 0)
        fail("socket");
    int one = 1;
    setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in at = { .sin_family = AF_INET, .sin_port = htons(listen_port) };
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listen_fd, (struct sockaddr *)&at, sizeof at) < 0)
        fail("bind");
    if (listen(listen_fd, 1024) < 0)
        fail("listen");
    socklen_t length = sizeof at;
    getsockname(listen_fd, (struct sockaddr *)&at, &length);
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd < 0)
        fail("epoll_create1");
    struct epoll_event listening = { .events = EPOLLIN, .data.ptr = NULL };
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &listening) < 0)
        fail("epoll_ctl");
    printf("listening %d\n", ntohs(at.sin_port));
    fflush(stdout);

    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int64_t next = next_due(), now = now_ns();
        struct timespec wait = { 0, 0 }, *timeout = NULL;
        if (next != INT64_MAX) {
            int64_t left = next > now ? next - now : 0;
            wait.tv_sec = left / 1000000000;
            wait.tv_nsec = left % 1000000000;
            timeout = &wait;
        }
        int n = epoll_pwait2(epoll_fd, events, MAX_EVENTS, timeout, NULL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fail("epoll_pwait2");
        }
        for (int i = 0; i < n; i++) {
            struct side *s = events[i].data.ptr;
            if (!s) {
                accept_all();
                continue;
            }
            struct conn *c = s->conn;
            if (c->closed || s->gone)
                continue;
            uint32_t happened = events[i].events;
            if (s == &c->target && c->connecting && (happened & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
                int error = 0;
                socklen_t size = sizeof error;
                getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &error, &size);
                c->connecting = 0;
                if (error) {
                    close_conn(c);
                    continue;
                }
                c->connected = 1;
            }
            if ((happened & (EPOLLIN | EPOLLHUP | EPOLLERR)) && (s->events & EPOLLIN))
                read_side(s);
            if (happened & EPOLLERR)
                drop_side(s);
            else if ((happened & EPOLLHUP) && s->in->eof_read)
                drop_side(s);
            advance(c, now_ns());
        }
        /* Whatever came due while the batch ran, and the timeouts. */
        now = now_ns();
        for (struct conn *c = conns, *next_conn; c; c = next_conn) {
            next_conn = c->next;
            advance(c, now);
        }
        while (closed_conns) {
            struct conn *c = closed_conns;
            closed_conns = c->next;
            free(c);
        }
    }
}
