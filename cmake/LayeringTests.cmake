# ctests that prove the build-enforced layering of zb_mlir_free_target()
# (cmake/ZBUtils.cmake): each compiles a probe from cmake/layering/ with exactly
# the include directories and definitions of an MLIR-free target.
#   ZBLayering.<target>.no-mlir    #include "mlir/IR/Builders.h" is not found
#   ZBLayering.<target>.no-zb-mlir #include "zb/Dialect/..." is not found
#   ZBLayering.<target>.own        the target's own public header compiles
set(ZB_LAYERING_PROBES ${PROJECT_SOURCE_DIR}/cmake/layering)

function(zb_add_layering_test name target probe expect)
  set(incs "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
  set(defs "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
  add_test(NAME ZBLayering.${target}.${name}
    COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 -fsyntax-only
            "$<$<BOOL:${incs}>:-I$<JOIN:${incs},;-I>>"
            "$<$<BOOL:${defs}>:-D$<JOIN:${defs},;-D>>"
            ${ZB_LAYERING_PROBES}/${probe}
    COMMAND_EXPAND_LISTS)
  if(expect STREQUAL "compiles")
    return()
  endif()
  # Must fail, and for the reason under test (the header is not found).
  set_tests_properties(ZBLayering.${target}.${name} PROPERTIES
    PASS_REGULAR_EXPRESSION "${expect}.*(No such file|file not found)")
endfunction()

# The MLIR-free libraries, bottom up: zbrt (runtime/), ZBSupport, ZBSchedule,
# ZBFormats, ZBRunner (docs/architecture.md). None sees MLIR; each sees its
# own headers and none of a layer above it.
#   ZBLayering.<target>.no-<layer> the header of a layer above is not found
foreach(target zbrt ZBSupport ZBSchedule ZBFormats ZBRunner)
  zb_add_layering_test(no-mlir ${target} mlir_probe.cpp "mlir/IR/Builders.h")
  zb_add_layering_test(no-zb-mlir ${target} zb_dialect_probe.cpp
                       "zb/Dialect/ZB/IR/ZBDialect.h")
endforeach()
zb_add_layering_test(own zbrt zbrt_probe.cpp compiles)
zb_add_layering_test(own ZBSupport support_probe.cpp compiles)
zb_add_layering_test(own ZBSchedule schedule_probe.cpp compiles)
zb_add_layering_test(own ZBFormats formats_probe.cpp compiles)
zb_add_layering_test(own ZBRunner runner_probe.cpp compiles)
zb_add_layering_test(no-support zbrt support_probe.cpp "zb/Support/AtomicFile.h")
zb_add_layering_test(no-schedule ZBSupport schedule_probe.cpp
                     "zb/Schedule/Schedule.h")
zb_add_layering_test(no-formats ZBSchedule formats_probe.cpp
                     "zb/Formats/Checkpoint.h")
zb_add_layering_test(no-runner ZBFormats runner_probe.cpp "zb/Runner/Runner.h")

# The IR is the bottom of the MLIR libraries: the dialect links no scheduler
# and includes no zb layer above it (its schedule enums are its own,
# ZBAttributes.td; lib/Transforms converts them to zb::sched's).
get_target_property(zb_dialect_libs ZBDialect LINK_LIBRARIES)
foreach(lib ZBSchedule ZBFormats ZBSupport ZBTransforms)
  if(lib IN_LIST zb_dialect_libs)
    message(FATAL_ERROR "ZBDialect links ${lib}: the IR must not depend on a "
                        "layer above it (docs/architecture.md)")
  endif()
endforeach()
add_test(NAME ZBLayering.ZBDialect.no-upper-includes
  COMMAND ${CMAKE_COMMAND}
          "-DDIRS=${PROJECT_SOURCE_DIR}/lib/Dialect;${PROJECT_SOURCE_DIR}/include/zb/Dialect"
          "-DFORBIDDEN=zb/(Schedule|Formats|Support|Runner|Transforms|Conversion|Codegen|Target|Pipelines|Driver|Frontend)/"
          -P ${ZB_LAYERING_PROBES}/check_includes.cmake)
