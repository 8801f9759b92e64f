"""``python tests/helpers/tune_run.py ARGS``: profiler-tui's command line with the audit's reading replaced by one
whose items name the ``tune`` pairs in ``PROFILER_TUI_TEST_TUNE`` (a JSON list of ``[key, path, value]``), so a
test decides which real sysfs files (a loop device's queue it made) ``--tune`` sets.  Everything else — the
run, the changes, the restore record, the signals — is the tool's own."""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.host.audit import Audit, Item

TUNE_ENV = "PROFILER_TUI_TEST_TUNE"


def fake_audit(target: str | None, cpus: Sequence[int] | None = None, **_: object) -> Audit:
    pairs = json.loads(os.environ.get(TUNE_ENV, "[]"))
    items = tuple(Item(key, None, value, "a test's setting", "warn", tune=((path, value),))
                  for key, path, value in pairs)
    return Audit(target, None, (0,), items, read_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))


if __name__ == "__main__":
    import app.host.audit

    app.host.audit.audit = fake_audit
    from app.cli.commands import main

    main(sys.argv[1:])
