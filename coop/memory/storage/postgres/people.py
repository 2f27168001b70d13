"""Who reaches whose memory on a Postgres server (migration m015): login roles mapped to user ids.

Row-level security lets a role reach a user's rows only when the tables' owner has mapped that role to that user
in `coop_people` (or to '*', every user: an operator's service). The owner is a separate role: it runs the
migrations and these commands (`coop admin`), reads everyone's rows, and coop will not chat as it, nor as a
superuser or a role that bypasses row-level security (`Access.unrestricted`). A superuser of the server can
still read everything: no policy binds one.
"""

from __future__ import annotations

from dataclasses import dataclass

from coop.errors import StoreError, UsageError
from coop.memory.storage.items import EVERYONE, check_user_id
from coop.memory.storage.postgres.connection import PgDatabase

ADMIN_HINT = "as the tables' owner: coop admin person add NAME --role ROLE"
# What a person's role may do with coop's tables: rows only, never the tables themselves.
_READ_ONLY = ("_migrations", "coop_schema")


@dataclass(frozen=True)
class Access:
    """The connected role and what row-level security lets it reach."""

    role: str
    superuser: bool
    bypasses_rls: bool
    owns_tables: bool  # the tables' owner, or a member of that role (it may SET ROLE to it)
    reach: tuple[str, ...]  # the user ids mapped to it ('*': all)

    @property
    def unrestricted(self) -> bool:
        """No policy binds this role: it reads every person's memory."""
        return self.superuser or self.bypasses_rls or self.owns_tables

    def may_reach(self, user_id: str) -> bool:
        return self.unrestricted or EVERYONE in self.reach or user_id in self.reach

    @property
    def sole_user(self) -> str | None:
        """The one user this role is mapped to, which it serves when no user is named."""
        return self.reach[0] if not self.unrestricted and len(self.reach) == 1 and self.reach[0] != EVERYONE \
            else None

    def why_unrestricted(self) -> str:
        what = ("is a superuser" if self.superuser else "bypasses row-level security" if self.bypasses_rls
                else "owns coop's tables")
        return f"the database role {self.role} {what}, so no policy keeps one person's memory from another"


def access(db: PgDatabase) -> Access:
    """What the connection's login role is and may reach (before m015, nothing is mapped)."""
    row = db.run("SELECT session_user, r.rolsuper, r.rolbypassrls, "
                 "pg_has_role(session_user, c.relowner, 'MEMBER'), to_regprocedure('coop_reachable()') IS NOT NULL "
                 "FROM pg_roles r, pg_class c WHERE r.rolname = session_user AND c.oid = to_regclass('messages')")
    if not row:  # no schema yet: whoever makes it will own it
        return Access(str(db.run("SELECT session_user")[0][0]), False, False, True, ())
    role, superuser, bypasses, owns, mapped = row[0]
    reach = tuple(db.run("SELECT coop_reachable()")[0][0]) if mapped else ()
    return Access(str(role), bool(superuser), bool(bypasses), bool(owns), reach)


def refuse_unreachable(found: Access, user_id: str) -> None:
    """A clear refusal when this role may not reach `user_id`'s memory (any `--user`, `'*'`, an MCP host's ids)."""
    if found.may_reach(user_id):
        return
    if not found.reach:
        raise UsageError(f"the database role {found.role} is mapped to no one's memory on this server",
                         hint=ADMIN_HINT)
    names = ", ".join(found.reach)
    raise UsageError(f"the database role {found.role} may reach only the memory of {names}, not {user_id!r}",
                     hint=f"drop --user (or use one of: {names}), or connect as {user_id}'s own role")


def _owner_only(db: PgDatabase) -> None:
    found = access(db)
    if not (found.owns_tables or found.superuser):
        raise StoreError(f"the database role {found.role} does not own coop's tables",
                         hint="run `coop admin` with the owner's URL (--url)")


def _quoted(db: PgDatabase, name: str) -> str:
    return str(db.run("SELECT quote_ident(%s)", (name,))[0][0])


