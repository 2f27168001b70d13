"""The README's commands are real: its command table names every command coop has and nothing else (each one's
`--help` runs), and the commands it tells a newcomer to type in "Start" and the MCP section work as it says."""

from __future__ import annotations

import re

import typer

from coop.cli.app import app
from tests import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def every_command() -> set[str]:
    """Each command path coop has, as `coop memory add`; groups that are only containers are left out."""
    found: set[str] = set()

    def walk(command, path: str) -> None:
        children = getattr(command, "commands", None)
        if not children or path in ("coop mcp",):  # `coop mcp` serves and holds `install`
            found.add(path)
        for name, child in (children or {}).items():
            walk(child, f"{path} {name}")

    walk(typer.main.get_command(app), "coop")
    found.discard("coop")
    return found


def table_commands() -> set[str]:
    """The command column of the README's table, without arguments and options (`pull|status` gives both)."""
    named = set()
    for cell in re.findall(r"^\| `(coop [^`]+)` \|", section("Commands"), flags=re.MULTILINE):
        words = [w for w in cell.split() if re.fullmatch(r"[a-z]+(\\?\|[a-z]+)*", w)]
        alternatives = [w.replace("\\", "").split("|") for w in words]
        stem = [a[0] for a in alternatives[:-1]]
        for last in alternatives[-1]:
            named.add(" ".join([*stem, last]))
    return named


def test_the_command_table_lists_every_command_and_no_other(run_cli):
    assert table_commands() == every_command()
    for command in sorted(table_commands()):
        result = run_cli(*command.split()[1:], "--help")
        assert result.exit_code == 0, command


def test_the_start_commands_work_as_the_readme_says(run_cli, coop_home):
    start = section("Start")
    for line in ("coop init", "coop check", 'coop memory add "I live in Porto"', "coop memory search porto"):
        assert line in start
    assert run_cli("init").exit_code == 0 and (coop_home / "config.toml").is_file()
    assert run_cli("check").exit_code == 0
    assert run_cli("memory", "add", "I live in Porto").exit_code == 0
    found = run_cli("memory", "search", "porto", "--json").json()
    assert [hit["text"] for hit in found] == ["I live in Porto"]
    assert run_cli("--help").exit_code == 0 and run_cli("memory", "add", "--help").exit_code == 0


def test_the_mcp_install_command_of_the_readme(run_cli, tmp_path, monkeypatch):
    assert "coop mcp install claude-desktop" in section("Use your memory from other assistants (MCP)")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    result = run_cli("mcp", "install", "claude-desktop", "--print")
    assert result.exit_code == 0 and '"coop"' in result.stdout and "the host will use" in result.stderr


def test_commands_before_the_venv_is_activated_use_its_path_and_start_says_how_to_activate_it():
    """A fresh shell after setup has no `coop` on its PATH: the commands up to "Start" name `.venv/bin/coop`, and
    "Start" says how the later bare `coop ...` works."""
    before = README.split("\n## What coop is\n", 1)[0] + section("Start").split("The rest of this README", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", before, flags=re.DOTALL)
    assert blocks and all(re.search(r"(?<![/\w.-])coop ", block) is None for block in blocks), blocks
    assert "source .venv/bin/activate" in section("Start")


def test_the_exit_codes_the_readme_lists_are_the_codes_coop_exits_with():
    """One table of exit codes: `coop.errors.ExitCode`, and the README's sentence names each of them, no other."""
    from coop.errors import ExitCode

    sentence = re.search(r"Exit codes: (.*?)\.\n", README, flags=re.DOTALL)
    assert sentence is not None
    listed = {int(code): words.split(" (")[0].strip()
              for code, words in re.findall(r"(\d+) ([a-z][a-z ]*(?: \([^)]*\))?)", " ".join(sentence.group(1).split()))}
    assert listed == {int(code): code.name.lower().replace("_", " ") for code in ExitCode}
