// The kernels of the CUDA smoke test (CudaSmoke.cpp): a fused bias + x*tanh(x)
// elementwise chain and a row sum, in upstream linalg, lowered at build time
// with the pipeline of docs/toolchain.md ("GPU compilation") to
// host code that calls the mgpu* functions of libzbrt (zbrt/Mgpu.h) with an
// embedded fatbin (sm_90 cubin and PTX: H100/H200; one fatbin holding several
// architectures is the CUDA target issue's work).
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @bias_gelu_rowsum(%x: memref<64x128xf32>, %b: memref<64x128xf32>, %y: memref<64x128xf32>, %s: memref<64xf32>) attributes {llvm.emit_c_interface} {
  linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<64x128xf32>, memref<64x128xf32>) outs(%y : memref<64x128xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %0 = arith.addf %a, %c : f32
    %1 = math.tanh %0 : f32
    %2 = arith.mulf %0, %1 : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]}
      ins(%y : memref<64x128xf32>) outs(%s : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.addf %o, %a : f32
    linalg.yield %0 : f32
  }
  return
}
