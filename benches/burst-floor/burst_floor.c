/*
 * burst_floor.c: the kernel's floor for durable small adds at a fixed rate, with no
 * bookie in the way (docs/benchmarks.md, "The sync on a kernel worker ...": "What a burst
 * costs with no bookie").
 *
 * A client process sends, once a millisecond, 20 requests of 1,080 bytes (a 1 KiB v2 add's
 * size on the wire) spread over CONNS loopback connections, as bkbench's pacer does at
 * 20,000 adds/s. The server makes each batch durable and answers 28 bytes per request (a
 * v2 add response). "Durable" is what the journal does: one O_DIRECT pwrite of the batch,
 * rounded up to 4 KiB, into an already written region of FILE, then fdatasync. The server
 * keeps one batch in flight, like the journal's committer, and takes into the next batch
 * whatever arrived meanwhile.
 *
 * MODE 1: one thread does everything: epoll_wait, read, pwrite, fdatasync, send.
 * MODE 2: the bookie's shape: a network thread reads and hands the batch to a committer
 *         thread (eventfd), which writes and syncs and hands it back (eventfd); the
 *         network thread sends the responses.
 * MODE 3: the design left open in issue 15: one thread, and the sockets and the journal on
 *         one io_uring (liburing). A receive stays armed per connection; the batch's write
 *         and its fdatasync go in as a linked pair (the kernel runs the sync on an io-wq
 *         worker, a thread of this process); the responses go in as sends. One
 *         io_uring_enter submits everything queued and waits for the next completion.
 * MODE 4: as MODE 3, but the thread calls fdatasync itself once the ring reports the
 *         write done (what the journal's committer does today, to avoid the io-wq worker's
 *         two hand-offs per sync).
 *
 * Prints the server's CPU (getrusage, every thread) per request and per batch, and its
 * voluntary and involuntary context switches. No user-space work is done per request, so
 * the figures are the system calls, sleeps and wake-ups alone.
 *
 * Build and run: benches/burst-floor/run.sh (gcc -O2 -pthread, -luring: liburing-dev).
 * Usage: burst_floor MODE SECS FILE [CONNS=4]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define REQ 1080            /* bytes per request */
#define RESP 28             /* bytes per response */
#define BURST 20            /* requests per millisecond */
#define REGION (64L << 20)  /* written circularly, pre-filled: no unwritten extents */
#define MAXC 8
#define PORT 3299

static int data_fd, conns = 4, socks[MAXC], efd_work, efd_done;
static char *wbuf;
static long woff;

static void die(const char *what) { perror(what); exit(1); }

/* Where a batch of `bytes` goes: rounded up to 4 KiB, the region written circularly.
 * Returns the offset and sets *len. */
static long next_write(long bytes, long *len) {
    *len = (bytes + 4095) & ~4095L;
    if (woff + *len > REGION) woff = 0;
    long at = woff;
    woff += *len;
    return at;
}

/* One durable batch: O_DIRECT pwrite, then fdatasync. */
static void make_durable(long bytes) {
    long n, at = next_write(bytes, &n);
    if (pwrite(data_fd, wbuf, n, at) != n) die("pwrite");
    if (fdatasync(data_fd)) die("fdatasync");
}

/* MODE 2's committer: batch sizes come through `handed`, completions go back. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long handed_bytes;
static void *committer(void *unused) {
    (void)unused;
    for (;;) {
        uint64_t v;
        if (read(efd_work, &v, 8) != 8) continue;
        pthread_mutex_lock(&mu);
        long b = handed_bytes;
        handed_bytes = 0;
        pthread_mutex_unlock(&mu);
        if (b) make_durable(b);
        uint64_t one = 1;
        if (write(efd_done, &one, 8) != 8) die("eventfd write");
    }
    return NULL;
}

static char rbuf[1 << 20], resp[1 << 16];
static long partial[MAXC];
/* Counts `got` more bytes from connection k; returns the whole requests they complete. */
static long whole_requests(int k, long got) {
    partial[k] += got;
    long q = partial[k] / REQ;
    partial[k] -= q * REQ;
    return q;
}
/* Reads what socket k has; returns the whole requests completed. */
static long read_requests(int k) {
    long got = 0;
    for (;;) {
        ssize_t r = read(socks[k], rbuf, sizeof rbuf);
        if (r <= 0) break;
        got += r;
    }
    return whole_requests(k, got);
}
static void send_responses(int k, long q) {
    long left = q * RESP;
    while (left > 0) {
        long chunk = left > (long)sizeof resp ? (long)sizeof resp : left;
        ssize_t r = send(socks[k], resp, chunk, 0);
        if (r > 0) left -= r;
    }
}

/*
 * MODES 3 and 4: one thread, one ring. user_data says what completed: a connection's
 * receive (its index), the batch's write, its sync, or a send.
 */
enum { UD_WRITE = 100, UD_SYNC = 101, UD_SEND = 102 };
static char crbuf[MAXC][1 << 16];

