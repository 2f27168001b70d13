"""The storage seam's import contract stays whole: a module added to coop/memory/storage/ is forbidden above
storage until it is named as part of the seam (mypy checks the backends against the Protocols; import-linter, in
.ci/run, checks who imports what; this checks that its list of what is behind the seam is every module)."""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path

import coop.memory.storage as storage

ROOT = Path(__file__).resolve().parents[3]
SEAM = {"interface", "items", "backends"}  # what the code above storage may import


def _linter() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def test_every_storage_module_but_the_seam_is_forbidden_above_storage():
    modules = {module.name for module in pkgutil.iter_modules(storage.__path__)}
    [contract] = [c for c in _linter()["contracts"] if c["name"].startswith("The storage seam")]
    forbidden = {name.removeprefix("coop.memory.storage.") for name in contract["forbidden_modules"]}
    assert modules >= SEAM
    assert forbidden == modules - SEAM


def test_type_only_imports_count():
    """A module that names a type behind the seam (under `if TYPE_CHECKING:`) depends on it all the same."""
    assert _linter()["exclude_type_checking_imports"] is False
