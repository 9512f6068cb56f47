// Measures the two rates of the "cpu" cost-model target on this machine, one
// core as zb-run uses it: OpenBLAS sgemm throughput (GFLOP/s, square and
// transformer-shaped matrices) and memory bandwidth of a streaming
// a[i] = b[i] + c[i] (GB/s, 3 x 4 bytes per element, arrays >> cache).
// Build and run through cpu_roofline.sh. Prints the best of 5 repetitions.
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static double gemm(int m, int n, int k) {
  float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n),
        *c = malloc(sizeof(float) * m * n);
  for (long i = 0; i < (long)m * k; ++i) a[i] = (float)(i % 7) * 0.1f;
  for (long i = 0; i < (long)k * n; ++i) b[i] = (float)(i % 5) * 0.1f;
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k,
                b, n, 0.0f, c, n);
    double t = now() - t0;
    if (t < best) best = t;
  }
  free(a); free(b); free(c);
  return 2.0 * m * n * k / best / 1e9;
}

static double stream(long n) {
  float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n),
        *c = malloc(sizeof(float) * n);
  for (long i = 0; i < n; ++i) { a[i] = 0; b[i] = 1; c[i] = 2; }
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    double t0 = now();
    for (long i = 0; i < n; ++i) a[i] = b[i] + c[i];
    double t = now() - t0;
    if (t < best) best = t;
  }
  volatile float sink = a[n / 2];
  (void)sink;
  free(a); free(b); free(c);
  return 3.0 * 4 * n / best / 1e9;
}

int main(void) {
  openblas_set_num_threads(1);
  printf("| measurement | rate |\n|---|---|\n");
  printf("| sgemm 512x512x512 | %.1f GFLOP/s |\n", gemm(512, 512, 512));
  printf("| sgemm 1024x1024x1024 | %.1f GFLOP/s |\n", gemm(1024, 1024, 1024));
  printf("| sgemm 256x3072x1024 (QKV-shaped) | %.1f GFLOP/s |\n", gemm(256, 3072, 1024));
  printf("| stream add, 3 x 128 MB | %.1f GB/s |\n", stream(32L << 20));
  return 0;
}
