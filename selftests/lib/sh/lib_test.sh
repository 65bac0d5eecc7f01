#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test of lib.sh's ktap_perf_check, the rule that turns a throughput
# check into PASS, FAIL or SKIP on a host whose speed changes during a run.
# The reference flow and the checks are stubs that replay scripted
# results, so every branch is exercised without a VM. KTAP on stdout.

set -u
. "$(dirname "$0")/../../lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Scripted values: one per line, consumed in order (the functions run in
# subshells, so the state is kept in files).
pop() { # pop NAME -> next scripted value of NAME, and count the call
	local f=$tmp/$1 v
	v=$(head -n1 "$f" 2>/dev/null)
	sed -i 1d "$f" 2>/dev/null
	echo x >>"$tmp/$1.calls"
	echo "$v"
}
calls() { [ -f "$tmp/$1.calls" ] && wc -l <"$tmp/$1.calls" || echo 0; }

perf_reference_mbps() { pop ref; }
stub_check() {
	case "$(pop check)" in
	pass) return 0 ;;
	skip) echo "the flow carried 40 Mbit/s alone"; return 4 ;;
	*) return 1 ;;
	esac
}
stub_rerun() { pop rerun >/dev/null; RERUN_RAN=yes; echo "rerun output"; }
check_sees_rerun() { [ "${RERUN_RAN:-}" = yes ]; }

# case REFS CHECKS [RERUN]: runs ktap_perf_check on a fresh per-boot gate;
# REFS are the reference's Mbit/s in the order taken (first the gate),
# CHECKS the check's pass/fail in order. Prints the inner KTAP output.
case_run() {
	rm -f "$tmp"/*
	printf '%s\n' $1 >"$tmp/ref"
	printf '%s\n' $2 >"$tmp/check"
	(
		PERF_GATE_FILE=$tmp/gate
		KTAP_TESTNO=1
		ktap_perf_check inner "${3:-stub_check}" ${4:-}
	)
}

expect() { # expect NAME OUTPUT REGEX [calls of check] [calls of ref] [calls of rerun]
	local name=$1 out=$2 re=$3 ok=1
	grep -Eq "$re" <<<"$out" || ok=0
	[ -z "${4:-}" ] || [ "$(calls check)" -eq "$4" ] || ok=0
	[ -z "${5:-}" ] || [ "$(calls ref)" -eq "$5" ] || ok=0
	[ -z "${6:-}" ] || [ "$(calls rerun)" -eq "$6" ] || ok=0
	if [ $ok -eq 1 ]; then
		ktap_test_pass "$name"
	else
		ktap_print_msg "got (check $(calls check), ref $(calls ref), rerun $(calls rerun) calls):"
		ktap_print_msg_lines <<<"$out"
		ktap_test_fail "$name"
	fi
}

ktap_print_header

ktap_set_plan 12

out=$(case_run "80" "pass")
expect slow_host_skips_without_running_the_check "$out" \
	'^ok 1 inner # SKIP VM too slow.*80 Mbit/s' 0 1 0

out=$(case_run "92" "pass" stub_check stub_rerun)
expect pass_needs_no_second_reference "$out" '^ok 1 inner$' 1 1 0

out=$(case_run "92 70" "fail" stub_check stub_rerun)
expect failure_while_host_slowed_is_a_skip "$out" \
	'^ok 1 inner # SKIP host slowed down.*70 Mbit/s now, 92 at the start' 1 2 0

out=$(case_run "92 91" "fail")
expect failure_on_a_fast_host_without_rerun_fails "$out" '^not ok 1 inner # reference cubic 91' 1 2 0

out=$(case_run "92 91" "fail pass" stub_check stub_rerun)
expect second_run_that_passes_is_a_pass "$out" \
	'passed on the second run' 2 2 1

out=$(case_run "92 91 90" "fail fail" stub_check stub_rerun)
expect two_failures_on_a_fast_host_fail "$out" '^not ok 1 inner # reference cubic 90' 2 3 1

out=$(case_run "92 91 60" "fail fail" stub_check stub_rerun)
expect second_failure_while_host_slowed_is_a_skip "$out" '^ok 1 inner # SKIP host slowed down.*60' 2 3 1

out=$(case_run "92 91" "" check_sees_rerun stub_rerun)
expect rerun_sets_what_the_check_reads "$out" '^ok 1 inner$' "" 2 1

out=$(case_run "92 91" "fail fail" stub_check stub_rerun)
expect rerun_output_is_logged "$out" '^# rerun output$'

out=$(case_run "92" "skip" stub_check stub_rerun)
expect check_that_cannot_measure_skips "$out" \
	'^ok 1 inner # SKIP the flow carried 40 Mbit/s alone' 1 1 0

# wait_files: returns once every file exists, 1 after SECS otherwise.
t_wait_files_all_present() {
	rm -f "$tmp"/r1 "$tmp"/r2
	(sleep 0.3; touch "$tmp/r1"; sleep 0.3; touch "$tmp/r2") &
	wait_files 5 "$tmp/r1" "$tmp/r2" && [ -e "$tmp/r2" ]
}
t_wait_files_times_out() {
	rm -f "$tmp"/r1 "$tmp"/r3
	touch "$tmp/r1"
	! wait_files 1 "$tmp/r1" "$tmp/r3"
}
ktap_check "wait_files_returns_once_all_exist" t_wait_files_all_present
ktap_check "wait_files_fails_when_one_is_missing" t_wait_files_times_out

ktap_finished
