"""The chat's slash commands: `cmd_<name>` methods whose docstring's first paragraph is the help line (`/help`); a
unique prefix is enough (`/rem` is /remember), an unknown or ambiguous command is an error and is never sent to
the model. `Repl` (repl.py) has them; they print through `say`, a line of coop's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from coop import output
from coop.chat.terminal import yes_no
from coop.errors import UsageError
from coop.memory.text import plural

if TYPE_CHECKING:
    from coop.chat.session import ChatSession


class SlashCommands:
    """The commands of a chat, over its session; the loop that reads them is `Repl`'s."""

    session: "ChatSession"
    console: Console
    json_mode: bool
    running: bool
    ask: Callable[[str], str] | None

    def commands(self) -> dict[str, Callable[[str], None]]:
        return {name[4:]: getattr(self, name) for name in sorted(dir(self)) if name.startswith("cmd_")}

    def resolve(self, word: str) -> Callable[[str], None]:
        table = self.commands()
        if word in table:
            return table[word]
        matches = [name for name in table if name.startswith(word)]
        if len(matches) == 1:
            return table[matches[0]]
        if not matches:
            raise UsageError(f"unknown command /{word}", hint="type /help for the list of commands")
        raise UsageError(f"ambiguous command /{word}: " + ", ".join("/" + m for m in matches),
                         hint="type more letters")

    def cmd_help(self, _: str) -> None:
        """Show the commands."""
        for name, method in self.commands().items():  # each docstring's first paragraph, whole
            self.say(f"/{name:<10} {' '.join((method.__doc__ or '').strip().split(chr(10) * 2)[0].split())}")
        self.say("Esc Enter: new line · Ctrl-R: search history · Ctrl-X Ctrl-E: edit in $EDITOR · "
                 "Ctrl-C: stop a reply · Ctrl-D: exit")

    def cmd_memory(self, query: str) -> None:
        """What was recalled for the last reply and why; /memory N for the Nth reply of this session; or /memory
        QUERY to search memory."""
        from coop.memory.retrieval.context import explain, found_by
        from coop.memory.retrieval.search import search_or_full_text

        recalls = self.session.recalls
        if query.strip() and not query.strip().isdigit():
            result, failure = search_or_full_text(self.session.memory, query, embedder=self.session.embedder(),
                                                  limit=10, settings=self.session.retrieval)
            if failure is not None:
                self.say(f"(the embedder failed: {failure}; full-text search only)")
            rows = [(hit.ref, found_by(hit.legs), f"{hit.score:.4f}", hit.item.text) for hit in result.hits]
            empty, left_out = "no matches", 0
        else:
            number = int(query) if query.strip() else len(recalls)
            if not 1 <= number <= len(recalls):
                raise UsageError(f"no reply {number} in this session" if recalls else "nothing was recalled yet",
                                 hint=f"/memory 1 to {len(recalls)}" if recalls else "ask something first")
            recalled, left_out = recalls[number - 1]
            rows = [(r.item.ref, explain(r), f"{r.score:.4f}", r.item.text) for r in recalled]
            empty = f"nothing was recalled for reply {number}"
        if not rows:
            self.say(empty)
            return
        table = Table(box=None, pad_edge=False)
        for column in ("id", "why", "score", "text"):
            table.add_column(column, overflow="fold" if column in ("text", "why") else "ellipsis",
                             no_wrap=column not in ("text", "why"))
        for ref, why, score, text in rows:
            table.add_row(ref, output.cell(why), score, output.cell(output.one_line(text, 200)))
        self.console.print(table)
        if left_out:
            self.say(f"({left_out} more recalled but over the memory budget)")

    def cmd_remember(self, text: str) -> None:
        """Remember a fact: /remember my bike is the green one."""
        if not text.strip():
            raise UsageError("/remember needs the fact to remember", hint="/remember my bike is the green one")
        result = self.session.remember(text)
        verb = {"MERGE": "already known as", "SUPERSEDE": "remembered (supersedes an older fact) as"}.get(
            result.action, "remembered as")
        self.say(f"{verb} f{result.fact_id}")

    def cmd_forget(self, args: str) -> None:
        """Forget one memory item for good, after a yes: /forget f12 (--yes: without asking)."""
        from coop.memory.growth.forgetting import traces
        from coop.memory.kinds import parse_ref

        if self.session.incognito:
            raise UsageError("incognito: memory is read-only", hint="start coop chat without --incognito")
        words = args.split()
        refs = [w for w in words if w not in ("--yes", "-y")]
        if len(refs) != 1:
            raise UsageError("/forget needs one item id", hint="/forget f12 (ids are in /memory)")
        found = self.session.memory.aliases.resolve(*parse_ref(refs[0]))  # an import's alias, if renumbered
        if found.note:
            self.say(found.note)
        kind, number = found.kind, found.item_id
        item = self.session.memory.get(kind, number)  # a missing id is an error before any question
        if len(refs) == len(words):
            if self.ask is None:
                raise UsageError("refusing to forget without confirmation", hint=f"/forget {item.ref} --yes")
            going = [item, *(traces(self.session.memory, item) if item.kind == "fact" else [])]
            for other in going:
                self.say(f"{'' if other is item else '  with '}{other.ref}: {output.one_line(other.text, 70)}")
            if not yes_no(self.ask, f"Forget {plural(len(going), 'item')} for good?"):
                self.say("nothing forgotten")
                return
        gone = self.session.forget(kind, number, reason="/forget in chat")
        self.say(f"{gone.describe()}: {output.one_line(gone.item.text, 60)}")

    def cmd_history(self, _: str) -> None:
        """Show this session's conversation so far."""
        messages = list(self.session.working.messages)
        if not messages:
            self.say("no messages yet in this session")
        for message in messages:
            if message.role in ("user", "assistant") and message.content:
                self.say(f"{message.role}: {output.one_line(message.content, 300)}")

    def cmd_sessions(self, _: str) -> None:
        """List your recent sessions (resume one with coop chat --session ID)."""
        sessions = self.session.memory.sessions.recent(20)
        if not sessions:
            self.say("no sessions yet")
        for s in sessions:
            mark = "*" if s["id"] == self.session.session_id else " "
            when = output.local_time(s["last_activity_at"])
            count = plural(s["messages"], "message")
            self.say(f"{mark} {s['id']:>5}  {when}  {count:>13}  {s['title'] or ''}")

    def cmd_new(self, _: str) -> None:
        """Start a new session (memory stays; the conversation starts afresh)."""
        self.session.new_session()
        self.say("new session: it begins with your next message" + (" (incognito)" if self.session.incognito else ""))

    def cmd_model(self, name: str) -> None:
        """Show the model, or switch: /model openai/gpt-4o-mini (checked against the server's model list)."""
        if name.strip():
            from coop.chat.model_switch import checked_model

            note = checked_model(self.session.config, name.strip(), self.session.model_name)  # unlisted: an error
            self.session.use_model(name.strip())
            if note:
                self.say(note)
        self.say(f"model: {self.session.model_name}")

    def cmd_end(self, _: str) -> None:
        """End this session (it is consolidated in the background) and start a new one."""
        ended = self.session.session_id
        self.session.end()
        self.session.new_session()
        self.say((f"session {ended} ended" if ended is not None else "nothing to end yet")
                 + "; a new session begins with your next message")

    def cmd_exit(self, _: str) -> None:
        """Leave coop (also Ctrl-D)."""
        self.running = False

    def say(self, text: str) -> None:
        """A line of coop's own (not the model's): stderr in pipe mode so stdout stays the replies."""
        if not self.json_mode:
            output.say(text, self.console)
