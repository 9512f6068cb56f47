# Fails when a source under DIRS includes a header matching FORBIDDEN: the
# layering of the MLIR libraries, which see the whole include/ directory and
# so cannot be held back by include views (cmake/ZBUtils.cmake).
#   cmake -DDIRS="<dir>;<dir>" -DFORBIDDEN="<regex>" -P check_includes.cmake
foreach(dir ${DIRS})
  if(NOT IS_DIRECTORY "${dir}")
    message(FATAL_ERROR "${dir}: not a directory")
  endif()
  file(GLOB_RECURSE files "${dir}/*.h" "${dir}/*.cpp" "${dir}/*.td")
  foreach(f ${files})
    file(STRINGS "${f}" hits REGEX "^#include \"(${FORBIDDEN})")
    if(hits)
      message(FATAL_ERROR "${f} includes a layer above it: ${hits}")
    endif()
  endforeach()
endforeach()
message(STATUS "no include of ${FORBIDDEN} under ${DIRS}")
