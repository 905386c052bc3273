"""The module paths of trialrun's first layout, kept importable after the move into stage packages.

`trialrun.results`, `trialrun.runner` and the rest were public modules at the package root; they now live in
`report/`, `run/` and `suite/`. `import trialrun.results` and `from trialrun.runner import evaluate` still work and
give the SAME module object as the new path (not a copy that monkeypatching or isinstance would tell apart). The
package's `__getattr__` serves `trialrun.results` as an attribute; the finder here serves it to the import system.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

#: old name (under `trialrun.`) -> where the module lives now
MOVED: dict[str, str] = {
    "results": "report.results", "metrics": "report.metrics", "compare": "report.compare",
    "journal": "report.journal", "store": "report.store",
    "runner": "run.runner", "executor": "run.executor",
    "config": "suite.config", "judge": "suite.judge",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `trialrun.<old name>` and loads it as the module at its new place."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        if package != "trialrun" or name not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(f"trialrun.{MOVED[spec.name.rpartition('.')[2]]}")
        spec.loader_state = module.__spec__  # its own, which the import system is about to replace by `spec`
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the module ran at its new place); only its own spec is put back, which the import system
        replaced by the alias's (pickling, `importlib.reload` and Ray's workers go by `__spec__.name`)."""
        module.__spec__ = module.__spec__.loader_state if module.__spec__ is not None else None


def install() -> None:
    """Put the finder on `sys.meta_path` once (a re-import of trialrun does not add a second)."""
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.append(_Alias())
