"""The root `coop` command: global options, the shared context, and the one place errors become exit codes.

Sub-apps (`memory`, `check`, `init`) are joined here. Heavy imports (apsw, numpy, fastembed, litellm) happen
inside commands, so `coop --help` stays fast.
"""

from __future__ import annotations

import getpass
import os
import sys
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Optional

import click
import typer
from typer.core import TyperGroup

from coop import __version__
from coop.errors import CoopError, ExitCode

if TYPE_CHECKING:
    from coop.config import Config
    from coop.memory.db import Database
    from coop.memory.embed import Embedder
    from coop.memory.store import UserMemory


@dataclass
class AppContext:
    """What every command needs, built lazily from the global options."""

    config_path: str | None = None
    user: str | None = None
    debug: bool = False
    _config: "Config | None" = field(default=None, repr=False)
    _db: "Database | None" = field(default=None, repr=False)
    _embedder_loaded: bool = field(default=False, repr=False)
    _embedder: "Embedder | None" = field(default=None, repr=False)

    def config(self) -> "Config":
        if self._config is None:
            from coop.config import load_config

            self._config = load_config(self.config_path)
        return self._config

    def user_id(self, override: str | None = None) -> str:
        """`--user` on the command, then the global `--user`, then `chat.user`, then the OS user name."""
        for candidate in (override, self.user, self.config().chat.user):
            if candidate:
                return candidate
        try:
            return getpass.getuser() or "default"
        except Exception:
            return "default"

    def db(self) -> "Database":
        if self._db is None:
            from coop.config import resolve_db_path
            from coop.memory.db import open_database

            config = self.config()
            self._db = open_database(resolve_db_path(config), busy_timeout_ms=config.memory.busy_timeout_ms)
        return self._db

    def memory(self, user: str | None = None) -> "UserMemory":
        from coop.memory.store import MemoryStore

        return MemoryStore(self.db()).user(self.user_id(user))

    def embedder(self) -> "Embedder | None":
        """The configured embedder, loaded once; when it cannot load, say so once and carry on without it."""
        if not self._embedder_loaded:
            from coop.cli import output
            from coop.memory.embed import load_embedder

            status = load_embedder(self.config().memory.embedder)
            self._embedder, self._embedder_loaded = status.embedder, True
            if status.embedder is None:
                output.warn(f"no embedder: {status.error}; using full-text search only", status.hint)
        return self._embedder

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class CoopGroup(TyperGroup):
    """Turns a `CoopError` anywhere below into its one-line message, hint and exit code; `--debug` adds the
    traceback. Ctrl-C exits 130."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CoopError as exc:
            from coop.cli import output

            if _debug(ctx):
                traceback.print_exc()
            output.error(exc)
            raise typer.Exit(int(exc.exit_code)) from None
        except KeyboardInterrupt:
            print(file=sys.stderr)
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        finally:
            if isinstance(ctx.obj, AppContext):
                ctx.obj.close()


def _debug(ctx: click.Context) -> bool:
    return bool(getattr(ctx.obj, "debug", False)) or bool(os.environ.get("COOP_DEBUG"))


app = typer.Typer(cls=CoopGroup, name="coop", no_args_is_help=True, add_completion=False,
                  pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="coop: a terminal assistant that remembers. Memory lives in one local SQLite file.")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"coop {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    config: Annotated[Optional[str], typer.Option("--config", envvar="COOP_CONFIG", metavar="PATH",
                                                  help="config file (default: ./coop.toml, then the user config)")] = None,
    user: Annotated[Optional[str], typer.Option("--user", metavar="ID", help="whose memory (default: chat.user, "
                                                "then the OS user name)")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="show tracebacks on errors")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="print the version and exit")] = False,
) -> None:
    ctx.obj = AppContext(config_path=config, user=user, debug=debug)


def state(ctx: typer.Context) -> AppContext:
    obj = ctx.find_object(AppContext)
    assert obj is not None, "the root callback sets the context"
    return obj


def _register() -> None:
    from coop.cli import chat, check, init, memory

    app.command("chat")(chat.chat)
    app.add_typer(memory.app, name="memory")
    app.command("check")(check.check)
    app.command("init")(init.init)


_register()


def main() -> None:
    app(prog_name="coop")
