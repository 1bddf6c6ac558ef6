# One library a layer, and the rule that holds them (docs/development.md, "Layers"):
#
#   fabricscope_layer(NAME DEPS <layers below it that it uses>
#                     PUBLIC_HEADERS <its headers in include/fabricscope/>
#                     SOURCES <its .cc files> [HEADER_ONLY])
#
# makes the static library fabricscope_<NAME>, linked PUBLIC to fabricscope_<DEP> for each DEP,
# and a check that runs before it compiles (cmake/check_layers.cmake): a file of src/<NAME>/ may
# include its own module's headers ("NAME/x.h") and the public headers ("fabricscope/x.h") of
# NAME and of the layers DEPS reach, nothing else of the project's. A forbidden include stops the
# build there with the file, the line and the layers it may use. Layers are declared bottom up:
# a DEP must be declared before, so the graph cannot have a cycle. This is the role `gn check`
# plays for Chromium's deps, with CMake alone.
set(FABRICSCOPE_LAYER_CHECKER ${CMAKE_CURRENT_LIST_DIR}/check_layers.cmake)

function(fabricscope_layer name)
  cmake_parse_arguments(L "HEADER_ONLY" "" "DEPS;PUBLIC_HEADERS;SOURCES;MODULE_DIRS" ${ARGN})
  get_property(layers GLOBAL PROPERTY FABRICSCOPE_LAYERS)
  if(name IN_LIST layers)
    message(FATAL_ERROR "layer ${name} is declared twice")
  endif()
  set(reach ${name})
  foreach(dep IN LISTS L_DEPS)
    if(NOT dep IN_LIST layers)
      message(FATAL_ERROR "layer ${name}: its dependency '${dep}' is not a layer declared before "
        "it (cmake/Layers.cmake: declare layers bottom up)")
    endif()
    get_property(dep_reach GLOBAL PROPERTY FABRICSCOPE_LAYER_REACH_${dep})
    list(APPEND reach ${dep_reach})
  endforeach()
  list(REMOVE_DUPLICATES reach)
  set_property(GLOBAL PROPERTY FABRICSCOPE_LAYER_REACH_${name} ${reach})
  foreach(header IN LISTS L_PUBLIC_HEADERS)
    get_property(owner GLOBAL PROPERTY FABRICSCOPE_HEADER_OWNER_${header})
    if(owner)
      message(FATAL_ERROR "fabricscope/${header} is declared by layers ${owner} and ${name}")
    endif()
    if(NOT EXISTS ${PROJECT_SOURCE_DIR}/include/fabricscope/${header}
       AND NOT EXISTS ${PROJECT_BINARY_DIR}/generated/fabricscope/${header})
      message(FATAL_ERROR "layer ${name}: public header fabricscope/${header} does not exist")
    endif()
    set_property(GLOBAL PROPERTY FABRICSCOPE_HEADER_OWNER_${header} ${name})
    set_property(GLOBAL APPEND PROPERTY FABRICSCOPE_PUBLIC_HEADERS ${header})
  endforeach()
  set_property(GLOBAL APPEND PROPERTY FABRICSCOPE_LAYERS ${name})

  if(L_HEADER_ONLY)
    add_library(fabricscope_${name} INTERFACE)
    target_link_libraries(fabricscope_${name} INTERFACE fabricscope_headers)
  else()
    add_library(fabricscope_${name} STATIC ${L_SOURCES})
    target_include_directories(fabricscope_${name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_compile_options(fabricscope_${name} PRIVATE ${FABRICSCOPE_WARNINGS})
    target_link_libraries(fabricscope_${name} PUBLIC fabricscope_headers)
    foreach(dep IN LISTS L_DEPS)
      target_link_libraries(fabricscope_${name} PUBLIC fabricscope_${dep})
    endforeach()
  endif()
  set_property(GLOBAL PROPERTY FABRICSCOPE_LAYER_DIRS_${name} ${L_MODULE_DIRS})
  set_property(GLOBAL PROPERTY FABRICSCOPE_LAYER_HEADERS_${name} ${L_PUBLIC_HEADERS})
endfunction()

# After every layer is declared: each layer's check, a step its library waits for. The files
# checked are its sources, its private headers (src/<module dir>/**.h) and its public headers.
function(fabricscope_check_layers)
  get_property(layers GLOBAL PROPERTY FABRICSCOPE_LAYERS)
  set(owners "")
  get_property(all_headers GLOBAL PROPERTY FABRICSCOPE_PUBLIC_HEADERS)
  foreach(header IN LISTS all_headers)
    get_property(owner GLOBAL PROPERTY FABRICSCOPE_HEADER_OWNER_${header})
    string(APPEND owners "${header}=${owner}\n")
  endforeach()
  set(owners_file ${PROJECT_BINARY_DIR}/layers/header_owners.txt)
  file(WRITE ${owners_file}.in "${owners}")
  configure_file(${owners_file}.in ${owners_file} COPYONLY)
  foreach(name IN LISTS layers)
    get_property(dirs GLOBAL PROPERTY FABRICSCOPE_LAYER_DIRS_${name})
    get_property(headers GLOBAL PROPERTY FABRICSCOPE_LAYER_HEADERS_${name})
    get_property(reach GLOBAL PROPERTY FABRICSCOPE_LAYER_REACH_${name})
    set(files "")
    foreach(dir IN LISTS dirs)
      file(GLOB_RECURSE found CONFIGURE_DEPENDS
        ${PROJECT_SOURCE_DIR}/src/${dir}/*.cc ${PROJECT_SOURCE_DIR}/src/${dir}/*.h)
      list(APPEND files ${found})
    endforeach()
    foreach(header IN LISTS headers)
      if(EXISTS ${PROJECT_SOURCE_DIR}/include/fabricscope/${header})
        list(APPEND files ${PROJECT_SOURCE_DIR}/include/fabricscope/${header})
      endif()
    endforeach()
    list(SORT files)
    set(list_file ${PROJECT_BINARY_DIR}/layers/${name}.files)
    string(REPLACE ";" "\n" file_lines "${files}")
    file(WRITE ${list_file}.in "${file_lines}\n")
    configure_file(${list_file}.in ${list_file} COPYONLY)
    set(stamp ${PROJECT_BINARY_DIR}/layers/${name}.ok)
    add_custom_command(
      OUTPUT ${stamp}
      COMMAND ${CMAKE_COMMAND} -DLAYER=${name} "-DREACH=${reach}"
        "-DMODULES=${layers}" -DOWNERS=${owners_file} -DFILES=${list_file}
        -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DSTAMP=${stamp} -P ${FABRICSCOPE_LAYER_CHECKER}
      DEPENDS ${files} ${owners_file} ${list_file} ${FABRICSCOPE_LAYER_CHECKER}
      COMMENT "Checking layer ${name}'s includes"
      VERBATIM)
    add_custom_target(fabricscope_layer_check_${name} DEPENDS ${stamp})
    add_dependencies(fabricscope_${name} fabricscope_layer_check_${name})
  endforeach()
endfunction()
