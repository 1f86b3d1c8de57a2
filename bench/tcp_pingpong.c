/*
 * The floor for the TCP transport: a raw TCP ping-pong between two hosts,
 * measured like examples/bench (warm-up, median of 7 batches), printing
 *     <metric> <bytes> <value> <unit>
 *
 *   tcp_pingpong server PORT          (serves one client, then exits)
 *   tcp_pingpong client HOST PORT
 *
 * tcp_rtt:  8-byte message and 8-byte reply, TCP_NODELAY, blocking reads (the
 *           floor for a target whose thread must be woken: one computing)
 * tcp_rtt_poll: the same, both sides polling with MSG_DONTWAIT (the floor
 *           for a target that polls in a wait: compare with put + quiet)
 * tcp_bw:   windows of 64 × 1 MiB, then a 1-byte acknowledgement (compare with put bandwidth)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCHES 7
#define RTT_ITERS 20000
#define BW_SIZE (1 << 20)
#define WINDOW 64
#define BW_WINDOWS 8

static void die(const char *what) { perror(what); exit(1); }

static void full(int fd, void *buf, size_t len, int sending) {
    char *p = buf;
    while (len > 0) {
        ssize_t n = sending ? write(fd, p, len) : read(fd, p, len);
        if (n <= 0) die(sending ? "write" : "read");
        p += n;
        len -= (size_t)n;
    }
}

/* Reads len bytes by polling: a non-blocking recv in a loop. */
static void polled(int fd, void *buf, size_t len) {
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) die("recv");
        if (n < 0) continue;
        p += n;
        len -= (size_t)n;
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: tcp_pingpong server PORT | client HOST PORT\n"); return 2; }
    int server = !strcmp(argv[1], "server");
    int one = 1, fd;
    struct sockaddr_in addr = { .sin_family = AF_INET };
    char *buf = malloc(BW_SIZE);
    memset(buf, 7, BW_SIZE);
    if (server) {
        int lfd = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        addr.sin_port = htons((unsigned short)atoi(argv[2]));
        if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) || listen(lfd, 1)) die("listen");
        fd = accept(lfd, NULL, NULL);
        if (fd < 0) die("accept");
    } else {
        if (argc < 4) return 2;
        fd = socket(AF_INET, SOCK_STREAM, 0);
        addr.sin_port = htons((unsigned short)atoi(argv[3]));
        inet_pton(AF_INET, argv[2], &addr.sin_addr);
        int tries = 0;
        while (connect(fd, (struct sockaddr *)&addr, sizeof addr)) {
            if (++tries > 100) die("connect");
            usleep(50000);
            close(fd);
            fd = socket(AF_INET, SOCK_STREAM, 0);
        }
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    double samples[BATCHES];
    for (int b = -1; b < BATCHES; b++) {
        double start = now();
        for (int i = 0; i < RTT_ITERS; i++) {
            if (server) { full(fd, buf, 8, 0); full(fd, buf, 8, 1); }
            else { full(fd, buf, 8, 1); full(fd, buf, 8, 0); }
        }
        if (b >= 0) samples[b] = now() - start;
    }
    qsort(samples, BATCHES, sizeof(double), cmp);
    if (!server) printf("tcp_rtt 8 %.4f us\n", samples[BATCHES / 2] * 1e6 / RTT_ITERS);

    for (int b = -1; b < BATCHES; b++) {
        double start = now();
        for (int i = 0; i < RTT_ITERS; i++) {
            if (server) { polled(fd, buf, 8); full(fd, buf, 8, 1); }
            else { full(fd, buf, 8, 1); polled(fd, buf, 8); }
        }
        if (b >= 0) samples[b] = now() - start;
    }
    qsort(samples, BATCHES, sizeof(double), cmp);
    if (!server) printf("tcp_rtt_poll 8 %.4f us\n", samples[BATCHES / 2] * 1e6 / RTT_ITERS);

    for (int b = -1; b < BATCHES; b++) {
        double start = now();
        for (int w = 0; w < BW_WINDOWS; w++) {
            for (int j = 0; j < WINDOW; j++) full(fd, buf, BW_SIZE, !server);
            if (server) full(fd, buf, 1, 1); else full(fd, buf, 1, 0);
        }
        if (b >= 0) samples[b] = now() - start;
    }
    qsort(samples, BATCHES, sizeof(double), cmp);
    if (!server) printf("tcp_bw %d %.4f MB/s\n", BW_SIZE, (double)BW_SIZE * WINDOW * BW_WINDOWS / samples[BATCHES / 2] / 1e6);
    close(fd);
    return 0;
}
