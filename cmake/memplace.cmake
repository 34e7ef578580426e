# memplace for existing CMake firmware projects.
#
#   include(/path/to/memplace.cmake)    # `memplace cmake-module` prints the path
#   memplace_target(TARGET firmware BOARD qemu-mps3-an547 WORKLOAD ${CMAKE_SOURCE_DIR}/workload.yaml)
#
# At configure time memplace plans the workload and writes the linker script, startup code
# and pool storage into the build tree; they are added to the target, whose `main()` the
# startup code calls. The target's C and C++ sources are compiled with -fstack-usage and
# -fcallgraph-info=su,da, so GCC leaves a .su and a .ci file beside each object for the
# static stack bound. After every link, `memplace verify` checks the ELF against the plan,
# with those files (`--objects`), and fails the build when a placement or a stack budget
# does not hold.
#
# Options: CORE (default: the board's first core), OUTPUT_DIR (default:
# ${CMAKE_CURRENT_BINARY_DIR}/memplace-<target>), ALGORITHM, POOL_STORAGE (application: the
# target defines the workspace pool arrays itself, with the <NAME>_<POOL>_ATTRIBUTES macros),
# STACK_HINTS (files or bundled names for `memplace verify --stack-hints`, e.g. newlib-nano
# for firmware that uses printf), DEFER_CHECK (no check after the link: the target
# <target>_memplace_check runs the firmware under QEMU with `memplace run`, then checks it
# with the run's stack marks too; build it after the firmware, e.g. in CI).
# The memplace command is MEMPLACE_EXECUTABLE (found on PATH when not set).

include_guard(GLOBAL)

find_program(MEMPLACE_EXECUTABLE memplace)

function(memplace_target)
  cmake_parse_arguments(MP "DEFER_CHECK" "TARGET;BOARD;WORKLOAD;CORE;OUTPUT_DIR;ALGORITHM;POOL_STORAGE"
                        "STACK_HINTS" ${ARGN})
  foreach(required TARGET BOARD WORKLOAD)
    if(NOT MP_${required})
      message(FATAL_ERROR "memplace_target: ${required} is required")
    endif()
  endforeach()
  if(NOT MEMPLACE_EXECUTABLE)
    message(FATAL_ERROR "memplace_target: the memplace command was not found; set MEMPLACE_EXECUTABLE")
  endif()
  if(NOT MP_OUTPUT_DIR)
    set(MP_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/memplace-${MP_TARGET}")
  endif()
  set(choices)
  if(MP_ALGORITHM)
    list(APPEND choices --algorithm ${MP_ALGORITHM})
  endif()
  if(MP_POOL_STORAGE)
    list(APPEND choices --pool-storage ${MP_POOL_STORAGE})
  endif()

  execute_process(
    COMMAND "${MEMPLACE_EXECUTABLE}" generate "${MP_BOARD}" "${MP_WORKLOAD}"
            --out "${MP_OUTPUT_DIR}" --project-type library --force ${choices}
    RESULT_VARIABLE status
    OUTPUT_VARIABLE output
    ERROR_VARIABLE output)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "memplace could not plan ${MP_WORKLOAD} on ${MP_BOARD}:\n${output}")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${MP_WORKLOAD}")
  if(EXISTS "${MP_BOARD}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${MP_BOARD}")
  endif()

  include("${MP_OUTPUT_DIR}/memplace/targets.cmake")
  if(NOT MP_CORE)
    list(GET MEMPLACE_CORES 0 MP_CORE)
  endif()
  if(NOT MP_CORE IN_LIST MEMPLACE_CORES)
    message(FATAL_ERROR "memplace_target: no core ${MP_CORE}; the board has ${MEMPLACE_CORES}")
  endif()

  target_sources(${MP_TARGET} PRIVATE ${MEMPLACE_${MP_CORE}_SOURCES})
  target_include_directories(${MP_TARGET} PRIVATE "${MEMPLACE_INCLUDE_DIR}")
  target_compile_definitions(${MP_TARGET} PRIVATE MEMPLACE_CORE_${MP_CORE}=1)
  target_compile_options(${MP_TARGET} PRIVATE ${MEMPLACE_${MP_CORE}_ARCH_FLAGS}
    "$<$<COMPILE_LANGUAGE:C,CXX>:-fstack-usage;-fcallgraph-info=su,da>")
  target_link_options(${MP_TARGET} PRIVATE ${MEMPLACE_${MP_CORE}_ARCH_FLAGS}
    "-T${MEMPLACE_${MP_CORE}_LINKER_SCRIPT}" -nostartfiles)
  set_property(TARGET ${MP_TARGET} APPEND PROPERTY
    LINK_DEPENDS "${MEMPLACE_${MP_CORE}_LINKER_SCRIPT}")

  set(hints)
  foreach(hint IN LISTS MP_STACK_HINTS)
    list(APPEND hints --stack-hints "${hint}")
  endforeach()
  # Where the Makefile and Ninja generators keep the target's objects, and GCC its .su and
  # .ci files beside them; a multi-config generator keeps one folder per configuration.
  get_target_property(target_dir ${MP_TARGET} BINARY_DIR)
  set(objects "${target_dir}/CMakeFiles/${MP_TARGET}.dir")
  get_property(multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  if(multi_config)
    string(APPEND objects "/$<CONFIG>")
  endif()
  set(verify "${MEMPLACE_EXECUTABLE}" verify "${MP_OUTPUT_DIR}" --core ${MP_CORE}
      --objects "${objects}" ${hints})
  set(copy "${CMAKE_COMMAND}" -E copy "$<TARGET_FILE:${MP_TARGET}>"
      "${MP_OUTPUT_DIR}/build/${MP_CORE}.elf")
  if(MP_DEFER_CHECK)
    add_custom_command(TARGET ${MP_TARGET} POST_BUILD COMMAND ${copy} VERBATIM)
    add_custom_target(${MP_TARGET}_memplace_check
      COMMAND "${MEMPLACE_EXECUTABLE}" run "${MP_OUTPUT_DIR}"
      COMMAND ${verify}
      DEPENDS ${MP_TARGET}
      COMMENT "memplace: running ${MP_TARGET} and checking it with the run's stack marks"
      VERBATIM)
  else()
    add_custom_command(TARGET ${MP_TARGET} POST_BUILD
      COMMAND ${copy}
      COMMAND ${verify}
      COMMENT "memplace: verifying ${MP_TARGET} against the plan"
      VERBATIM)
  endif()
endfunction()