static struct io_uring_sqe *sqe_of(struct io_uring *ring) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (!sqe) {
        io_uring_submit(ring);
        sqe = io_uring_get_sqe(ring);
    }
    if (!sqe) die("io_uring_get_sqe");
    return sqe;
}
static void arm_recv(struct io_uring *ring, int k) {
    struct io_uring_sqe *sqe = sqe_of(ring);
    io_uring_prep_recv(sqe, socks[k], crbuf[k], sizeof crbuf[k], 0);
    io_uring_sqe_set_data64(sqe, k);
}
static void queue_sends(struct io_uring *ring, long *in_flight) {
    for (int k = 0; k < conns; k++) {
        /* one send per connection per batch; the loopback socket takes it whole */
        long left = in_flight[k] * RESP;
        while (left > 0) {
            long chunk = left > (long)sizeof resp ? (long)sizeof resp : left;
            struct io_uring_sqe *sqe = sqe_of(ring);
            io_uring_prep_send(sqe, socks[k], resp, chunk, MSG_WAITALL);
            io_uring_sqe_set_data64(sqe, UD_SEND);
            left -= chunk;
        }
        in_flight[k] = 0;
    }
}

static void serve_uring(int mode, int secs, long *requests_out, long *batches_out,
                        struct rusage *r0, struct rusage *r1) {
    struct io_uring ring;
    if (io_uring_queue_init(256, &ring, 0)) die("io_uring_queue_init");
    for (int k = 0; k < conns; k++) arm_recv(&ring, k);
    long pending[MAXC] = {0}, in_flight[MAXC] = {0}, requests = 0, batches = 0, wbytes = 0;
    int busy = 0;
    struct timespec t0, now;
    getrusage(RUSAGE_SELF, r0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= secs) break;
        struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 100000000};
        struct io_uring_cqe *cqe;
        int rc = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &ts, NULL);
        if (rc < 0 && rc != -ETIME && rc != -EINTR) { errno = -rc; die("io_uring_submit_and_wait"); }
        unsigned head, seen = 0;
        int synced = 0, eof = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen++;
            uint64_t ud = io_uring_cqe_get_data64(cqe);
            if (ud < MAXC) {
                int k = (int)ud;
                if (cqe->res == 0) { eof = 1; continue; } /* the client is done */
                if (cqe->res < 0) { errno = -cqe->res; die("recv"); }
                long q = whole_requests(k, cqe->res);
                pending[k] += q;
                requests += q;
                arm_recv(&ring, k);
            } else if (ud == UD_WRITE) {
                if (cqe->res != wbytes) { errno = cqe->res < 0 ? -cqe->res : EIO; die("write"); }
                if (mode == 4) {
                    if (fdatasync(data_fd)) die("fdatasync");
                    synced = 1;
                }
            } else if (ud == UD_SYNC) {
                if (cqe->res < 0) { errno = -cqe->res; die("fsync"); }
                synced = 1;
            } else if (cqe->res < 0) {
                errno = -cqe->res;
                die("send");
            }
        }
        io_uring_cq_advance(&ring, seen);
        if (eof) break;
        if (synced) {
            queue_sends(&ring, in_flight);
            busy = 0;
        }
        long total = 0;
        for (int k = 0; k < conns; k++) total += pending[k];
        if (!total || busy) continue;
        batches++;
        busy = 1;
        for (int k = 0; k < conns; k++) { in_flight[k] = pending[k]; pending[k] = 0; }
        long at = next_write(total * REQ, &wbytes);
        struct io_uring_sqe *w = sqe_of(&ring);
        io_uring_prep_write(w, data_fd, wbuf, wbytes, at);
        io_uring_sqe_set_data64(w, UD_WRITE);
        if (mode == 3) {
            w->flags |= IOSQE_IO_LINK;
            struct io_uring_sqe *f = sqe_of(&ring);
            io_uring_prep_fsync(f, data_fd, IORING_FSYNC_DATASYNC);
            io_uring_sqe_set_data64(f, UD_SYNC);
        }
    }
    getrusage(RUSAGE_SELF, r1);
    *requests_out = requests;
    *batches_out = batches;
}

/* The server's CPU (every thread of the process, io-wq workers included) per request. */
static void report(int mode, long requests, long batches, struct rusage *r0, struct rusage *r1) {
    double us = (r1->ru_utime.tv_sec - r0->ru_utime.tv_sec + r1->ru_stime.tv_sec - r0->ru_stime.tv_sec) * 1e6
              + (r1->ru_utime.tv_usec - r0->ru_utime.tv_usec + r1->ru_stime.tv_usec - r0->ru_stime.tv_usec);
    double sys = (r1->ru_stime.tv_sec - r0->ru_stime.tv_sec) * 1e6 + (r1->ru_stime.tv_usec - r0->ru_stime.tv_usec);
    printf("mode %d, %d connections: %ld requests, %ld batches (%.1f each), server CPU %.2f us/request "
           "(system %.2f), %.1f us/batch, context switches %.2f + %.2f per batch\n",
           mode, conns, requests, batches, (double)requests / batches, us / requests, sys / requests,
           us / batches, (double)(r1->ru_nvcsw - r0->ru_nvcsw) / batches,
           (double)(r1->ru_nivcsw - r0->ru_nivcsw) / batches);
}

