"""Per-test cost, when GEMINI_RELAY_TEST_CPU_REPORT names a file: each test's wall time and the CPU seconds of the
worker and of the children it reaped during the test (servers, hosts and CLIs the harness started and waited for),
one JSON line per test appended to that file. The suite's time budget is CPU on a 2-core machine: this ranks who
spends it (`python -m tests.cpu_report FILE` prints the ranking)."""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path

import pytest

REPORT = os.environ.get("GEMINI_RELAY_TEST_CPU_REPORT", "")


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None]:
    if not REPORT:
        yield
        return
    wall, own, children = time.monotonic(), _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    yield
    row = {
        "test": item.nodeid,
        "wall": round(time.monotonic() - wall, 3),
        "self": round(_cpu(resource.RUSAGE_SELF) - own, 3),
        "children": round(_cpu(resource.RUSAGE_CHILDREN) - children, 3),
    }
    with Path(REPORT).open("a", encoding="utf-8") as out:  # one short line per write: workers' appends interleave whole
        out.write(json.dumps(row) + "\n")


def main(path: str, top: int = 40) -> None:
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for row in rows:
        tally = files[row["test"].split("::")[0]]
        tally[0] += row["self"] + row["children"]
        tally[1] += row["wall"]
        tally[2] += 1
    cpu = sum(r["self"] + r["children"] for r in rows)
    print(f"{len(rows)} tests: cpu {cpu:.0f} s (children {sum(r['children'] for r in rows):.0f} s), "
          f"wall {sum(r['wall'] for r in rows):.0f} s")  # fmt: skip
    print("\n# files by cpu")
    for name, (c, w, n) in sorted(files.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"{c:8.1f} cpu {w:8.1f} wall {int(n):4d} tests  {name}")
    print("\n# tests by cpu")
    for row in sorted(rows, key=lambda r: -(r["self"] + r["children"]))[:top]:
        print(f"{row['self'] + row['children']:8.1f} cpu {row['wall']:8.1f} wall  {row['test']}")
    print("\n# tests by wall")
    for row in sorted(rows, key=lambda r: -r["wall"])[:top]:
        print(f"{row['self'] + row['children']:8.1f} cpu {row['wall']:8.1f} wall  {row['test']}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:3]))
