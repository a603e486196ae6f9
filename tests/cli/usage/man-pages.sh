#!/usr/bin/env bash
. "$CLI_TESTS/common.sh"
# The man pages render without warnings, document every option that --help lists, and mention
# no option that does not exist.
man_dir="$CLI_TESTS/../../man"
command -v man >/dev/null || skip "man is not installed (Debian package man-db)"
for page in $(cd "$man_dir" && ls *.[135]); do
  man --warnings -l "$man_dir/$page" 2>warnings.txt >/dev/null || fail "$page does not render"
  [ ! -s warnings.txt ] || fail "$page: $(cat warnings.txt)"
done
# options_of HELP_ARGS...: the long options that `dlprep HELP_ARGS --help` lists.
options_of() {
  dlprep "$@" --help | grep -Eo '^ +(-[a-zA-Z],)?--[a-z][a-z-]*' | grep -Eo -- '--[a-z-]+' | sort -u
}
# man_options PAGE: the long options a page mentions (roff writes \-\-name), outside the
# example blocks (.nf/.fi), which may show other tools' options (sbatch --array).
man_options() {
  sed '/^\.nf/,/^\.fi/d; s/\\-/-/g' "$man_dir/$1" | grep -Eo -- '--[a-z][a-z-]*' | sort -u
}
# all_commands [PREFIX...]: "" and every command and subcommand path, one per line.
all_commands() {
  echo "$*"
  local sub
  for sub in $(dlprep "$@" --help | sed -n '/^Subcommands:/,/^$/p' | grep -Eo '^  [a-z][a-z0-9-]*'); do
    all_commands "$@" "$sub"
  done
}
# Every long option of every command, gathered once.
all_options=$(all_commands | while read -r cmd; do options_of $cmd; done | sort -u) ||
  fail "cannot list the options of every command"
check_page() {
  local page=$1
  shift
  # --help is on every command and documented once, in dlprep(1).
  local listed=$(for cmd in "$@"; do options_of $cmd; done | grep -vx -- --help | sort -u)
  local documented=$(man_options "$page")
  # (here-strings, not pipes: grep -q exits early, and pipefail would count the writer's SIGPIPE)
  for opt in $listed; do
    grep -qx -- "$opt" <<<"$documented" || fail "$page does not document $opt"
  done
  # Every option the page names exists somewhere in dlprep.
  for opt in $documented; do
    grep -qx -- "$opt" <<<"$all_options" || fail "$page names $opt, which no command has"
  done
}
check_page dlprep.1 ""
check_page dlprep-info.1 info
check_page dlprep-l3.1 "l3 encode" "l3 decode" "l3 verify" "l3 bench"
check_page dlprep-convert-dataset.1 convert-dataset
check_page dlprep-dataset.1 "dataset info" "dataset verify" "dataset merge"
check_page dlprep-profile-mix.1 profile-mix
check_page dlprep-criteo-preprocess.1 criteo-preprocess
