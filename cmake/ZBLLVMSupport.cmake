# LLVM Support for the MLIR-free layers, linked as the executable needs it.
#
# The MLIR-free libraries (lib/Formats, lib/Schedule, lib/Runner) use LLVM's
# Support library (ADT, JSON, raw_ostream, Error). The compiler (zb-compile,
# zb-opt, the Python module) links them together with libMLIR.so/libLLVM.so,
# so there they must use the same libLLVM.so: a second copy of Support in one
# process would give it two cl::opt registries (and two of every other global).
# zb-run, the runtime that ships without the compiler, must need no LLVM
# shared library at all. So these libraries link ZBLLVMSupport, an interface
# target whose link item is chosen by the executable or shared library being
# linked (in INTERFACE_LINK_LIBRARIES, $<TARGET_PROPERTY:prop> without a
# target name is read on that target):
#   ZB_STATIC_LLVM_SUPPORT ON   LLVM's static Support and Demangle archives and
#                               what they need (zlib, zstd; ZBLLVMSupportStatic)
#   otherwise                   the LLVM dylib, as every MLIR layer links it
#
#   zb_static_llvm_support(<target>)
#     Links <target> (an executable that links no MLIR layer, only MLIR-free
#     libraries) against the static archives; its ldd then names no libLLVM.
#     Test: test/Tools/zb-run-standalone.test.

# The static Support archive with the dependencies LLVM exported for it, less
# Z3: only Support's Z3 solver wrapper uses it, which zb never calls (so the
# linker never pulls that member in, and with --no-as-needed zb-run would
# otherwise name libz3).
get_target_property(ZB_LLVM_SUPPORT_ARCHIVE LLVMSupport LOCATION)
get_target_property(ZB_LLVM_SUPPORT_DEPS LLVMSupport INTERFACE_LINK_LIBRARIES)
list(FILTER ZB_LLVM_SUPPORT_DEPS EXCLUDE REGEX "[zZ]3")
# LLVMConfig defines zstd::libzstd_shared only where zstd's development files
# are installed; the runtime library (libzstd.so.1) is enough to link.
if("zstd::libzstd_shared" IN_LIST ZB_LLVM_SUPPORT_DEPS AND
   NOT TARGET zstd::libzstd_shared)
  find_library(ZB_ZSTD_LIBRARY NAMES zstd libzstd.so.1 REQUIRED)
  list(TRANSFORM ZB_LLVM_SUPPORT_DEPS REPLACE "^zstd::libzstd_shared$"
       "${ZB_ZSTD_LIBRARY}")
endif()
add_library(ZBLLVMSupportStatic STATIC IMPORTED)
set_target_properties(ZBLLVMSupportStatic PROPERTIES
  IMPORTED_LOCATION "${ZB_LLVM_SUPPORT_ARCHIVE}"
  INTERFACE_LINK_LIBRARIES "${ZB_LLVM_SUPPORT_DEPS}")

add_library(ZBLLVMSupport INTERFACE)
target_link_libraries(ZBLLVMSupport INTERFACE
  "$<IF:$<BOOL:$<TARGET_PROPERTY:ZB_STATIC_LLVM_SUPPORT>>,ZBLLVMSupportStatic,LLVM>")

function(zb_static_llvm_support target)
  set_property(TARGET ${target} PROPERTY ZB_STATIC_LLVM_SUPPORT ON)
endfunction()
