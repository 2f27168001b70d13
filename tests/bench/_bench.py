"""Loading a benchmark script (bench/NAME.py) as a module, for the tests that check a benchmark itself."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests import REPO

BENCH_DIR = REPO / "bench"


def load_bench(name: str) -> ModuleType:
    """bench/NAME.py as the module `bench_NAME` (loaded once): not as NAME, which may shadow a standard module
    (`profile`)."""
    module_name = f"bench_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, BENCH_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # its dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module
