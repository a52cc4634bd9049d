#!/usr/bin/env bash
# Builds VoiceEngine's libFuzzer targets and runs them on their seed corpora.
#
#   Fuzz/run.sh [--time SECONDS] [--parallel N] [--check] [--build-only] [target ...]
#
# Targets: rtp rtcp srtp sdes sdp wav pcap trace sip stun (all when none is named).
#   --time SECONDS   how long each target fuzzes (default 600, the figure RELIABILITY.md reports).
#   --parallel N     targets fuzzing at once (default 1; each uses one core).
#   --check          no fuzzing: run each target once over its seed corpus, its saved corpus and its crash
#                    artifacts (a quick regression check, a few seconds).
#   --build-only     build and stop.
# Environment: SWIFT (default swift), FUZZ_SCRATCH (SwiftPM scratch path, default Fuzz/.build),
#              FUZZ_WORK (generated corpora, crashes and logs, default Fuzz/work; git-ignored).
#
# Each target is an executable built with `-sanitize=fuzzer,address -parse-as-library`: libFuzzer provides main,
# AddressSanitizer catches memory errors (in the Swift code and in libsrtp, which is compiled with the same
# instrumentation), and Swift's own traps (overflow,
# out-of-bounds, force unwrap, precondition) end the run as a crash. A crash leaves its input in
# $FUZZ_WORK/<target>/crashes/ and this script exits non-zero. Reproduce one with
#   Fuzz/.build/release/fuzz-<target> Fuzz/work/<target>/crashes/<file>
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SWIFT="${SWIFT:-swift}"
scratch="${FUZZ_SCRATCH:-$here/.build}"
work="${FUZZ_WORK:-$here/work}"
all_targets=(rtp rtcp srtp sdes sdp wav pcap trace sip stun)
all_targets+=(client)  # push payloads and registration-service answers
seconds=600
parallel=1
check=0
build_only=0
targets=()

while [ $# -gt 0 ]; do
    case "$1" in
        --time) seconds="$2"; shift 2 ;;
        --parallel) parallel="$2"; shift 2 ;;
        --check) check=1; shift ;;
        --build-only) build_only=1; shift ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
    [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "unknown target '$t' (known: ${all_targets[*]})" >&2; exit 2; }
done

# Longest input per target: a UDP datagram for packets, larger for files.
max_len() {
    case "$1" in
        rtp|rtcp|srtp|stun) echo 1500 ;;
        sdes) echo 512 ;;
        sdp|trace|sip) echo 4096 ;;
        client) echo 2048 ;;
        wav) echo 8192 ;;
        pcap) echo 16384 ;;
    esac
}

# -Xcc: the C targets built from source (libsrtp in CSRTP) get coverage feedback and AddressSanitizer too.
build_flags=(-c release --package-path "$here" --scratch-path "$scratch"
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xcc -fsanitize=fuzzer-no-link,address)
for t in "${targets[@]}"; do
    echo "== building fuzz-$t"
    "$SWIFT" build "${build_flags[@]}" --product "fuzz-$t"
done
bin="$("$SWIFT" build "${build_flags[@]}" --show-bin-path)"
[ "$build_only" -eq 0 ] || exit 0

run_one() {
    local t="$1"
    local dir="$work/$t"
    mkdir -p "$dir/corpus" "$dir/crashes"
    local dict=()
    [ -f "$here/dict/$t.dict" ] && dict=("-dict=$here/dict/$t.dict")
    local inputs=("$dir/corpus" "$here/corpus/$t")
    if [ "$check" -eq 1 ]; then
        # -runs=0 over folders: every input in them is executed once (crash inputs included), nothing is mutated.
        "$bin/fuzz-$t" -runs=0 "${inputs[@]}" "$dir/crashes" >"$dir/check.log" 2>&1 \
            && echo "fuzz-$t: check passed" || { echo "fuzz-$t: CHECK FAILED (see $dir/check.log)"; return 1; }
        return 0
    fi
    # The first corpus folder receives new inputs; the seed corpus (tracked) is read only.
    "$bin/fuzz-$t" -max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$dir/crashes/" "${dict[@]}" "${inputs[@]}" \
        >"$dir/fuzz.log" 2>&1
    local status=$?
    local runs cov
    runs="$(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$dir/fuzz.log" | tail -1 || true)"
    cov="$(grep -E '^#[0-9]+' "$dir/fuzz.log" | tail -1 | grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' || true)"
    if [ $status -eq 0 ]; then
        echo "fuzz-$t: no crash; ${runs:-?}s; ${cov:-?} (log $dir/fuzz.log)"
    else
        echo "fuzz-$t: CRASH (exit $status); input in $dir/crashes/, log $dir/fuzz.log"
        return 1
    fi
}

# Swift's own crash backtracer and AddressSanitizer both hook fatal signals; with both, a Swift trap is followed by
# a spurious ASan report from the backtracer's memory reader. Let libFuzzer/ASan report (they symbolize too).
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=no}"
export -f run_one max_len
export here work bin check seconds
set +e
printf '%s\n' "${targets[@]}" | xargs -P "$parallel" -I{} bash -c 'run_one "$@"' _ {}
status=$?
set -e
[ $status -eq 0 ] || { echo "fuzzing found a problem (see above)" >&2; exit 1; }
