# ortools.cmake: finds the OR-Tools shared library that provides the CP-SAT
# C API and defines the imported target act_ortools.
#
# ORTOOLS_DIR (CMake variable, else environment, else /opt/ortools): an
# OR-Tools installation; lib/libortools.so or lib64/libortools.so is used.
# When that directory does not exist, the libraries of the pip wheel
# `ortools` are used instead: from ORTOOLS_WHEEL_LIBDIR if given (the
# wheel's ortools/.libs directory), else from the Python interpreter
# (Python3_EXECUTABLE, else the first python3 found).
#
# Sets ACT_ORTOOLS_LIBRARY (the file linked), ACT_ORTOOLS_RUNTIME_DIRS (the
# directories the run path must name) and ACT_ORTOOLS_SOURCE (for the log).

if(NOT DEFINED ORTOOLS_DIR)
  if(NOT "$ENV{ORTOOLS_DIR}" STREQUAL "")
    set(_act_ortools_default "$ENV{ORTOOLS_DIR}")
  else()
    set(_act_ortools_default "/opt/ortools")
  endif()
  set(ORTOOLS_DIR "${_act_ortools_default}" CACHE PATH
      "OR-Tools installation directory (holding lib/ or lib64/libortools.so)")
endif()
set(ORTOOLS_WHEEL_LIBDIR "" CACHE PATH
    "The ortools wheel's .libs directory, used when ORTOOLS_DIR does not exist")

set(ACT_ORTOOLS_RUNTIME_DIRS "")
if(EXISTS "${ORTOOLS_DIR}")
  set(ACT_ORTOOLS_LIBRARY "")
  foreach(_act_subdir lib lib64)
    if(EXISTS "${ORTOOLS_DIR}/${_act_subdir}/libortools.so")
      set(ACT_ORTOOLS_LIBRARY "${ORTOOLS_DIR}/${_act_subdir}/libortools.so")
      break()
    endif()
  endforeach()
  if(NOT ACT_ORTOOLS_LIBRARY)
    message(FATAL_ERROR
      "ORTOOLS_DIR=${ORTOOLS_DIR} exists but holds neither lib/libortools.so nor "
      "lib64/libortools.so; point ORTOOLS_DIR at an OR-Tools installation, or remove it "
      "to use the pip wheel `ortools`")
  endif()
  get_filename_component(_act_libdir "${ACT_ORTOOLS_LIBRARY}" DIRECTORY)
  list(APPEND ACT_ORTOOLS_RUNTIME_DIRS "${_act_libdir}")
  set(ACT_ORTOOLS_SOURCE "ORTOOLS_DIR ${ORTOOLS_DIR}")
else()
  if(NOT ORTOOLS_WHEEL_LIBDIR)
    find_package(Python3 COMPONENTS Interpreter)
    if(NOT Python3_Interpreter_FOUND)
      message(FATAL_ERROR
        "OR-Tools not found: ORTOOLS_DIR=${ORTOOLS_DIR} does not exist and no python3 was "
        "found to locate the pip wheel `ortools`; set ORTOOLS_DIR or ORTOOLS_WHEEL_LIBDIR")
    endif()
    execute_process(
      COMMAND "${Python3_EXECUTABLE}" -c
              "import os, ortools; print(os.path.join(os.path.dirname(ortools.__file__), '.libs'))"
      RESULT_VARIABLE _act_result
      OUTPUT_VARIABLE _act_wheel_libdir
      ERROR_VARIABLE _act_error
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT _act_result EQUAL 0)
      message(FATAL_ERROR
        "OR-Tools not found: ORTOOLS_DIR=${ORTOOLS_DIR} does not exist and "
        "${Python3_EXECUTABLE} cannot import ortools (pip install ortools, or set "
        "ORTOOLS_DIR or ORTOOLS_WHEEL_LIBDIR):\n${_act_error}")
    endif()
    set(ORTOOLS_WHEEL_LIBDIR "${_act_wheel_libdir}" CACHE PATH
        "The ortools wheel's .libs directory, used when ORTOOLS_DIR does not exist" FORCE)
  endif()
  # The wheel ships only the versioned file (libortools.so.9), no symlink.
  file(GLOB _act_candidates "${ORTOOLS_WHEEL_LIBDIR}/libortools.so.*")
  list(FILTER _act_candidates INCLUDE REGEX "/libortools\\.so\\.[0-9]+$")
  list(SORT _act_candidates)
  list(LENGTH _act_candidates _act_count)
  if(_act_count EQUAL 0)
    message(FATAL_ERROR
      "ORTOOLS_WHEEL_LIBDIR=${ORTOOLS_WHEEL_LIBDIR} holds no libortools.so.<major>; "
      "it should be the .libs directory of the pip wheel `ortools`")
  endif()
  list(GET _act_candidates 0 ACT_ORTOOLS_LIBRARY)
  list(APPEND ACT_ORTOOLS_RUNTIME_DIRS "${ORTOOLS_WHEEL_LIBDIR}")
  # Some of the wheel's libraries load auditwheel-renamed dependencies from
  # site-packages/ortools.libs, beside the ortools package.
  get_filename_component(_act_sibling "${ORTOOLS_WHEEL_LIBDIR}/../../ortools.libs" ABSOLUTE)
  if(IS_DIRECTORY "${_act_sibling}")
    list(APPEND ACT_ORTOOLS_RUNTIME_DIRS "${_act_sibling}")
  endif()
  set(ACT_ORTOOLS_SOURCE "the pip wheel in ${ORTOOLS_WHEEL_LIBDIR} (ORTOOLS_DIR=${ORTOOLS_DIR} does not exist)")
endif()

add_library(act_ortools SHARED IMPORTED)
set_target_properties(act_ortools PROPERTIES IMPORTED_LOCATION "${ACT_ORTOOLS_LIBRARY}")
message(STATUS "act_alloc: OR-Tools from ${ACT_ORTOOLS_SOURCE}: ${ACT_ORTOOLS_LIBRARY}")
