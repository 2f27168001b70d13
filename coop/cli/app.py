"""The root `coop` command: global options, the shared context, and the one place errors become exit codes.

Sub-apps (`memory`, `check`, `init`) are joined here. Heavy imports (apsw, numpy, fastembed, litellm) happen
inside commands, so `coop --help` stays fast.
"""

from __future__ import annotations

import gc
import os
import sys
import traceback
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer._click import exceptions as _click_exceptions
from typer.core import TyperGroup

from coop import __version__
from coop.cli.context import AppContext, claiming_process
from coop.errors import CoopError, ExitCode

if TYPE_CHECKING:
    # This typer runs on its own copy of click (`typer._click`): the group's context is that copy's Context,
    # not `click.Context`.
    from typer._click import Context


def _show_usage_error(self: Any, file: Any = None) -> None:
    """click prints a usage error as three lines (usage, "Try ... --help", the error); coop's errors are one
    `error:` line and a `hint:`, the same for a missing argument or a bad option value (exit code 2 as before)."""
    from coop import output

    command = self.ctx.command_path if self.ctx is not None else "coop"
    output.error(CoopError(self.format_message(), hint=f"see `{command} --help`"))


_click_exceptions.UsageError.show = _show_usage_error  # type: ignore[method-assign]  # typer calls show()

GLOBAL_FLAGS = ("--debug",)
GLOBAL_OPTIONS = ("--config",)  # take a value


def hoist_global_options(args: list[str]) -> list[str]:
    """`coop check --config X` and `coop memory search q --debug` mean what `coop --config X check` means:
    the root's `--config` and `--debug`, written after the subcommand, are moved in front of it; `--config`
    with no value is a usage error saying it needs one, wherever it is written. Nothing after a `--` is touched
    (there they are text)."""
    front: list[str] = []
    rest: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            rest += args[index:]
            break
        if arg in GLOBAL_FLAGS:
            front.append(arg)
        elif arg in GLOBAL_OPTIONS and index + 1 < len(args):
            front += [arg, args[index + 1]]
            index += 1
        elif arg in GLOBAL_OPTIONS:  # last, with no value
            raise _click_exceptions.BadOptionUsage(arg, f"option '{arg}' needs a value: {arg} PATH")
        elif arg.split("=", 1)[0] in GLOBAL_OPTIONS and "=" in arg:
            front.append(arg)
        else:
            rest.append(arg)
        index += 1
    return front + rest


class CoopGroup(TyperGroup):
    """Turns a `CoopError` anywhere below into its one-line message, hint and exit code; `--debug` adds the
    traceback. Ctrl-C exits 130. `--config` and `--debug` may come after the subcommand too."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(list(args)))

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except CoopError as exc:
            from coop import output

            if _debug(ctx):
                _print_traceback()
            output.error(exc)
            raise typer.Exit(int(exc.exit_code)) from None
        except KeyboardInterrupt:
            print(file=sys.stderr)
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        finally:
            if isinstance(ctx.obj, AppContext):
                ctx.obj.close()


def _print_traceback() -> None:
    """The current exception's traceback on stderr (--debug), with any API key in it masked."""
    from coop.privacy.secrets import mask

    sys.stderr.write(mask(traceback.format_exc()))
    sys.stderr.flush()


def _debug(ctx: Context) -> bool:
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
    config: Annotated[str | None, typer.Option("--config", envvar="COOP_CONFIG", metavar="PATH",
                                               help="config file (default: ./coop.toml, then the user config)")
                      ] = None,
    user: Annotated[str | None, typer.Option("--user", metavar="ID", help="whose memory (default: chat.user, "
                                                "then the OS user name)")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="show tracebacks on errors")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="print the version and exit")] = False,
) -> None:
    if user is not None and not user.strip():  # an unset variable in a script must not mean "the default user"
        raise typer.BadParameter("the user id is empty", param_hint="'--user'")
    from coop.privacy.secrets import register_environment

    register_environment()  # every *_API_KEY value is masked in whatever coop writes or prints from here on
    ctx.obj = AppContext(config_path=config, user=user, debug=debug)


def _register() -> None:
    # the memory_* modules (edit, list, recall, review, transfer, why) register their commands on memory.app
    from coop.cli import (  # noqa: F401
        admin,
        chat,
        check,
        config_cmd,
        embedder,
        init,
        mcp,
        memory,
        memory_edit,
        memory_list,
        memory_recall,
        memory_review,
        memory_transfer,
        memory_why,
    )

    app.command("chat")(chat.chat)
    memory.app.add_typer(embedder.app, name="embedder")
    app.add_typer(memory.app, name="memory")
    app.command("check")(check.check)
    app.command("init")(init.init)
    app.add_typer(config_cmd.app, name="config")
    app.add_typer(mcp.app, name="mcp")
    app.add_typer(admin.app, name="admin")


_register()


def main() -> None:
    """The console entry point. A bug (an exception that is not a `CoopError`) becomes one `error:` line and
    exit 1 rather than a traceback; `--debug` or `COOP_DEBUG` shows the traceback. Tests call `app` directly,
    so there such exceptions still propagate."""
    try:
        with claiming_process():
            app(prog_name="coop")
    except Exception as exc:  # SystemExit and KeyboardInterrupt are not Exceptions: they pass
        if "--debug" in sys.argv[1:] or os.environ.get("COOP_DEBUG"):
            _print_traceback()
        from coop import output

        output.error(CoopError(f"unexpected {type(exc).__name__}: {exc}",
                               hint="this is a bug in coop: run again with --debug for the traceback and report it"))
        sys.exit(int(ExitCode.ERROR))
    finally:
        # Everything is done: moving the objects litellm and the model left to the permanent generation spares
        # the interpreter's shutdown collection from walking them (1.3 s at exit after a chat, 0.07 s with it).
        gc.freeze()
