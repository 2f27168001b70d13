"""Config: where the file is found, env over file, validation that names the key, the example that cannot drift."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

import pytest

from coop.config.example import example_toml
from coop.config.loading import Config, build_config, env_var_name, iter_keys, load_config, resolve_db_path
from coop.errors import ConfigError, ExitCode
from tests import REPO


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def name_file(path: Path, name: str) -> Path:
    return write(path, f'[model]\nname = "{name}"\n')


def assert_one_line_error(result, *needles: str) -> None:
    """A `CoopError` on the command line: exactly `error: ...` and `hint: ...`, nothing on stdout."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith("error: ") and lines[1].startswith("hint: "), result.stderr
    assert result.stdout == ""
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)


# --- where the file comes from ---------------------------------------------------------------------------


def test_search_order_flag_then_env_then_cwd_then_user_config(coop_home, tmp_path, monkeypatch):
    flag = name_file(tmp_path / "flag.toml", "from-flag")
    env = name_file(tmp_path / "env.toml", "from-env")
    cwd = name_file(Path.cwd() / "coop.toml", "from-cwd")
    user = name_file(coop_home / "config.toml", "from-user")
    monkeypatch.setenv("COOP_CONFIG", str(env))
    assert load_config(flag).model.name == "from-flag"
    assert load_config().model.name == "from-env"
    monkeypatch.delenv("COOP_CONFIG")
    assert load_config(env={"COOP_CONFIG": str(env)}).model.name == "from-env"  # a passed env is the env
    loaded = load_config()
    assert (loaded.model.name, loaded.source) == ("from-cwd", str(cwd))
    cwd.unlink()
    assert (load_config().model.name, load_config().source) == ("from-user", str(user))
    user.unlink()
    nothing = load_config(env={})
    assert nothing == Config() and nothing.source == ""


def test_the_cli_reads_config_from_flag_and_from_coop_config(run_cli, tmp_path):
    flag = name_file(tmp_path / "flag.toml", "ollama/from-flag")
    env = name_file(tmp_path / "env.toml", "ollama/from-env")
    by_env = run_cli("check", "--json", env={"COOP_CONFIG": str(env)}).json()
    by_flag = run_cli("--config", str(flag), "check", "--json", env={"COOP_CONFIG": str(env)}).json()
    assert str(env) in check_named(by_env, "config")["message"]
    assert "ollama/from-env" in check_named(by_env, "model")["message"]
    assert str(flag) in check_named(by_flag, "config")["message"]
    assert "ollama/from-flag" in check_named(by_flag, "model")["message"]


def check_named(report: dict, name: str) -> dict:
    return next(c for c in report["checks"] if c["name"] == name)


@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_missing_explicit_config_is_an_error_naming_the_path(run_cli, tmp_path, how):
    missing = tmp_path / "nowhere" / "coop.toml"
    name_file(Path.cwd() / "coop.toml", "would-be-used")  # a fallback must not hide the mistake
    if how == "flag":
        result = run_cli("--config", str(missing), "memory", "list")
    else:
        result = run_cli("memory", "list", env={"COOP_CONFIG": str(missing)})
    assert result.exit_code == ExitCode.USAGE
    assert_one_line_error(result, str(missing), "not found")


# --- environment variables -------------------------------------------------------------------------------


def test_env_overrides_beat_the_file_with_typed_values(tmp_path):
    path = write(tmp_path / "c.toml", "[memory]\nsearch_limit = 5\nsimilarity_floor = 0.5\n"
                                      "[chat]\ntools = true\n[model]\nname = \"file\"\n")
    env = {"COOP_MEMORY_SEARCH_LIMIT": "7", "COOP_MEMORY_SIMILARITY_FLOOR": "0.25", "COOP_CHAT_TOOLS": "off",
           "COOP_MODEL_NAME": "env", "COOP_MEMORY_EMBEDDER_DIMS": " 64 "}
    config = load_config(path, env=env)
    assert config.memory.search_limit == 7 and isinstance(config.memory.search_limit, int)
    assert config.memory.similarity_floor == 0.25
    assert config.chat.tools is False
    assert config.model.name == "env"
    assert config.memory.embedder.dims == 64
    assert load_config(path, env={}).memory.search_limit == 5  # the file alone
    assert load_config(path, env={"COOP_CHAT_TOOLS": "yes"}).chat.tools is True


