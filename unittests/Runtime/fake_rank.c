/*===- fake_rank.c - Hand-written rank programs for testing zb-run -------===*
 *
 * Stand-ins for what zb-compile emits (docs/plan-json.md), so zb-run and the
 * runtime can be tested without the compiler. Each entry takes
 * `void **argv`, pointers to memref descriptors in the order of the plan's
 * `args`. The models are linear, so a test can predict every loss:
 *
 *  fake1 (1 rank, 1 stage): args (param w[3], param b[1], grad w, grad b,
 *    input x[M][mbs][3], loss): loss = sum over samples of (w . x + b),
 *    grad w = sum of x, grad b = number of samples.
 *  fake2 (2 ranks, 2 stages; GPipe order on rank 0):
 *    rank 0 args (param w0[3], grad w0, input x): a_j = sum over the samples
 *      of microbatch j of w0 . x, sent to rank 1; then receives g_j and
 *      accumulates grad w0 += g_j * sum of x.
 *    rank 1 args (param w1[1], grad w1, loss): loss += w1 * a_j,
 *      sends g_j = w1 back (zbrt_send_memref), grad w1 += a_j.
 *  fake2_rank1_bad_main receives 8 bytes where 4 are sent (size mismatch).
 *
 *===----------------------------------------------------------------------===*/

#include "zbrt/zbrt.h"

#include <stdint.h>

/* Descriptors for ranks 0, 1 and 3 (float data). */
typedef struct {
  float *allocated, *aligned;
  int64_t offset;
} Memref0;
typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} Memref1;
typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[3], strides[3];
} Memref3;

enum { F = 0, B = 1, W = 2 };

void fake1_main(void **argv) {
  Memref1 *w = argv[0], *b = argv[1], *gw = argv[2], *gb = argv[3];
  Memref3 *x = argv[4];
  Memref0 *loss = argv[5];
  int64_t numMb = x->sizes[0], mbs = x->sizes[1], d = x->sizes[2];
  for (int64_t j = 0; j < numMb; ++j) {
    zbrt_action_begin(F, 0, (int32_t)j);
    for (int64_t t = 0; t < mbs; ++t) {
      const float *xs =
          x->aligned + x->offset + j * x->strides[0] + t * x->strides[1];
      float dot = b->aligned[0];
      for (int64_t i = 0; i < d; ++i)
        dot += w->aligned[i] * xs[i * x->strides[2]];
      loss->aligned[0] += dot;
    }
    zbrt_action_end(F, 0, (int32_t)j);
    zbrt_action_begin(B, 0, (int32_t)j);
    zbrt_action_end(B, 0, (int32_t)j);
    zbrt_action_begin(W, 0, (int32_t)j);
    for (int64_t t = 0; t < mbs; ++t) {
      const float *xs = x->aligned + j * x->strides[0] + t * x->strides[1];
      for (int64_t i = 0; i < d; ++i)
        gw->aligned[i] += xs[i];
      gb->aligned[0] += 1.0f;
    }
    zbrt_action_end(W, 0, (int32_t)j);
  }
}

void fake2_rank0_main(void **argv) {
  Memref1 *w0 = argv[0], *gw0 = argv[1];
  Memref3 *x = argv[2];
  int64_t numMb = x->sizes[0], mbs = x->sizes[1], d = x->sizes[2];
  for (int64_t j = 0; j < numMb; ++j) {
    zbrt_action_begin(F, 0, (int32_t)j);
    float a = 0.0f;
    for (int64_t t = 0; t < mbs; ++t)
      for (int64_t i = 0; i < d; ++i)
        a += w0->aligned[i] *
             x->aligned[j * x->strides[0] + t * x->strides[1] + i];
    zbrt_send((int64_t)(intptr_t)&a, sizeof(float), 1,
              zbrt_tag(0, 0, (int32_t)j));
    zbrt_action_end(F, 0, (int32_t)j);
  }
  for (int64_t j = 0; j < numMb; ++j) {
    float g = 0.0f;
    zbrt_recv((int64_t)(intptr_t)&g, sizeof(float), 1,
              zbrt_tag(1, 1, (int32_t)j));
    zbrt_action_begin(B, 0, (int32_t)j);
    zbrt_action_end(B, 0, (int32_t)j);
    zbrt_action_begin(W, 0, (int32_t)j);
    for (int64_t t = 0; t < mbs; ++t)
      for (int64_t i = 0; i < d; ++i)
        gw0->aligned[i] +=
            g * x->aligned[j * x->strides[0] + t * x->strides[1] + i];
    zbrt_action_end(W, 0, (int32_t)j);
  }
}

static void fake2_rank1(void **argv, int64_t recvBytes) {
  Memref1 *w1 = argv[0], *gw1 = argv[1];
  Memref0 *loss = argv[2];
  /* The number of microbatches is not in rank 1's arguments: the fixture
   * plans use 2 (a compiled program knows it statically). */
  const int32_t numMb = 2;
  for (int32_t j = 0; j < numMb; ++j) {
    float a[2] = {0.0f, 0.0f};
    zbrt_recv((int64_t)(intptr_t)a, recvBytes, 0, zbrt_tag(0, 0, j));
    zbrt_action_begin(F, 1, j);
    loss->aligned[0] += w1->aligned[0] * a[0];
    zbrt_action_end(F, 1, j);
    zbrt_action_begin(B, 1, j);
    float g = w1->aligned[0];
    /* The memref form, as code from convert-zb-to-runtime calls it. */
    zbrt_send_memref(&g, &g, 0, 1, 1, 0, zbrt_tag(1, 1, j));
    zbrt_action_end(B, 1, j);
    zbrt_action_begin(W, 1, j);
    gw1->aligned[0] += a[0];
    zbrt_action_end(W, 1, j);
  }
}

void fake2_rank1_main(void **argv) { fake2_rank1(argv, sizeof(float)); }
void fake2_rank1_bad_main(void **argv) { fake2_rank1(argv, 2 * sizeof(float)); }

/* Rank 1 dies in the middle of a step while rank 0 waits for it: the job
 * must end (with a message naming the rank), not hang. */
#include <signal.h>
#include <unistd.h>
void fake2_rank1_segv_main(void **argv) {
  (void)argv;
  raise(SIGSEGV);
}
void fake2_rank1_stopped_main(void **argv) {
  (void)argv;
  kill(getpid(), SIGSTOP);
}
void fake2_rank1_killed_main(void **argv) {
  (void)argv;
  kill(getpid(), SIGKILL);
}
