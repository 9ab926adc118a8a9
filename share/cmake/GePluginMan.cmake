# GePluginMan.cmake: one man page from a tool's --help and --version (help2man),
# gzip -9n compressed. Run by the ge-man target (share/cmake/GePluginDist.cmake):
#   cmake -DHELP2MAN=... -DPROGRAM=TOOL -DSECTION=1 -DSUMMARY=TEXT -DOUTPUT=PAGE.gz -P GePluginMan.cmake
# help2man makes ENVIRONMENT and FILES sections of the --help paragraphs
# "Environment:" and "Files:"; the "Exit status:" paragraph (a subsection of
# the options to help2man, as in GNU coreutils' pages) becomes the EXIT STATUS
# section man-pages(7) asks for. A page without the three fails the build: it
# keeps each tool's --help complete.
set(raw "${OUTPUT}.troff")
get_filename_component(out_dir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${out_dir}")
execute_process(COMMAND "${CMAKE_COMMAND}" -E env LC_ALL=C.UTF-8 GE_LOG_LEVEL=off
                        "${HELP2MAN}" --no-info "--section=${SECTION}" "--name=${SUMMARY}" "--output=${raw}" "${PROGRAM}"
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "help2man ${PROGRAM} failed (${rc}): ${err}")
endif()
file(READ "${raw}" page)
string(REPLACE ".SS \"Exit status:\"" ".SH \"EXIT STATUS\"" page "${page}")
foreach(section "EXIT STATUS" "ENVIRONMENT" "FILES" "OPTIONS")
  string(FIND "${page}" ".SH \"${section}\"" at)
  string(FIND "${page}" ".SH ${section}" at2)
  if(at EQUAL -1 AND at2 EQUAL -1)
    message(FATAL_ERROR "${PROGRAM} --help gives no ${section} section for its man page (help2man output: ${raw})")
  endif()
endforeach()
file(WRITE "${raw}" "${page}")
execute_process(COMMAND gzip -9n -c "${raw}" OUTPUT_FILE "${OUTPUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip ${raw} failed")
endif()
file(REMOVE "${raw}")
