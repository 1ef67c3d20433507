# Phase timing for scripts/test.sh and scripts/demo.sh (sourced): `phase_done NAME` ends the running phase,
# `phase_add NAME SECONDS` records one timed elsewhere, `phase_report LABEL` prints them all with the total.
phases=()
phase_started=$SECONDS

_min_sec() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }

phase_add() {
  phases+=("$1 $(_min_sec "$2")")
}

phase_done() {
  phase_add "$1" $((SECONDS - phase_started))
  phase_started=$SECONDS
}

phase_report() {
  ((${#phases[@]})) || return 0
  local joined
  joined="$(printf '%s, ' "${phases[@]}")"
  printf '\n[%s] phases (min:s): %s; total %s\n' "$1" "${joined%, }" "$(_min_sec $SECONDS)" >&2
}
