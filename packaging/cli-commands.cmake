# Writes a help2man include file with the --help of each llmprism-cli command, so that the manual page holds
# every option. cmake -DCLI=path/to/llmprism-cli -DOUT=commands.h2m -P cli-commands.cmake
set(text "[COMMANDS IN DETAIL]\n")
foreach(cmd simulate analyze evaluate import convert export-clickhouse compare)
  execute_process(COMMAND ${CLI} ${cmd} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${CLI} ${cmd} --help failed (${rc})")
  endif()
  # roff: a leading dot or quote would start a request; backslashes are escapes.
  string(REPLACE "\\" "\\e" help "${help}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
  string(APPEND text ".SS ${cmd}\n.nf\n${help}.fi\n")
endforeach()
file(WRITE ${OUT} "${text}")
