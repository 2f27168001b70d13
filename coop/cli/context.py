"""The state every command shares: the global options, and the `Services` built from them on first use.

Kept apart from `app.py` so command modules can import it without importing the root app (which imports them).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from coop.config.loading import Config
    from coop.memory.embedder import Embedder
    from coop.memory.storage.interface import Backend, UserStore
    from coop.services import Services


@dataclass
class AppContext:
    """The global options, and the parts commands need, built lazily by `coop.services`."""

    config_path: str | None = None
    user: str | None = None
    debug: bool = False
    _config: "Config | None" = field(default=None, repr=False)
    _services: "Services | None" = field(default=None, repr=False)

    def config(self) -> "Config":
        if self._config is None:
            from coop.config.loading import load_config
            from coop.privacy.secrets import register_environment

            config = load_config(self.config_path)
            self._warn_unknown_variables()
            # the configured key variables' values are masked in whatever this command writes or prints
            register_environment(names=(config.model.api_key_env, config.memory.embedder.api_key_env))
            self._config = config
        return self._config

    @staticmethod
    def _warn_unknown_variables() -> None:
        """A `COOP_*` variable coop does not read is said once, on stderr, with what it may have meant."""
        import os

        from coop import output
        from coop.config.loading import unknown_variables

        for name, hint in unknown_variables(os.environ):
            output.warn(f"the environment variable {name} is not one coop reads; it is ignored", hint)

    def services(self) -> "Services":
        if self._services is None:
            from coop import output
            from coop.services import Services

            self._services = Services(self.config(), self.user, warn=output.warn)
        return self._services

    def use_config(self, config: "Config") -> None:
        """Serve this command with a changed config (`coop chat --model`), before anything is built from it."""
        self._config = config
        self._services = None

    def user_id(self, override: str | None = None) -> str:
        return self.services().user_id(override)

    def store(self) -> "Backend":
        return self.services().store()

    def memory(self, user: str | None = None) -> "UserStore":
        return self.services().memory(user)

    def embedder(self) -> "Embedder | None":
        return self.services().embedder()

    def close(self) -> None:
        if self._services is not None:
            self._services.close()


def state(ctx: typer.Context) -> AppContext:
    obj = ctx.find_object(AppContext)
    assert obj is not None, "the root callback sets the context"
    return obj


_own_process = False


@contextlib.contextmanager
def claiming_process() -> Iterator[None]:
    """Held by the console entry point (`app.main`) while it runs: coop is the program, and may end its process
    early. A command run inside another program (the tests' CLI runner, a host embedding coop, or that program
    after it called `main` once) never ends that process."""
    global _own_process
    _own_process = True
    try:
        yield
    finally:
        _own_process = False


def own_process() -> bool:
    return _own_process
