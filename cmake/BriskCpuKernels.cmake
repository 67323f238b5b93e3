# CPU kernels are compiled once per instruction set and chosen at run time
# (see docs/design/cpu_backend.md): one binary runs at full width on AVX2
# and on AVX-512 machines and still runs on older x86-64.
set(BRISK_CPU_ISAS "base;avx2;avx512" CACHE STRING "CPU kernel variants to build (base is the fallback; a dev build may keep only the native one)")
set(BRISK_ISA_FLAGS_base "")
set(BRISK_ISA_FLAGS_avx2 "-mavx2;-mfma;-mf16c;-mbmi2")
set(BRISK_ISA_FLAGS_avx512 "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx2;-mfma;-mf16c;-mbmi2;-mprefer-vector-width=512")

# brisk_add_cpu_kernels(target src...): adds each source once per ISA.
function(brisk_add_cpu_kernels target)
  foreach(isa IN LISTS BRISK_CPU_ISAS)
    set(lib brisk_cpu_kernels_${isa})
    add_library(${lib} OBJECT ${ARGN})
    target_compile_options(${lib} PRIVATE ${BRISK_ISA_FLAGS_${isa}} -O3)
    target_compile_definitions(${lib} PRIVATE BRISK_CPU_ISA=${isa})
    target_include_directories(${lib} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${lib} PRIVATE OpenMP::OpenMP_CXX)
    target_sources(${target} PRIVATE $<TARGET_OBJECTS:${lib}>)
  endforeach()
endfunction()
