/* The floor for oneside's ofi transport: the same operations on raw
 * libfabric, with the same endpoint oneside asks for (FI_EP_RDM, RMA and
 * atomics, FI_DELIVERY_COMPLETE, FI_AV_TABLE, the provider's mr_mode
 * followed), between two processes of this host.
 *
 *   cc -O2 -o ofi_floor bench/ofi_floor.c -lfabric
 *   ./ofi_floor 'tcp;ofi_rxm' [ITERS]
 *
 * The parent forks a target that only drives progress; both open their
 * own endpoint and trade (address, buffer base, key) over a socketpair.
 * The origin prints one line per figure, as examples/bench does:
 *   put_lat 8 <us> us      fi_write of 8 B, waited for (put + quiet)
 *   get_lat 8 <us> us      fi_read of 8 B, waited for
 *   fadd_lat 8 <us> us     fi_fetch_atomic FI_SUM on a uint64_t, waited for
 *   put_bw 65536 <MB/s> MB/s  windows of 64 writes of 64 KiB, each window waited for
 */
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUF_BYTES (4u << 20)
#define WINDOW 64
#define BW_BYTES 65536

#define CHECK_AS(what, call)                                                        \
  do {                                                                       \
    int rc_ = (int)(call);                                                   \
    if (rc_) {                                                               \
      fprintf(stderr, "ofi_floor: %s: %s (%d)\n", what, fi_strerror(-rc_), rc_); \
      exit(1);                                                               \
    }                                                                        \
  } while (0)
#define CHECK(call) CHECK_AS(#call, call)

struct side {
  struct fi_info *info;
  struct fid_fabric *fabric;
  struct fid_domain *domain;
  struct fid_av *av;
  struct fid_cq *cq;
  struct fid_ep *ep;
  struct fid_mr *mr;
  char *buf;
  uint64_t posted, completed;
};

struct card {
  char name[256];
  size_t name_len;
  uint64_t base, key;
};

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void progress(struct side *s) {
  struct fi_cq_entry entries[16];
  ssize_t n = fi_cq_read(s->cq, entries, 16);
  if (n > 0) {
    s->completed += (uint64_t)n;
  } else if (n == -FI_EAVAIL) {
    struct fi_cq_err_entry e = {0};
    fi_cq_readerr(s->cq, &e, 0);
    fprintf(stderr, "ofi_floor: operation failed: %s\n", fi_strerror(e.err));
    exit(1);
  }
}

static void wait_all(struct side *s) {
  while (s->completed < s->posted) progress(s);
}

/* Retries -FI_EAGAIN while driving progress, as oneside's post does. */
#define POST(s, call)                                                        \
  do {                                                                       \
    ssize_t posted_;                                                             \
    while ((posted_ = (call)) == -FI_EAGAIN) progress(s);                        \
    CHECK_AS(#call, posted_);                                                  \
    (s)->posted++;                                                           \
  } while (0)

static void open_side(struct side *s, const char *provider, struct card *own) {
  struct fi_info *hints = fi_allocinfo();
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_RMA | FI_ATOMIC;
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->domain_attr->av_type = FI_AV_TABLE;
  hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
  hints->fabric_attr->prov_name = strdup(provider);
  CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &s->info));
  fi_freeinfo(hints);
  CHECK(fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
  CHECK(fi_domain(s->fabric, s->info, &s->domain, NULL));
  struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
  CHECK(fi_av_open(s->domain, &av_attr, &s->av, NULL));
  struct fi_cq_attr cq_attr = {.size = 1024, .format = FI_CQ_FORMAT_CONTEXT};
  CHECK(fi_cq_open(s->domain, &cq_attr, &s->cq, NULL));
  CHECK(fi_endpoint(s->domain, s->info, &s->ep, NULL));
  CHECK(fi_ep_bind(s->ep, &s->av->fid, 0));
  CHECK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
  CHECK(fi_enable(s->ep));
  s->buf = aligned_alloc(4096, BUF_BYTES);
  memset(s->buf, 0, BUF_BYTES);
  uint64_t mr_mode = s->info->domain_attr->mr_mode;
  CHECK(fi_mr_reg(s->domain, s->buf, BUF_BYTES, FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE, 0,
                  1, 0, &s->mr, NULL));
  if (mr_mode & FI_MR_ENDPOINT) {
    CHECK(fi_mr_bind(s->mr, &s->ep->fid, 0));
    CHECK(fi_mr_enable(s->mr));
  }
  own->name_len = sizeof own->name;
  CHECK(fi_getname(&s->ep->fid, own->name, &own->name_len));
  own->base = (mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)s->buf : 0;
  own->key = fi_mr_key(s->mr);
}

