#!/usr/bin/env bash
# The FLA model against FLA's real CachedAutotuner (docs/FIDELITY.md, "The FLA model against
# FLA's real code"): runs tests/replay/engine/fla_fidelity_test.cc's cases and prints one row each,
# per seed F (a finding) or . (none), model then real code, with the kinds and, per kind, the
# threads and places. Needs build/py's environments (tools/scripts/python-envs.sh); a case
# whose environment is missing is skipped and says why.
# Usage: tools/scripts/fidelity-fla.sh [BUILD_DIR] [GTEST_FILTER]
#   RERACE_PY_ROOT=DIR  another set of environments than the build's
set -uo pipefail
build=${1:-build}
filter=${2:-*FlaModelAgainstRealCode*}
bin="$build/tests/python_engine_test"
[ -x "$bin" ] || { echo "fidelity-fla: $bin is missing (cmake --build $build --target python_engine_test)"; exit 66; }
printf '| fla-core | FLA_CACHE_MODE | fix | steps | model, per seed | real code, per seed | per kind |\n|---|---|---|---|---|---|---|\n'
out=$(RERACE_SOURCE=$PWD RERACE_BIN=$PWD/$build/bin "$bin" --gtest_filter="$filter" 2>&1)
rc=$?
grep -E '^\| ' <<<"$out"
grep -E '^\[  (SKIPPED|FAILED) \]' <<<"$out" | sort -u >&2
grep -A1 'Skipped$' <<<"$out" | grep -vE 'Skipped$|^--$' | sort -u | sed 's/^/skipped: /' >&2
exit $rc