static void run_client(struct sockaddr_in *sa, int secs) {
    int one = 1, cs[MAXC];
    for (int k = 0; k < conns; k++) {
        cs[k] = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(cs[k], (void *)sa, sizeof *sa)) die("connect");
        setsockopt(cs[k], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fcntl(cs[k], F_SETFL, O_NONBLOCK);
    }
    static char req[BURST * REQ], rb[1 << 16];
    long per = BURST / conns, got = 0;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    for (int i = 0; i < secs * 1000; i++) {
        t.tv_nsec += 1000000;
        if (t.tv_nsec >= 1000000000) { t.tv_nsec -= 1000000000; t.tv_sec++; }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
        ssize_t r;
        for (int k = 0; k < conns; k++)
            while ((r = read(cs[k], rb, sizeof rb)) > 0) got += r;
        for (int k = 0; k < conns; k++)
            for (long s = 0; s < per * REQ;)
                if ((r = write(cs[k], req + s, per * REQ - s)) > 0) s += r;
    }
    _exit(0);
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: %s MODE SECS FILE [CONNS]\n", argv[0]); return 2; }
    int mode = atoi(argv[1]), secs = atoi(argv[2]), one = 1;
    if (argc > 4) conns = atoi(argv[4]);
    if (mode < 1 || mode > 4 || conns < 1 || conns > MAXC || BURST % conns) {
        fprintf(stderr, "MODE is 1 to 4, CONNS divides %d and is at most %d\n", BURST, MAXC);
        return 2;
    }
    data_fd = open(argv[3], O_RDWR | O_CREAT | O_DIRECT, 0644);
    if (data_fd < 0) die("open");
    if (posix_memalign((void **)&wbuf, 4096, 1 << 20)) die("posix_memalign");
    memset(wbuf, 7, 1 << 20);
    for (long o = 0; o < REGION; o += 1 << 20)
        if (pwrite(data_fd, wbuf, 1 << 20, o) != 1 << 20) die("prefill");
    if (fsync(data_fd)) die("fsync");

    int ls = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(PORT),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(ls, (void *)&sa, sizeof sa) || listen(ls, MAXC)) die("listen");
    if (fork() == 0) run_client(&sa, secs);

    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    for (int k = 0; k < conns; k++) {
        socks[k] = accept(ls, NULL, NULL);
        fcntl(socks[k], F_SETFL, O_NONBLOCK);
        setsockopt(socks[k], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ev.data.u32 = k;
        epoll_ctl(ep, EPOLL_CTL_ADD, socks[k], &ev);
    }
    if (mode >= 3) {
        /* the ring's receives, not epoll, read the sockets: make them blocking again */
        for (int k = 0; k < conns; k++) fcntl(socks[k], F_SETFL, 0);
        long requests, batches;
        struct rusage r0, r1;
        serve_uring(mode, secs, &requests, &batches, &r0, &r1);
        report(mode, requests, batches, &r0, &r1);
        return 0;
    }
    efd_work = eventfd(0, 0);
    efd_done = eventfd(0, EFD_NONBLOCK);
    if (mode == 2) {
        pthread_t th;
        pthread_create(&th, NULL, committer, NULL);
        ev.data.u32 = MAXC;
        epoll_ctl(ep, EPOLL_CTL_ADD, efd_done, &ev);
    }

    long pending[MAXC] = {0}, in_flight[MAXC] = {0}, requests = 0, batches = 0;
    int busy = 0;
    struct rusage r0, r1;
    struct timespec t0, now;
    getrusage(RUSAGE_SELF, &r0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= secs) break;
        struct epoll_event evs[MAXC + 1];
        int n = epoll_wait(ep, evs, MAXC + 1, 100), done = 0;
        for (int i = 0; i < n; i++) {
            int k = evs[i].data.u32;
            if (k < MAXC) {
                long q = read_requests(k);
                pending[k] += q;
                requests += q;
            } else {
                uint64_t v;
                if (read(efd_done, &v, 8) == 8) done = 1;
            }
        }
        if (done) {
            for (int k = 0; k < conns; k++)
                if (in_flight[k]) { send_responses(k, in_flight[k]); in_flight[k] = 0; }
            busy = 0;
        }
        long total = 0;
        for (int k = 0; k < conns; k++) total += pending[k];
        if (!total || busy) continue;
        batches++;
        if (mode == 1) {
            make_durable(total * REQ);
            for (int k = 0; k < conns; k++)
                if (pending[k]) { send_responses(k, pending[k]); pending[k] = 0; }
        } else {
            for (int k = 0; k < conns; k++) { in_flight[k] = pending[k]; pending[k] = 0; }
            busy = 1;
            pthread_mutex_lock(&mu);
            handed_bytes += total * REQ;
            pthread_mutex_unlock(&mu);
            uint64_t o = 1;
            if (write(efd_work, &o, 8) != 8) die("eventfd write");
        }
    }
    getrusage(RUSAGE_SELF, &r1);
    report(mode, requests, batches, &r0, &r1);
    return 0;
}
