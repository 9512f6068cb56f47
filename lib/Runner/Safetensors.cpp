//===- Safetensors.cpp - zb-run: parameters as a safetensors file ---------===//

#include "zb/Runner/Safetensors.h"

#include "zb/Support/AtomicFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

using namespace llvm;
using namespace zb::runner;
using namespace zb::formats;

namespace {

Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

} // namespace

bool zb::runner::isSafetensorsPath(StringRef path) {
  return sys::path::extension(path) == ".safetensors";
}

Error zb::runner::writeSafetensors(StringRef path, const Plan &plan,
                                 ArrayRef<char> paramsBin) {
  // The entries in the order of the header's keys (llvm::json writes an
  // object's keys sorted), so that the data follow the header.
  std::vector<const ParamInfo *> order;
  for (const ParamInfo &p : plan.params)
    order.push_back(&p);
  llvm::sort(order, [](const ParamInfo *a, const ParamInfo *b) {
    return StringRef(a->name) < StringRef(b->name);
  });
  json::Object header{
      {"__metadata__", json::Object{{"format", "pt"}, {"producer", "zb"}}}};
  int64_t at = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const ParamInfo &p = *order[i];
    StringRef bad = !json::isUTF8(p.name)      ? "is not UTF-8"
                    : p.name == "__metadata__" ? "is the format's own key"
                    : i > 0 && p.name == order[i - 1]->name ? "appears twice"
                                                            : "";
    if (!bad.empty())
      return makeError("safetensors: parameter name '" + p.name + "' " + bad);
    int64_t bytes = 4 * p.numElements();
    if (p.offsetBytes < 0 || p.offsetBytes + bytes > (int64_t)paramsBin.size())
      return makeError(formatv("safetensors: parameter '{0}' ends at byte {1} "
                               "of {2}",
                               p.name, p.offsetBytes + bytes, paramsBin.size())
                           .str());
    header[p.name] =
        json::Object{{"dtype", "F32"},
                     {"shape", json::Array(p.shape)},
                     {"data_offsets", json::Array{at, at + bytes}}};
    at += bytes;
  }
  std::string text;
  raw_string_ostream(text) << json::Value(std::move(header));
  text.append((8 - text.size() % 8) % 8, ' ');
  return zb::support::writeFileAtomically(path, [&](raw_ostream &os) {
    char length[8];
    llvm::support::endian::write64le(length, text.size());
    os.write(length, sizeof length);
    os << text;
    for (const ParamInfo *p : order)
      os.write(paramsBin.data() + p->offsetBytes, 4 * p->numElements());
    return Error::success();
  });
}
