"""Files coop writes for the user (`coop memory export -o`, `coop init`) are replaced only when complete, never
through a planted link, never into a device, a FIFO or a directory; a full disk is one line and exit code 5."""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys

import pytest


@pytest.fixture
def out_dir(tmp_path):
    path = tmp_path / "out"
    path.mkdir()
    return path


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim.txt"
    path.write_text("precious\n")
    path.chmod(0o644)
    return path


def seed(run_cli):
    assert run_cli("memory", "add", "I keep bees on the roof").exit_code == 0


def test_a_planted_partial_link_does_not_redirect_the_export(run_cli, out_dir, victim):
    seed(run_cli)
    target = out_dir / "out.jsonl"
    (out_dir / ".out.jsonl.partial").symlink_to(victim)  # the temporary name older coop used
    result = run_cli("memory", "export", "-o", str(target))
    assert result.exit_code == 0, result.stderr
    assert victim.read_text() == "precious\n"
    assert target.is_file() and not target.is_symlink() and "I keep bees on the roof" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in out_dir.iterdir()) == [".out.jsonl.partial", "out.jsonl"]  # no temporary left


def test_an_export_target_that_is_a_link_is_refused(run_cli, tmp_path, victim):
    seed(run_cli)
    link = tmp_path / "out.jsonl"
    link.symlink_to(victim)
    result = run_cli("memory", "export", "-o", str(link))
    assert result.exit_code == 2 and "symbolic link" in result.stderr
    assert victim.read_text() == "precious\n" and link.is_symlink()


def test_an_export_target_that_is_a_fifo_or_a_directory_is_refused(run_cli, tmp_path):
    seed(run_cli)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = run_cli("memory", "export", "-o", str(fifo))
    assert result.exit_code == 2 and "not a regular file" in result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    result = run_cli("memory", "export", "-o", str(tmp_path))
    assert result.exit_code == 2 and "is a directory" in result.stderr


def test_an_export_to_a_full_disk_is_one_line_and_exit_code_5(run_cli, coop_home):
    seed(run_cli)
    env = {**os.environ, "COOP_HOME": str(coop_home), "COOP_MEMORY_EMBEDDER_PROVIDER": "hash"}
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "coop", "memory", "export"], stdout=full, stderr=subprocess.PIPE,
                              env=env, timeout=120, text=True)
    assert done.returncode == 5, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("error: cannot write stdout: No space left on device") and len(lines) == 2
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr


def test_init_force_does_not_write_through_a_link_or_chmod_its_target(run_cli, tmp_path, victim):
    link = tmp_path / "coop.toml"
    link.symlink_to(victim)
    result = run_cli("init", str(link), "--force")
    assert result.exit_code == 2 and "symbolic link" in result.stderr
    assert victim.read_text() == "precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_init_force_replaces_a_regular_file_with_a_private_one(run_cli, tmp_path):
    target = tmp_path / "coop.toml"
    target.write_text("old\n")
    target.chmod(0o644)
    assert run_cli("init", str(target), "--force").exit_code == 0
    assert "[model]" in target.read_text() and stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_loose_coop_home_and_old_log_trace_and_history_files_are_tightened(run_cli, coop_home, tmp_path,
                                                                              memory):
    from rich.console import Console

    from coop.chat.repl import Repl
    from coop.chat.session import ChatSession
    from coop.config.loading import Config
    from coop.files.logs import logging_to_file
    from coop.files.trace import Tracer

    coop_home.mkdir(exist_ok=True)
    coop_home.chmod(0o777)
    for name in ("coop.log", "trace.jsonl", "history"):
        (coop_home / name).write_text("old\n")
        (coop_home / name).chmod(0o644)
    assert run_cli("memory", "add", "I keep bees").exit_code == 0
    assert stat.S_IMODE(coop_home.stat().st_mode) == 0o700
    with logging_to_file(coop_home, secrets=[]):
        import logging

        logging.getLogger("coop.test").warning("a line")
    Tracer(str(coop_home / "trace.jsonl")).event("test")
    session = ChatSession(memory, Config(), embedder=lambda: None)
    Repl(session, console=Console(file=io.StringIO()), history_path=str(coop_home / "history")) \
        .make_prompt_session()
    for name in ("coop.log", "trace.jsonl", "history"):
        assert stat.S_IMODE((coop_home / name).stat().st_mode) == 0o600, name
