"""Every table coop prints reads at 40 columns: the id and the text stay, the text wraps in lines of words (never
a few characters a line), and the less important columns drop; at 200 columns every column is there and the
text is on one line. Also the `output.fitted_table` rule itself, at widths from 20 to 200."""

from __future__ import annotations

import pytest
from rich.console import Console

from coop import output

TEXT = "Lives in Porto since 2019 with a partner called Rui and two cats"
WORDS = TEXT.split()


@pytest.fixture
def seeded(memory):
    """A user fact with a long text, a fact learned by extraction (for review), and a later change (history)."""
    session = memory.sessions.start("talk")
    said = memory.messages.add(session, "user", "I moved to Porto in 2019 with Rui and our two cats")
    fact = memory.facts.add(TEXT, category="location", key="home_city", source="extraction")
    memory.sources.link(fact.fact_id, [said], "moved to Porto in 2019")
    memory.facts.add("Works as a nurse at the Santo António hospital on night shifts", category="work")
    return fact.fact_id


COMMANDS = {
    "list": ["memory", "list"],
    "search --explain": ["memory", "search", "Porto partner cats", "--explain"],
    "recall": ["memory", "recall", "where do I live with Rui?"],
    "review": ["memory", "review", "--all"],
    "history": ["memory", "history", "f1"],
    "why": ["memory", "why", "f1"],
    "check": ["check"],
}
USER = ["--user", "ana"]


def text_lines(stdout: str, first_word: str) -> list[str]:
    """The lines of the table that hold TEXT's words, from its first line on."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if first_word in line and "Porto" in line)
    return lines[start:start + 6]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_table_fits_40_columns_keeping_id_and_text(seeded, run_cli, name):
    result = run_cli(*COMMANDS[name], *(USER if name != "check" else []), env={"COLUMNS": "40"})
    assert result.exit_code == 0, result.stderr
    assert all(len(line.rstrip()) <= 40 for line in result.stdout.splitlines()), result.stdout
    if name == "check":  # a report of rules: every name and a readable message
        engine = "vectors" if "vectors" in result.stdout else "pgvector"
        assert engine in result.stdout and "coop check: ready" in result.stdout.replace("\n", " ")
        return
    if name not in ("history", "why"):
        header = result.stdout.splitlines()[0].split()
        assert header[0] == "id" and "text" in header and "when" not in header, header  # when drops first
        assert "f1" in result.stdout
    shown = " ".join(text_lines(result.stdout, "Lives"))
    found = [word for word in WORDS if word in shown]
    assert found == WORDS, result.stdout  # the whole text, wrapped at words
    assert "Lives in Porto" in result.stdout, result.stdout  # a line of words, not a few characters


@pytest.mark.parametrize("name", [n for n in COMMANDS if n != "check"])
def test_at_200_columns_every_column_is_there_and_the_text_on_one_line(seeded, run_cli, name):
    result = run_cli(*COMMANDS[name], *USER, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    assert TEXT in result.stdout
    headers = {"list": ["id", "when", "kind", "text"], "search --explain": ["id", "when", "text", "found"],
               "recall": ["id", "section", "why", "text"], "review": ["id", "when", "source", "text"],
               "history": ["when", "action", "change", "reason"], "why": ["when", "action", "change", "reason"]}
    header = next(line for line in result.stdout.splitlines() if line.split()[:2] == headers[name][:2])
    assert header.split() == headers[name]


def render(table, width: int) -> list[str]:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(table)
    return console.export_text().splitlines()


@pytest.mark.parametrize("width", [20, 30, 40, 60, 80, 120, 200])
def test_fitted_table_drops_by_rank_and_never_squeezes_the_text(width):
    columns = [output.Column("id"), output.Column("when", rank=2), output.Column("kind", rank=1),
               output.Column("text", wrap=True)]
    rows = [["f12", "2026-01-02 10:11", "location/home_city", TEXT]]
    lines = render(output.fitted_table(columns, rows, width=width), width)
    header = lines[0].split()
    assert header[0] == "id" and header[-1] == "text"
    assert "f12" in lines[1]
    if width >= 40:
        assert [word for word in WORDS if word in " ".join(lines[1:])] == WORDS
        assert all(len(line.rstrip()) <= width for line in lines)
        assert "Lives in Porto" in "\n".join(lines)  # at least 18 characters a line
    kept = set(header)
    if "when" in kept:
        assert "kind" in kept, "kind outranks when: when goes first"
    if width >= 3 + 2 + 16 + 2 + 18 + 2 + 18 + 2 + 18:
        assert kept == {"id", "when", "kind", "text"}
