//===- TraceKernels.cu - zb runtime: the trace's device timestamps --------===//
//
// The CUDA backend's trace (DeviceTrace.h) marks where each action begins
// and ends on the compute stream with one single-thread kernel that writes
// the GPU's global nanosecond timer (%globaltimer) into a slot of a buffer
// the host reads after the step's synchronisation. A kernel rather than a
// timing event: a launch is a node of the step's CUDA graph (StepGraph.h),
// replayed with the graph at no host cost, while each event's time would
// cost the host one cuEventElapsedTime call per mark and step. Compiled by
// nvcc at build time into a fatbin that libzbrt embeds
// (zbrt_trace_fatbin).
//
//===----------------------------------------------------------------------===//

/// slots[slot] = the GPU's global timer (nanoseconds) when the kernel runs.
/// One block of one thread.
extern "C" __global__ void zbrt_timestamp_kernel(unsigned long long *slots,
                                                 int slot) {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  slots[slot] = now;
}
