# headers.cmake: finds the two header-only dependencies.
#
# nlohmann/json: NLOHMANN_JSON_DIR (CMake variable, else environment, else
# /opt/nlohmann_json); <dir>/include is used when it exists, otherwise the
# system include path (Debian: nlohmann-json3-dev).
# protozero: the system include path (Debian: libprotozero-dev), or
# PROTOZERO_DIR/include when given.
#
# Sets ACT_NLOHMANN_JSON_INCLUDE_DIR and ACT_PROTOZERO_INCLUDE_DIR.

if(NOT DEFINED NLOHMANN_JSON_DIR)
  if(NOT "$ENV{NLOHMANN_JSON_DIR}" STREQUAL "")
    set(_act_json_default "$ENV{NLOHMANN_JSON_DIR}")
  else()
    set(_act_json_default "/opt/nlohmann_json")
  endif()
  set(NLOHMANN_JSON_DIR "${_act_json_default}" CACHE PATH
      "nlohmann/json installation directory (holding include/nlohmann/json.hpp)")
endif()

if(IS_DIRECTORY "${NLOHMANN_JSON_DIR}/include")
  if(NOT EXISTS "${NLOHMANN_JSON_DIR}/include/nlohmann/json.hpp")
    message(FATAL_ERROR
      "NLOHMANN_JSON_DIR=${NLOHMANN_JSON_DIR} has an include/ directory without "
      "nlohmann/json.hpp")
  endif()
  set(ACT_NLOHMANN_JSON_INCLUDE_DIR "${NLOHMANN_JSON_DIR}/include")
  set(_act_json_source "NLOHMANN_JSON_DIR ${NLOHMANN_JSON_DIR}")
else()
  find_path(ACT_NLOHMANN_JSON_INCLUDE_DIR nlohmann/json.hpp)
  if(NOT ACT_NLOHMANN_JSON_INCLUDE_DIR)
    message(FATAL_ERROR
      "nlohmann/json not found: NLOHMANN_JSON_DIR=${NLOHMANN_JSON_DIR} has no include/ "
      "directory and nlohmann/json.hpp is not on the system include path (Debian: "
      "apt-get install nlohmann-json3-dev)")
  endif()
  set(_act_json_source
      "the system include path (NLOHMANN_JSON_DIR=${NLOHMANN_JSON_DIR} has no include/)")
endif()
message(STATUS "act_alloc: nlohmann/json from ${_act_json_source}: ${ACT_NLOHMANN_JSON_INCLUDE_DIR}")

set(PROTOZERO_DIR "" CACHE PATH "protozero installation directory (optional)")
if(PROTOZERO_DIR)
  set(_act_protozero_hints HINTS "${PROTOZERO_DIR}/include" NO_DEFAULT_PATH)
endif()
find_path(ACT_PROTOZERO_INCLUDE_DIR protozero/pbf_writer.hpp ${_act_protozero_hints})
if(NOT ACT_PROTOZERO_INCLUDE_DIR)
  message(FATAL_ERROR
    "protozero not found (header-only; Debian: apt-get install libprotozero-dev, or set "
    "PROTOZERO_DIR)")
endif()
message(STATUS "act_alloc: protozero from ${ACT_PROTOZERO_INCLUDE_DIR}")
