"""`coop admin`: a Postgres server's owner's commands: the schema, who reaches whose memory, the vector indexes.

They run as the role that owns coop's tables (`--url`, else the configured server), the one role coop never chats
as; each person connects as a login role of their own, mapped here to their memory (`postgres/people.py`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from coop import output
from coop.cli.context import state
from coop.errors import UsageError

if TYPE_CHECKING:
    from coop.memory.storage.interface import ServerAdmin

app = typer.Typer(help="A Postgres server's administration, as the owner of coop's tables: the schema, people's "
                       "roles, vector indexes.", no_args_is_help=True)
person_app = typer.Typer(help="Who reaches whose memory: login roles mapped to people.", no_args_is_help=True)
app.add_typer(person_app, name="person")

UrlOption = Annotated[str | None, typer.Option("--url", help="the owner's postgresql:// URL (default: the configured "
                                                              "server, COOP_DATABASE_URL or memory.url)")]


@contextmanager
def _owner_store(ctx: typer.Context, url: str | None) -> Iterator["ServerAdmin"]:
    """The server as the tables' owner, its schema brought up to date."""
    from coop.config.loading import resolve_store
    from coop.memory.storage.backends import open_server_admin

    if not url:
        backend, url = resolve_store(state(ctx).config())
        if backend != "postgres":
            raise UsageError("coop admin manages a Postgres server, and coop is set to a SQLite file",
                             hint="pass --url postgresql://OWNER@HOST/DB, or set memory.backend = 'postgres'")
    store = open_server_admin(url)
    try:
        yield store
    finally:
        store.close()


@app.command("migrate")
def migrate(ctx: typer.Context, url: UrlOption = None) -> None:
    """Bring coop's schema up to date and grant every mapped role the rows' rights."""
    with _owner_store(ctx, url) as store:
        store.grant_people()
        output.say(f"schema {store.schema_version()} at {store.location}; people's roles granted")


@person_app.command("add")
def person_add(
    ctx: typer.Context,
    user: Annotated[str, typer.Argument(help="the person's user id ('*': every person, for an operator's service)")],
    role: Annotated[str | None, typer.Option("--role", help="the login role (default: the user id)")] = None,
    create_role: Annotated[bool, typer.Option("--create-role", help="create the login role (needs CREATEROLE)")
                           ] = False,
    password_stdin: Annotated[bool, typer.Option("--password-stdin", help="the new role's password, read from "
                                                 "stdin's first line")] = False,
    url: UrlOption = None,
) -> None:
    """Let a login role reach one person's memory, and nobody else's."""
    from coop.memory.storage.items import EVERYONE

    password = sys.stdin.readline().rstrip("\r\n") if password_stdin else None
    if password_stdin and not create_role:
        raise UsageError("--password-stdin sets the password of a role coop creates", hint="add --create-role")
    login = role or user
    with _owner_store(ctx, url) as store:
        store.add_person(user, login, create=create_role, password=password)
    whose = "every person's memory" if user == EVERYONE else f"the memory of {user}"
    output.say(f"the database role {login} reaches {whose}")
    output.info(f"{login} connects with COOP_DATABASE_URL=postgresql://{login}@HOST/DB and memory.backend = "
                "'postgres'")


@person_app.command("remove")
def person_remove(
    ctx: typer.Context,
    user: Annotated[str, typer.Argument(help="the person's user id")],
    role: Annotated[str | None, typer.Option("--role", help="only this login role (default: every role)")] = None,
    url: UrlOption = None,
) -> None:
    """Stop a role (or every role) reaching a person's memory; the memory stays."""
    with _owner_store(ctx, url) as store:
        gone = store.remove_person(user, role)
    if not gone:
        raise UsageError(f"no role is mapped to {user!r}", hint="see `coop admin person list`")
    output.say(f"{gone} role{'s' * (gone != 1)} no longer reach{'es' * (gone == 1)} the memory of {user}")


@person_app.command("list")
def person_list(ctx: typer.Context, url: UrlOption = None) -> None:
    """Every login role and whose memory it reaches."""
    with _owner_store(ctx, url) as store:
        mapped = store.people()
    if not mapped:
        output.info("no role reaches anyone's memory yet: coop admin person add NAME --create-role")
    for login, user in mapped:
        output.say(f"{login} {user}", output.out())


@app.command("index")
def index(ctx: typer.Context, url: UrlOption = None) -> None:
    """Build each person's vector index once they have enough vectors for one to pay (a person's role may not
    build one itself; their searches are exact, and slower, until then)."""
    with _owner_store(ctx, url) as store:
        built = store.build_vector_indexes()
    output.say(f"{built} vector index{'es' * (built != 1)} built")
