# add_subdirectory() for directories that may not have been written yet in a
# partial checkout (keeps configure working while layers are added).
macro(zb_add_subdirectory dir)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/CMakeLists.txt)
    add_subdirectory(${dir})
  else()
    message(STATUS "zb: skipping ${CMAKE_CURRENT_SOURCE_DIR}/${dir} (no CMakeLists.txt)")
  endif()
endmacro()
