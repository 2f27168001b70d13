"""coop's tests, a package mirroring coop's packages (tests/memory/storage/ tests coop/memory/storage/, and so on).

Every directory is a package, so pytest imports each test file by its dotted name and puts the repo root, not a
test directory, on sys.path: helpers and other test files are imported as `tests.<...>` from any depth
(`from tests.scripted_model import ScriptedModel`). Fixtures live in tests/conftest.py and apply to every
subdirectory. `REPO` is the checkout's root, for tests that read the README, bench/ or coop/.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
