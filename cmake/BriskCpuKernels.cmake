# CPU kernels are compiled once per instruction set and chosen at run time
# (see docs/design/cpu_backend.md): one binary runs at full width on AVX2
# and on AVX-512 machines and still runs on older x86-64.
set(BRISK_CPU_ISAS "base;avx2;avx512" CACHE STRING
    "CPU kernel variants to build: a list of base, avx2, avx512, or 'native' for the widest one this machine runs (quick dev and sanitizer builds)")
set(BRISK_ISA_FLAGS_base "")
set(BRISK_ISA_FLAGS_avx2 "-mavx2;-mfma;-mf16c;-mbmi2")
set(BRISK_ISA_FLAGS_avx512 "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx2;-mfma;-mf16c;-mbmi2;-mprefer-vector-width=256")

# 'native' resolves to the variant register.cpp would pick on this machine,
# from the same CPU flags (a build made this way runs only on such CPUs).
if(BRISK_CPU_ISAS STREQUAL "native")
  set(_brisk_native base)
  if(EXISTS /proc/cpuinfo)
    file(STRINGS /proc/cpuinfo _brisk_flags REGEX "^flags" LIMIT_COUNT 1)
    if(_brisk_flags MATCHES " avx512f( |$)" AND _brisk_flags MATCHES " avx512bw( |$)"
       AND _brisk_flags MATCHES " avx512vl( |$)" AND _brisk_flags MATCHES " avx512dq( |$)")
      set(_brisk_native avx512)
    elseif(_brisk_flags MATCHES " avx2( |$)" AND _brisk_flags MATCHES " fma( |$)")
      set(_brisk_native avx2)
    endif()
  endif()
  message(STATUS "brisk: BRISK_CPU_ISAS=native builds the ${_brisk_native} kernels only")
  set(BRISK_CPU_ISAS ${_brisk_native})
endif()
foreach(isa IN LISTS BRISK_CPU_ISAS)
  if(NOT isa MATCHES "^(base|avx2|avx512)$")
    message(FATAL_ERROR "BRISK_CPU_ISAS: unknown variant '${isa}' (expected base, avx2, avx512 or native)")
  endif()
endforeach()

# brisk_add_cpu_kernels(target src...): adds each source once per ISA.
function(brisk_add_cpu_kernels target)
  foreach(isa IN LISTS BRISK_CPU_ISAS)
    set(lib brisk_cpu_kernels_${isa})
    add_library(${lib} OBJECT ${ARGN})
    # -fno-math-errno: a loop that calls std::sqrt per element (the fused
    # optimizers, norms) vectorizes only without errno semantics (brisk
    # never reads errno); the generated code gets it too (src/CMakeLists.txt)
    target_compile_options(${lib} PRIVATE ${BRISK_ISA_FLAGS_${isa}} ${BRISK_OPT_FLAGS} -fno-math-errno)
    target_compile_definitions(${lib} PRIVATE BRISK_CPU_ISA=${isa})
    target_include_directories(${lib} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${lib} PRIVATE OpenMP::OpenMP_CXX brisk_sleef)
    target_sources(${target} PRIVATE $<TARGET_OBJECTS:${lib}>)
  endforeach()
endfunction()
