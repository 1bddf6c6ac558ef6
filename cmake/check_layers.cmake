# The layer check of one layer (cmake/Layers.cmake), run as a build step:
#   cmake -DLAYER=fabric -DREACH="fabric;core;..." -DMODULES="core;platform;..."
#         -DOWNERS=header_owners.txt -DFILES=fabric.files -DSOURCE_DIR=... -DSTAMP=... -P this
# Every `#include "..."` of every file in FILES is either a system or third-party header (its
# first path part is no module and not "fabricscope"), a header of LAYER's own module
# ("LAYER/x.h"), or a public header ("fabricscope/x.h") whose owner is in REACH. Anything else
# fails, naming the file, the line, the header's layer and what LAYER may use.
cmake_minimum_required(VERSION 3.25)
foreach(var LAYER REACH MODULES OWNERS FILES SOURCE_DIR STAMP)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_layers.cmake: -D${var}= is missing")
  endif()
endforeach()

file(STRINGS ${OWNERS} owner_lines)
foreach(line IN LISTS owner_lines)
  string(REPLACE "=" ";" pair "${line}")
  list(GET pair 0 header)
  list(GET pair 1 owner)
  set(owner_of_${header} ${owner})
endforeach()

file(STRINGS ${FILES} files)
set(errors "")
foreach(file IN LISTS files)
  # One list element a line: semicolons, backslashes and brackets go first (each would change
  # how CMake splits a list).
  file(READ ${file} text)
  string(REPLACE ";" "" text "${text}")
  string(REPLACE "\\" "" text "${text}")
  string(REPLACE "[" "" text "${text}")
  string(REPLACE "]" "" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"")
      continue()
    endif()
    set(header ${CMAKE_MATCH_1})
    file(RELATIVE_PATH where ${SOURCE_DIR} ${file})
    if(header MATCHES "^fabricscope/(.+)$")
      set(name ${CMAKE_MATCH_1})
      if(NOT DEFINED owner_of_${name})
        string(APPEND errors "${where}:${number}: includes ${header}, a header no layer declares "
          "(add it to a layer's PUBLIC_HEADERS in CMakeLists.txt)\n")
      elseif(NOT owner_of_${name} IN_LIST REACH)
        string(REPLACE ";" ", " may "${REACH}")
        string(APPEND errors "${where}:${number}: includes ${header} of layer "
          "${owner_of_${name}}, which layer ${LAYER} may not use (it may use: ${may}; "
          "CMakeLists.txt declares the layers)\n")
      endif()
    elseif(header MATCHES "^([^/]+)/")
      set(module ${CMAKE_MATCH_1})
      if(module IN_LIST MODULES AND NOT module STREQUAL LAYER)
        string(APPEND errors "${where}:${number}: includes ${header}, a private header of "
          "layer ${module}: a layer includes only its own headers and the public headers "
          "(include/fabricscope/) of the layers below it\n")
      endif()
    endif()
  endforeach()
endforeach()

if(errors)
  file(REMOVE ${STAMP})
  # Unwrapped, one `file:line: ...` a line, as a compiler says it (FATAL_ERROR would fold it).
  message(NOTICE "${errors}")
  message(FATAL_ERROR "layer ${LAYER}: forbidden includes (above)")
endif()
file(TOUCH ${STAMP})
