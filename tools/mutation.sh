#!/usr/bin/env bash
# Mutation testing with mutmut (not part of CI: it takes tens of minutes on 2 cores).
#
#   pip install mutmut            # 3.x; the "mutation" extra of pyproject.toml
#   tools/mutation.sh [MAX_CHILDREN]
#
# Scope and test selection: [tool.mutmut] in pyproject.toml. mutmut copies the
# packages into ./mutants, runs the selected tests once to learn which tests
# reach which function, then runs, for every mutant, only those tests. The
# score printed at the end is killed / (killed + survived + timeouts + ...),
# with the surviving mutants listed (inspect one with `mutmut show NAME`).
set -euo pipefail
cd "$(dirname "$0")/.."
children="${1:-2}"
rm -rf mutants
mutmut run --max-children "$children" >/dev/null 2>&1 || true
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