static void trade(int sock, struct card *own, struct card *peer) {
  if (write(sock, own, sizeof *own) != sizeof *own || read(sock, peer, sizeof *peer) != sizeof *peer) {
    perror("ofi_floor: card exchange");
    exit(1);
  }
}

static void target(struct side *s, int sock) {
  char stop;
  struct timeval zero = {0};
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &zero, sizeof zero);
  /* The stop byte is looked for once every 4096 polls: a recv(2) on each
   * poll was most of a loop over shm, and made this floor slower than
   * Sandia OpenSHMEM there. */
  for (unsigned polls = 1;; polls++) {
    progress(s);
    if (polls % 4096 == 0 && recv(sock, &stop, 1, MSG_DONTWAIT) == 1) return;
  }
}

static void origin(struct side *s, fi_addr_t peer, struct card *pc, int iters) {
  char *local = s->buf + BUF_BYTES / 2;
  uint64_t operand = 1, result = 0;
  for (int round = 0; round < 2; round++) { /* the first round warms up */
    double t0 = now_us();
    for (int i = 0; i < iters; i++) {
      POST(s, fi_write(s->ep, local, 8, NULL, peer, pc->base, pc->key, NULL));
      wait_all(s);
    }
    double put = (now_us() - t0) / iters;
    t0 = now_us();
    for (int i = 0; i < iters; i++) {
      POST(s, fi_read(s->ep, local, 8, NULL, peer, pc->base, pc->key, NULL));
      wait_all(s);
    }
    double get = (now_us() - t0) / iters;
    t0 = now_us();
    for (int i = 0; i < iters; i++) {
      POST(s, fi_fetch_atomic(s->ep, &operand, 1, NULL, &result, NULL, peer, pc->base + 64, pc->key,
                              FI_UINT64, FI_SUM, NULL));
      wait_all(s);
    }
    double fadd = (now_us() - t0) / iters;
    int windows = iters / 10 + 1;
    t0 = now_us();
    for (int w = 0; w < windows; w++) {
      for (int i = 0; i < WINDOW; i++)
        POST(s, fi_write(s->ep, local, BW_BYTES, NULL, peer, pc->base + 4096 + (uint64_t)(i % 16) * BW_BYTES,
                         pc->key, NULL));
      wait_all(s);
    }
    double bw = (double)windows * WINDOW * BW_BYTES / (now_us() - t0);
    if (round == 1) {
      printf("put_lat 8 %.4f us\nget_lat 8 %.4f us\nfadd_lat 8 %.4f us\nput_bw %d %.4f MB/s\n", put, get, fadd,
             BW_BYTES, bw);
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: ofi_floor PROVIDER [ITERS]\n");
    return 2;
  }
  int iters = argc > 2 ? atoi(argv[2]) : 2000;
  int socks[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, socks)) {
    perror("socketpair");
    return 1;
  }
  pid_t child = fork();
  int sock = child ? socks[0] : socks[1];
  struct side s = {0};
  struct card own, pc;
  open_side(&s, argv[1], &own);
  trade(sock, &own, &pc);
  fi_addr_t peer;
  if (fi_av_insert(s.av, pc.name, 1, &peer, 0, NULL) != 1) {
    fprintf(stderr, "ofi_floor: fi_av_insert failed\n");
    return 1;
  }
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    target(&s, sock);
    return 0;
  }
  origin(&s, peer, &pc, iters);
  char stop = 1;
  if (write(sock, &stop, 1) != 1) perror("ofi_floor: stop");
  int status;
  waitpid(child, &status, 0);
  return 0;
}
