//===- Safetensors.h - zb-run: parameters as a safetensors file -*- C++ -*-===//
//
// The trained parameters in Hugging Face's safetensors format, for
// `zb-run --save-params FILE.safetensors` and a checkpoint's
// model.safetensors. The format (https://huggingface.co/docs/safetensors,
// https://github.com/huggingface/safetensors "Format"): an 8-byte
// little-endian unsigned N, N bytes of a UTF-8 JSON header
//   {"<name>": {"dtype": "F32", "shape": [d0, d1, ...],
//               "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"format": "pt", "producer": "zb"}}
// (padded with spaces to a multiple of 8 bytes), then the tensors' bytes:
// row-major, little-endian, [begin, end) counted from the first byte after
// the header, contiguous in offset order with no holes or overlaps. MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_RUNNER_SAFETENSORS_H
#define ZB_RUNNER_SAFETENSORS_H

#include "zb/Formats/Plan.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace zb::runner {

// The plan's types and readers (lib/Formats), which the runner speaks.
using formats::Plan;

/// True when `path` names a safetensors file (its extension is
/// ".safetensors"); --save-params writes params.bin's layout otherwise.
bool isSafetensorsPath(llvm::StringRef path);

/// Writes `path` (through writeFileAtomically, zb/Support/AtomicFile.h) as a
/// safetensors file holding every entry of plan.params once (a tied
/// parameter's copies are one entry), under its plan name (the ONNX
/// initializer name: the model's state_dict name for a PyTorch export),
/// dtype "F32", shape = the entry's "shape" (elements; [] for a scalar).
/// The tensors are laid out in the header's key order (sorted names, as the
/// reference serializer of the safetensors package does for one dtype);
/// 4 bytes per element.
/// `paramsBin` is the parameters in params.bin's layout (float32
/// little-endian at each entry's offset_bytes, docs/plan-json.md), at least
/// as long as the last entry's end.
/// Errors: a name that appears twice, is "__metadata__" or is not UTF-8; a
/// `paramsBin` too short; or writeFileAtomically's "cannot write '<path>':
/// <reason> (the previous file is unchanged)". The file is then unchanged.
llvm::Error writeSafetensors(llvm::StringRef path, const Plan &plan,
                             llvm::ArrayRef<char> paramsBin);

} // namespace zb::runner

#endif // ZB_RUNNER_SAFETENSORS_H
