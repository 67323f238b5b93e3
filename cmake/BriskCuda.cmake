# The CUDA backend (src/backend/cuda). BRISK_CUDA=AUTO builds it whenever a
# CUDA compiler is found, so machines without a GPU still compile and link
# it (its tests then skip); ON requires it; OFF leaves it out.
#
# Architectures: BRISK_CUDA_ARCHITECTURES (default 90: Hopper, H100/H200),
# passed to CMAKE_CUDA_ARCHITECTURES. Each architecture named adds a full
# compile of every .cu file, so name only the GPUs you run on, e.g.
# -DBRISK_CUDA_ARCHITECTURES="80;90".
#
# The CUDA runtime is linked statically; cuBLAS/cuBLASLt are opened at their
# first use (see Note [Lazy CUDA libraries] in src/backend/cuda/cublas.cpp),
# so a process that never touches a GPU does not pay for mapping them.
set(BRISK_CUDA_ARCHITECTURES "90" CACHE STRING "GPU architectures the CUDA backend is compiled for")
set(BRISK_WITH_CUDA OFF)
if(NOT BRISK_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(BRISK_WITH_CUDA ON)
  elseif(BRISK_CUDA STREQUAL "ON")
    message(FATAL_ERROR "brisk: BRISK_CUDA=ON but no CUDA compiler was found (set CUDACXX or install the CUDA toolkit)")
  endif()
endif()

if(BRISK_WITH_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES ${BRISK_CUDA_ARCHITECTURES})
  endif()
  set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
  enable_language(CUDA)
  # CMake 3.25 predates nvcc 13 and does not know its C++20 flag.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
  message(STATUS "brisk: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "brisk: CUDA backend OFF (BRISK_CUDA=${BRISK_CUDA}; no CUDA compiler found or disabled)")
endif()
