//===- GpuPeaks.h - the GPUs zb's rooflines price ---------------*- C++ -*-===//
//
// Datasheet peak rates (dense) of the GPUs zb prices work on, one struct for
// both of zb's GPU rooflines:
//   - the zb-level cost model (zb/Transforms/CostModel.h, target h100): GEMMs
//     at the BF16 tensor-core peak, other ops at the fp32 peak, tensors as
//     bf16, NVLink between ranks;
//   - the CUDA target's kernel report and --gpu-costs
//     (zb/Target/CUDA/KernelReport.h, GpuSpec): fp32 kernels at the fp32
//     peak, GEMMs at fp32 or (--allow-tf32) at the TF32 tensor-core peak.
// Sources: NVIDIA's H100 and H200 datasheets (SXM); docs/cost-model.md.
//
// Header only, MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_FORMATS_GPUPEAKS_H
#define ZB_FORMATS_GPUPEAKS_H

namespace zb {

/// Peak rates of one GPU (per second; dense, no sparsity).
struct GpuPeaks {
  const char *name;          ///< as reports print it, e.g. "H100 SXM"
  double memBytesPerSecond;  ///< HBM bandwidth, bytes/s
  double fp32FlopsPerSecond; ///< fp32 on the CUDA cores, FLOP/s
  double tf32FlopsPerSecond; ///< TF32 tensor cores, FLOP/s
  double bf16FlopsPerSecond; ///< BF16 tensor cores, FLOP/s
  double linkBytesPerSecond; ///< NVLink 4, per direction, bytes/s
  double linkLatencySeconds; ///< point-to-point message latency (estimate)
};

/// H100 SXM5: HBM3 3.35 TB/s, 67 TFLOP/s fp32, 495 TFLOP/s TF32, 989
/// TFLOP/s BF16, NVLink 4 450 GB/s per direction.
inline constexpr GpuPeaks kH100Sxm = {"H100 SXM", 3.35e12, 67e12, 495e12,
                                      989e12,     450e9,   10e-6};
/// H200 SXM: the H100's compute with HBM3e at 4.8 TB/s.
inline constexpr GpuPeaks kH200Sxm = {"H200 SXM", 4.8e12, 67e12, 495e12,
                                      989e12,     450e9,  10e-6};

} // namespace zb

#endif // ZB_FORMATS_GPUPEAKS_H