@pytest.mark.parametrize("variable, raw, needle", [
    ("COOP_MEMORY_SEARCH_LIMIT", "ten", "whole number"),
    ("COOP_MEMORY_SEARCH_LIMIT", "2.5", "whole number"),
    ("COOP_MEMORY_SIMILARITY_FLOOR", "high", "number"),
    ("COOP_CHAT_TOOLS", "maybe", "true or false"),
    ("COOP_MEMORY_SIMILARITY_FLOOR", "3", "out of range"),
    ("COOP_MEMORY_SIMILARITY_FLOOR", "nan", "finite"),
    ("COOP_MEMORY_EMBEDDER_PROVIDER", "fastembd", "fastembed"),
])
def test_bad_env_values_name_the_variable(variable, raw, needle):
    with pytest.raises(ConfigError) as caught:
        load_config(env={variable: raw})
    text = f"{caught.value.message} {caught.value.hint}"
    assert variable in text and needle in text


def test_bad_env_value_through_the_cli_is_a_usage_error(run_cli):
    result = run_cli("memory", "list", env={"COOP_MEMORY_SEARCH_LIMIT": "lots"})
    assert result.exit_code == ExitCode.USAGE
    assert_one_line_error(result, "COOP_MEMORY_SEARCH_LIMIT", "'lots'")


def test_every_key_has_its_own_env_variable():
    names = [env_var_name(dotted) for dotted, _ in iter_keys()]
    assert len(names) == len(set(names))
    assert env_var_name("memory.embedder.model_path") == "COOP_MEMORY_EMBEDDER_MODEL_PATH"


# --- validation ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("toml, needles", [
    ("[memory]\nserch_limit = 3\n", ["memory.serch_limit", "did you mean 'memory.search_limit'"]),
    ("[memroy]\nsearch_limit = 3\n", ["'memroy'", "did you mean 'memory'"]),
    ("[memory.embeder]\ndims = 64\n", ["memory.embeder", "did you mean 'memory.embedder'"]),
    ("[model]\nnmae = \"x\"\n", ["model.nmae", "did you mean 'model.name'"]),
    ("[memory]\nsearch_limit = \"3\"\n", ["memory.search_limit", "whole number"]),
    ("[memory]\nsearch_limit = true\n", ["memory.search_limit", "whole number"]),
    ("[chat]\ntools = 1\n", ["chat.tools", "true or false"]),
    ("[memory]\nsimilarity_floor = 3\n", ["memory.similarity_floor", "out of range", "-1 to 1"]),
    ("[memory]\nsimilarity_floor = nan\n", ["memory.similarity_floor", "finite"]),
    ("[memory.embedder]\nprovider = \"fastembd\"\n", ["memory.embedder.provider", "did you mean 'fastembed'"]),
    ("memory = 3\n", ["[memory] must be a table"]),
])
def test_config_errors_name_the_key_and_hint_the_fix(run_cli, tmp_path, toml, needles):
    path = write(tmp_path / "bad.toml", toml)
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    text = f"{caught.value.message} {caught.value.hint}"
    for needle in needles:
        assert needle in text, (needle, text)
    result = run_cli("--config", str(path), "memory", "list")
    assert result.exit_code == ExitCode.USAGE
    assert_one_line_error(result, needles[0])


def test_unknown_key_with_nothing_close_lists_the_known_keys():
    with pytest.raises(ConfigError) as caught:
        build_config({"trace": {"zzzzzz": 1}})
    assert "trace.file" in caught.value.hint


def test_the_internal_source_field_is_not_a_config_key():
    with pytest.raises(ConfigError, match="unknown key 'source'"):
        build_config({"source": "x"})


def test_api_key_env_holding_a_key_is_rejected_without_echoing_it(run_cli, tmp_path):
    secret = "sk-proj-THISISASECRET123"
    path = write(tmp_path / "c.toml", f'[model]\nname = "openai/gpt-4o-mini"\napi_key_env = "{secret}"\n')
    result = run_cli("--config", str(path), "memory", "list")
    assert result.exit_code == ExitCode.USAGE
    assert "model.api_key_env" in result.stderr
    assert secret not in result.stderr + result.stdout
    checked = run_cli("--config", str(path), "check")
    assert checked.exit_code == ExitCode.USAGE
    assert secret not in checked.stderr + checked.stdout
    assert load_config(env={"COOP_MODEL_API_KEY_ENV": "MY_KEY"}).model.api_key_env == "MY_KEY"