def add_person(db: PgDatabase, user_id: str, role: str, *, create: bool = False, password: str | None = None) -> None:
    """Map `role` to `user_id`'s memory ('*': everyone's) and grant it the rows' rights; `create` makes the login
    role first (the owner needs CREATEROLE for that)."""
    _owner_only(db)
    if user_id != EVERYONE:
        user_id = check_user_id(user_id)
    exists = db.run("SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = %s", (role,))
    if exists and exists[0][0]:
        raise UsageError(f"the database role {role} is a superuser or bypasses row-level security",
                         hint="map an ordinary login role: no policy binds this one")
    if exists and db.run("SELECT pg_has_role(%s, relowner, 'MEMBER') FROM pg_class WHERE oid = 'messages'::regclass",
                         (role,))[0][0]:
        raise UsageError(f"the database role {role} owns coop's tables (or may become their owner)",
                         hint="make a separate login role for each person; the owner only administers")
    with db.atomic():
        if not exists:
            if not create:
                raise UsageError(f"there is no database role {role}", hint="add --create-role to make it")
            secret = "" if password is None else " PASSWORD " + str(
                db.run("SELECT quote_literal(%s)", (password,))[0][0])
            db.run(f"CREATE ROLE {_quoted(db, role)} LOGIN{secret}")
        db.run("INSERT INTO coop_people (role_name, user_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
               (role, user_id))
        grant_people(db)


def remove_person(db: PgDatabase, user_id: str, role: str | None = None) -> int:
    """Unmap `user_id` from `role` (or from every role); the rows stay. Returns how many mappings went; a role left
    with none loses its rights on the tables."""
    _owner_only(db)
    with db.atomic():
        gone = db.run("DELETE FROM coop_people WHERE user_id = %s AND (%s::text IS NULL OR role_name = %s) "
                      "RETURNING role_name", (user_id, role, role))
        for (name,) in gone:
            if not db.run("SELECT 1 FROM coop_people WHERE role_name = %s", (name,)):
                tables = ", ".join(_quoted(db, t) for t in _tables(db))
                db.run(f"REVOKE ALL ON {tables} FROM {_quoted(db, name)}")
    return len(gone)


def people(db: PgDatabase) -> list[tuple[str, str]]:
    """Every (role, user id) mapping, for `coop admin person list`."""
    _owner_only(db)
    return [(str(r[0]), str(r[1])) for r in db.run("SELECT role_name, user_id FROM coop_people ORDER BY 1, 2")]


def _tables(db: PgDatabase) -> list[str]:
    """coop's tables in the schema it lives in, but the mapping itself."""
    return [str(r[0]) for r in db.run(
        "SELECT c.relname FROM pg_class c WHERE c.relnamespace = (SELECT relnamespace FROM pg_class "
        "WHERE oid = 'messages'::regclass) AND c.relkind IN ('r', 'p') AND c.relname <> 'coop_people' ORDER BY 1")]


def grant_people(db: PgDatabase) -> None:
    """Every mapped role's rights: rows of every table (row-level security keeps them to the role's users) and
    their upkeep, the schema's history read-only, the sequences; never the tables themselves or the mapping. Run
    after every migration (`coop admin migrate`), so a new table is granted too."""
    _owner_only(db)
    roles = [str(r[0]) for r in db.run("SELECT DISTINCT role_name FROM coop_people ORDER BY 1")
             if db.run("SELECT 1 FROM pg_roles WHERE rolname = %s", (r[0],))]
    if not roles:
        return
    schema = str(db.run("SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = 'messages'::regclass")[0][0])
    tables = _tables(db)
    writable = ", ".join(_quoted(db, t) for t in tables if t not in _READ_ONLY)
    read_only = ", ".join(_quoted(db, t) for t in tables if t in _READ_ONLY)
    # VACUUM after a forget (`PgDatabase.checkpoint`) needs the owner's rights, or, from Postgres 17 on,
    # MAINTAIN, which changes no row and no policy.
    maintain = ", MAINTAIN" if int(db.run("SHOW server_version_num")[0][0]) >= 170000 else ""
    for role in roles:
        who = _quoted(db, role)
        db.run(f"GRANT USAGE ON SCHEMA {schema} TO {who}")
        db.run(f"GRANT SELECT, INSERT, UPDATE, DELETE{maintain} ON {writable} TO {who}")
        if read_only:
            db.run(f"GRANT SELECT ON {read_only} TO {who}")
        db.run(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {schema} TO {who}")
