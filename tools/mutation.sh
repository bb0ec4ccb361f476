#!/usr/bin/env bash
# Mutation testing with mutmut (not part of CI: it takes tens of minutes on 2 cores).
#
#   pip install ".[test,mutation]" && pip uninstall -y mpc-pca   # deps only (see docs/howto/mutation-testing.md)
#   tools/mutation.sh [MAX_CHILDREN]
#
# Scope and test selection: [tool.mutmut] in pyproject.toml. mutmut copies the
# packages into ./mutants, runs the selected tests once to learn which tests
# reach which function, then runs, for every mutant, only those tests. The
# score printed at the end is killed / (killed + survived + timeouts + ...),
# with the surviving mutants listed (inspect one with `mutmut show NAME`).
set -euo pipefail
cd "$(dirname "$0")/.."
# mutmut imports the mutated copy in ./mutants; an installed package would shadow it.
if (cd / && python -c "import protocols" 2>/dev/null); then
    echo "tools/mutation.sh: the package is installed in this environment ($(cd / && python -c 'import protocols; print(protocols.__file__)'));" >&2
    echo "mutmut would test it instead of the mutants. Use a venv with the dependencies only (docs/howto/mutation-testing.md)." >&2
    exit 2
fi
children="${1:-2}"
rm -rf mutants
log="$(mktemp)"
mutmut run --max-children "$children" >"$log" 2>&1 || true
if grep -q "failed to collect stats" "$log"; then
    echo "tools/mutation.sh: mutmut's clean run of the selected tests failed, so nothing was measured:" >&2
    tr '\r' '\n' < "$log" | grep -v "Running clean tests\|Generating mutants" | tail -30 >&2
    exit 1
fi
mutmut results --all true > mutants/results.txt 2>&1 || true
python - <<'PY'
import collections, re
from pathlib import Path
lines = Path("mutants/results.txt").read_text().splitlines()
status = collections.Counter()
survivors = []
for line in lines:
    m = re.match(r"\s*(\S+): (.+)$", line)
    if not m:
        continue
    status[m.group(2)] += 1
    if m.group(2) == "survived":
        survivors.append(m.group(1))
tested = sum(n for s, n in status.items() if s not in ("skipped", "not checked"))
killed = status["killed"] + status["timeout"]
print(dict(status))
print(f"mutation score: {killed}/{tested} = {100 * killed / max(tested, 1):.1f} %")
print("survivors:", *survivors, sep="\n  ")
PY
