# add_subdirectory() for directories that may not have been written yet in a
# partial checkout (keeps configure working while layers are added).
macro(zb_add_subdirectory dir)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/CMakeLists.txt)
    add_subdirectory(${dir})
  else()
    message(STATUS "zb: skipping ${CMAKE_CURRENT_SOURCE_DIR}/${dir} (no CMakeLists.txt)")
  endif()
endmacro()

# ---- Build-enforced layering -------------------------------------------------
# LLVM's and MLIR's headers share one directory (/usr/lib/llvm-22/include), and
# the project's include/ holds both zb/Schedule (MLIR-free) and zb/Dialect etc.
# (MLIR). So that an MLIR-free layer cannot #include "mlir/..." or an
# MLIR-using zb header, zb_mlir_free_target() gives a target include
# directories that are build-tree views holding only what that layer may see:
#   ${ZB_VIEW_DIR}/llvm      llvm/ and llvm-c/ (symlinks into LLVM's include)
#   ${ZB_VIEW_DIR}/support   zb/Support (symlink into include/zb/Support)
#   ${ZB_VIEW_DIR}/schedule  zb/Schedule (symlink into include/zb/Schedule)
#   ${ZB_VIEW_DIR}/formats   zb/Formats (symlink into include/zb/Formats)
#   ${ZB_VIEW_DIR}/runner    zb/Runner (symlink into include/zb/Runner)
#   runtime/include          zbrt/ (already a directory of its own)
# and drops the directory-wide include directories (LLVM/MLIR, include/) that
# the target inherited.
#
#   zb_mlir_free_target(<target> [SUPPORT] [SCHEDULE] [FORMATS] [RUNNER]
#                       [RUNTIME] [LLVM])
#     SUPPORT   the target may include zb/Support/*.h
#     SCHEDULE  the target may include zb/Schedule/*.h
#     FORMATS   the target may include zb/Formats/*.h
#     RUNNER    the target may include zb/Runner/*.h
#     RUNTIME   the target may include zbrt/*.h
#     LLVM      the target may include llvm/ and llvm-c/ headers
# Each propagates to the target's consumers (to MLIR-free ones only for the
# views). Include directories from linked targets (MPI, GTest, CBC) stay.
set(ZB_VIEW_DIR ${PROJECT_BINARY_DIR}/include-views)
function(zb_make_include_views)
  set(views support schedule formats runner)
  file(MAKE_DIRECTORY ${ZB_VIEW_DIR}/llvm)
  foreach(view ${views})
    file(MAKE_DIRECTORY ${ZB_VIEW_DIR}/${view}/zb)
  endforeach()
  foreach(sub llvm llvm-c)
    file(CREATE_LINK ${LLVM_INCLUDE_DIR}/${sub} ${ZB_VIEW_DIR}/llvm/${sub}
         SYMBOLIC)
  endforeach()
  foreach(dir Support Schedule Formats Runner)
    string(TOLOWER ${dir} view)
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/include/zb/${dir}
         ${ZB_VIEW_DIR}/${view}/zb/${dir} SYMBOLIC)
  endforeach()
endfunction()

function(zb_mlir_free_target target)
  cmake_parse_arguments(ARG "SUPPORT;SCHEDULE;FORMATS;RUNNER;RUNTIME;LLVM" ""
                        "" ${ARGN})
  # Replace (not append to) what the directory scope handed down.
  set_property(TARGET ${target} PROPERTY INCLUDE_DIRECTORIES "")
  set_property(TARGET ${target} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "")
  set_property(TARGET ${target} PROPERTY ZB_MLIR_FREE ON)
  if(ARG_RUNTIME)
    target_include_directories(${target} PUBLIC
      ${PROJECT_SOURCE_DIR}/runtime/include)
  endif()
  # The views propagate only to consumers that are MLIR-free themselves: the
  # MLIR layers see the same headers through the directory-wide include
  # directories, and their command lines stay as they were.
  set(consumerIsFree "$<BOOL:$<TARGET_PROPERTY:ZB_MLIR_FREE>>")
  foreach(view SUPPORT SCHEDULE FORMATS RUNNER)
    if(ARG_${view})
      string(TOLOWER ${view} dir)
      target_include_directories(${target} PRIVATE ${ZB_VIEW_DIR}/${dir})
      target_include_directories(${target} INTERFACE
        "$<${consumerIsFree}:${ZB_VIEW_DIR}/${dir}>")
    endif()
  endforeach()
  if(ARG_LLVM)
    target_include_directories(${target} SYSTEM PRIVATE ${ZB_VIEW_DIR}/llvm)
    target_include_directories(${target} SYSTEM INTERFACE
      "$<${consumerIsFree}:${ZB_VIEW_DIR}/llvm>")
  endif()
endfunction()
