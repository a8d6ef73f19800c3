# Writes attn's shell completions and man page under OUT (build/share) by running ATTN, the attn
# just built: `attn completions bash|zsh|fish` and `attn man`. cli/CMakeLists.txt runs it after
# each link of attn. Each file is written whole or not at all, so a failed run leaves nothing that
# would look up to date to the next build.
function(write_from_attn relative)
  set(path ${OUT}/${relative})
  get_filename_component(folder ${path} DIRECTORY)
  file(MAKE_DIRECTORY ${folder})
  execute_process(COMMAND ${ATTN} ${ARGN} OUTPUT_FILE ${path}.partial
                  RESULT_VARIABLE result ERROR_VARIABLE error)
  if(NOT result EQUAL 0)
    file(REMOVE ${path}.partial)
    string(REPLACE ";" " " words "${ARGN}")
    message(FATAL_ERROR "attn ${words} failed (${result}): ${error}")
  endif()
  file(RENAME ${path}.partial ${path})
endfunction()

write_from_attn(bash-completion/completions/attn completions bash)
write_from_attn(zsh/site-functions/_attn completions zsh)
write_from_attn(fish/vendor_completions.d/attn.fish completions fish)
write_from_attn(man/man1/attn.1 man)
