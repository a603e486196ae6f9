# cmake -DSOURCE=file.cu -DOUTPUT=file.cpp -P emulate_launches.cmake
#
# Turns a CUDA source into C++ for the emulated device: every launch
#   kernel<<<grid, block, shared, stream>>>(args...)
# becomes
#   ::emu::launch_async(kernel, ::emu::LaunchConfig(grid, block, shared, stream), args...)
# (kernel_launch.hpp), and the emulation's headers come first, so that the file's own kernels and
# host code compile unchanged with g++ or clang. A #line directive keeps diagnostics on the
# original file. A launch of a form this does not know (a templated kernel, a launch through a
# pointer expression) is an error here rather than a build failure further on.
file(READ "${SOURCE}" text)
string(REGEX REPLACE "([A-Za-z_][A-Za-z_0-9:]*)[ \t\r\n]*<<<" "::emu::launch_async(\\1, ::emu::LaunchConfig("
       text "${text}")
string(REGEX REPLACE ">>>[ \t\r\n]*\\([ \t\r\n]*\\)" "))" text "${text}")
string(REGEX REPLACE ">>>[ \t\r\n]*\\(" "), " text "${text}")
string(REGEX REPLACE "//[^\n]*" "" code "${text}")  # comments may name <<<>>>
if(code MATCHES "<<<|>>>")
  message(FATAL_ERROR "${SOURCE}: a kernel launch that emulate_launches.cmake cannot rewrite")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${SOURCE} by emulate_launches.cmake: do not edit.\n"
  "#include \"cuda_emulation.hpp\"\n"
  "#include \"kernel_launch.hpp\"\n"
  "#line 1 \"${SOURCE}\"\n"
  "${text}")
# Rewrite only on change, so that an unchanged source does not rebuild.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
