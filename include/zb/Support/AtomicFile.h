//===- AtomicFile.h - Writing output files atomically -----------*- C++ -*-===//
//
// Every file zb writes (the plan directory's plan.json, params.bin,
// schedule.json/.svg, pipeline.mlir; zb-run's profile; zb-sched -o) goes
// through writeFileAtomically: the contents go to a temporary file next to
// the target, which is renamed over it when complete. A crash or a full disk
// leaves the previous file; a symlink at the target is replaced, not
// followed. A device or FIFO (/dev/null, /dev/full, a pipe) is written in
// place, since it cannot be replaced. MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_SUPPORT_ATOMICFILE_H
#define ZB_SUPPORT_ATOMICFILE_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace zb::support {

/// Writes `path` through `write` (binary; text is written as is). Errors:
/// "cannot write '<path>': <reason> (the previous file is unchanged)", or
/// the error `write` returned.
llvm::Error
writeFileAtomically(llvm::StringRef path,
                    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write);

/// For a file another program writes (the linker's rank library): `produce`
/// makes the complete file at the temporary path it is given (next to
/// `path`), which is then renamed over `path`. Errors: the error of
/// `produce` (the temporary file removed), or "cannot write '<path>':
/// <reason> (the previous file is unchanged)".
llvm::Error replaceFileAtomically(
    llvm::StringRef path,
    llvm::function_ref<llvm::Error(llvm::StringRef tmpPath)> produce);

} // namespace zb::support

#endif // ZB_SUPPORT_ATOMICFILE_H