def test_invalid_toml_is_one_line(run_cli, tmp_path):
    path = write(tmp_path / "broken.toml", "[memory\nsearch_limit = 3\n")
    result = run_cli("--config", str(path), "memory", "list")
    assert result.exit_code == ExitCode.USAGE
    assert_one_line_error(result, str(path), "invalid TOML", "line 1")


def test_non_utf8_config_is_one_line(run_cli, tmp_path):
    path = write(tmp_path / "latin1.toml", '[model]\nname = "caf\xe9"\n'.encode("latin-1"))
    result = run_cli("--config", str(path), "memory", "list")
    assert result.exit_code == ExitCode.USAGE
    assert_one_line_error(result, str(path), "UTF-8")


# --- the throwaway database ------------------------------------------------------------------------------


def test_memory_db_path_is_a_throwaway_database(run_cli, coop_home, tmp_path):
    path = write(tmp_path / "c.toml", '[memory]\ndb_path = ":memory:"\n')
    assert resolve_db_path(load_config(path)) == ":memory:"
    added = run_cli("--config", str(path), "memory", "add", "I keep bees on the roof", "--json")
    assert added.exit_code == 0 and added.json()["action"] == "ADD"
    listed = run_cli("--config", str(path), "memory", "list", "--json")
    assert listed.exit_code == 0 and listed.json() == []
    assert not (coop_home / "coop.db").exists()
    assert not list(Path.cwd().iterdir())
    on_disk = run_cli("memory", "add", "I keep bees on the roof")  # the default is a file in COOP_HOME
    assert on_disk.exit_code == 0 and (coop_home / "coop.db").is_file()


def test_db_path_is_expanded_and_defaults_to_coop_home(coop_home, monkeypatch):
    monkeypatch.setenv("HOME", "/home/someone")
    assert resolve_db_path(Config()) == str(coop_home / "coop.db")
    config = build_config({"memory": {"db_path": "~/data/m.db"}})
    assert resolve_db_path(config) == "/home/someone/data/m.db"


# --- config.example.toml ---------------------------------------------------------------------------------


def test_config_example_toml_is_the_generated_example():
    assert (REPO / "config.example.toml").read_text(encoding="utf-8") == example_toml(), (
        "config.example.toml drifted: regenerate it with "
        "python -c \"from coop.config.example import example_toml; open('config.example.toml','w').write(example_toml())\"")


def test_every_config_key_is_in_the_example_under_its_section():
    text = example_toml()
    sections = re.split(r"^\[([a-z.]+)\]$", text, flags=re.M)
    by_section = dict(zip(sections[1::2], sections[2::2]))
    leaf_count = 0
    for dotted, f in iter_keys():
        head, _, key = dotted.rpartition(".")
        assert re.search(rf"^# {key} = ", by_section[head], flags=re.M), dotted
        assert f.metadata["help"] in by_section[head], dotted
        leaf_count += 1
    assert leaf_count == len(re.findall(r"^# [a-z0-9_]+ = ", text, flags=re.M))
    every_field = _all_fields(Config)
    assert every_field == {dotted for dotted, _ in iter_keys()}


def _all_fields(cls: type, prefix: str = "") -> set[str]:
    """Independently of iter_keys: every dataclass field, recursing into sections."""
    names: set[str] = set()
    for f in dataclasses.fields(cls):
        if f.metadata.get("internal"):
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if dataclasses.is_dataclass(default):
            names |= _all_fields(type(default), f"{prefix}{f.name}.")
        else:
            names.add(f"{prefix}{f.name}")
    return names


def test_the_example_uncommented_parses_back_to_the_defaults():
    uncommented = re.sub(r"^# ([a-z_]+ = )", r"\1", example_toml(), flags=re.M)
    assert uncommented != example_toml()
    data = tomllib.loads(uncommented)
    assert build_config(data) == Config()
    assert data["memory"]["embedder"]["provider"] == "fastembed"  # really read, not just defaults
    assert len(data["memory"]) > 5 and data["memory"]["similarity_floor"] == 0.655


def test_the_example_as_written_is_valid_and_all_defaults(tmp_path):
    path = write(tmp_path / "example.toml", example_toml())
    assert load_config(path, env={}) == Config()
