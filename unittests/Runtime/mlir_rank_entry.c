/*===- mlir_rank_entry.c - zb_rank_main for mlir_rank.mlir ---------------===*
 *
 * What zb-emit-rank-entry generates: argv[i] points to the memref
 * descriptor of argument i, passed on to the step function's C interface.
 *
 *===----------------------------------------------------------------------===*/

void _mlir_ciface_step(void *w, void *gw, void *x, void *loss);

void zb_rank_main(void **argv) {
  _mlir_ciface_step(argv[0], argv[1], argv[2], argv[3]);
}
