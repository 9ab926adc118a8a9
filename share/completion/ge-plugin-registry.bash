# bash completion for ge-plugin-ls and ge-plugin-registryd.
# Install: source it, or copy it to /usr/share/bash-completion/completions/ as
# ge-plugin-ls and ge-plugin-registryd (one copy or symlink per command).

_ge_plugin_ls() {
  local cur prev
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  case "$prev" in
    --status) COMPREPLY=($(compgen -W "ok error conflict crashed hung exited insecure" -- "$cur")); return ;;
    --log-level) COMPREPLY=($(compgen -W "trace debug info warn error critical off" -- "$cur")); return ;;
    --opp-path|--socket|--cache|--check) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --op|--timeout) return ;;
  esac
  COMPREPLY=($(compgen -W "--opp-path --json --no-daemon --socket --cache --op --status --check --rescan --timeout
    --allow-insecure --log-level --help" -- "$cur"))
}

_ge_plugin_registryd() {
  local cur prev
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  case "$prev" in
    --log-level) COMPREPLY=($(compgen -W "trace debug info warn error critical off" -- "$cur")); return ;;
    --opp-path|--socket|--cache) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --socket-group) COMPREPLY=($(compgen -g -- "$cur")); return ;;
    --timeout|--jobs) return ;;
  esac
  COMPREPLY=($(compgen -W "--opp-path --socket --cache --foreground --log-level --timeout --jobs --socket-group
    --allow-insecure --help" -- "$cur"))
}

complete -o filenames -F _ge_plugin_ls ge-plugin-ls
complete -o filenames -F _ge_plugin_registryd ge-plugin-registryd
