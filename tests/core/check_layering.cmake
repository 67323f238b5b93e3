# The layering rules of DESIGN.md ("Layers", "One op table") that a grep can
# check, run by CTest as `cmake -DSRC=<repo>/src -P check_layering.cmake`:
# - the backends include nothing from nn/ or optim/ (nor their public headers);
# - nn/, optim/ and ops/ include nothing from backend/;
# - core/ includes nothing from profiler/ (the hooks every op calls live in core);
# - no BRISK_HAVE_CUDA in nn/, ops/ or optim/: their kernels are rows of the op
#   table, registered by each backend.
# kPending lists the files not converted yet (remove an entry when its ops go
# through the table; the check fails on an entry that no longer needs it).
if(NOT SRC)
  message(FATAL_ERROR "check_layering: pass -DSRC=<repo>/src")
endif()
set(kPending "")

set(errors "")
macro(scan dir glob_exts regex what)
  set(_files "")
  foreach(ext IN ITEMS ${glob_exts})
    file(GLOB_RECURSE _f RELATIVE ${SRC} ${SRC}/${dir}/*.${ext})
    list(APPEND _files ${_f})
  endforeach()
  foreach(f IN LISTS _files)
    file(STRINGS ${SRC}/${f} _hits REGEX "${regex}")
    if(_hits)
      list(FIND kPending ${f} _pending)
      if(_pending EQUAL -1)
        foreach(h IN LISTS _hits)
          string(APPEND errors "  ${f}: ${what}: ${h}\n")
        endforeach()
      else()
        list(APPEND _still_pending ${f})
      endif()
    endif()
  endforeach()
endmacro()

set(_still_pending "")
set(exts "cpp;h;cu;cuh")
scan(backend "${exts}" "^[ \t]*#[ \t]*include[ \t]*\"(nn|optim|brisk/nn|brisk/optim)[/.]" "a backend includes nn/ or optim/")
foreach(d IN ITEMS nn optim ops)
  scan(${d} "${exts}" "^[ \t]*#[ \t]*include[ \t]*\"backend/" "includes a backend header")
  scan(${d} "${exts}" "BRISK_HAVE_CUDA" "BRISK_HAVE_CUDA outside the backends (register a kernel instead)")
endforeach()
scan(core "${exts}" "^[ \t]*#[ \t]*include[ \t]*\"profiler/" "core includes profiler/")

foreach(p IN LISTS kPending)
  list(FIND _still_pending ${p} _i)
  if(_i EQUAL -1)
    string(APPEND errors "  ${p} is listed as pending in check_layering.cmake but breaks no rule: remove it from kPending\n")
  endif()
endforeach()

if(errors)
  message(FATAL_ERROR "layering violations:\n${errors}")
endif()
message(STATUS "layering: ok")
