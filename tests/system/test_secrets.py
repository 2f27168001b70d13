"""Secrets and files: coop's files are private whatever the umask, and an API key given to coop (through the
environment, or pasted by mistake into the config) never lands in the database, the trace, the history, the
logs or any message it prints, including the errors of a provider that echoes the key back."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.notes import note, notes
from tests.scripted_model import said_in

KEY = "sk-test-SECRET-1234567890"
MARKERS = (KEY.encode(), b"SECRET-1234567890")
MARKER = "[secret]"


def leaks(data: bytes | str) -> list[str]:
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    return [m.decode() for m in MARKERS if m in raw]


def scan_tree(root: Path) -> dict[str, list[str]]:
    found = {}
    for path in root.rglob("*"):
        if path.is_file():
            hits = leaks(path.read_bytes())
            if hits:
                found[str(path)] = hits
    return found


@pytest.fixture
def echo_server():
    """Answers every request with 401 and a body that repeats the Authorization header it got, as some providers
    and proxies do."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            auth = self.headers.get("Authorization") or ""
            seen.append(auth)
            body = json.dumps({"error": {"message": f"Incorrect API key provided: {auth.removeprefix('Bearer ')}",
                                         "type": "invalid_request_error", "code": "invalid_api_key"}}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    # a short poll interval: shutdown() waits for serve_forever to notice (0.5 s by default)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen
    httpd.shutdown()
    httpd.server_close()


def run_coop(args: list[str], env: dict[str, str], stdin: bytes = b"", umask: int | None = None):
    def preexec() -> None:
        if umask is not None:
            os.umask(umask)

    return subprocess.run([sys.executable, "-m", "coop", *args], input=stdin, capture_output=True, env=env,
                          timeout=180, preexec_fn=preexec)


@pytest.mark.slow
def test_an_api_key_never_reaches_the_database_trace_history_logs_or_output(coop_home, tmp_path, openai_server,
                                                                           echo_server):
    embed_base, embed_seen = echo_server
    trace = tmp_path / "trace.jsonl"
    config = tmp_path / "coop.toml"
    config.write_text('[model]\nname = "openai/test-model"\napi_key_env = "MY_PROVIDER_KEY"\n'
                      f'api_base = "{openai_server.api_base}"\ntimeout_seconds = 10\n'
                      '[memory.embedder]\nprovider = "litellm"\nmodel = "openai/embed-model"\ndims = 64\n'
                      f'api_base = "{embed_base}"\napi_key_env = "MY_PROVIDER_KEY"\n'
                      f'[trace]\nfile = "{trace}"\n', encoding="utf-8")
    env = {**os.environ, "MY_PROVIDER_KEY": KEY, "COOP_CONFIG": str(config), "COOP_HOME": str(coop_home)}
    env.pop("COOP_MEMORY_EMBEDDER_PROVIDER", None)
    echo = f"Incorrect API key provided: {KEY}"
    openai_server.replies = [
        "Hello! Nice to meet you.",                               # a normal turn
        f"Noted: your key {KEY} is safe with me.",                # the key, echoed in a reply (streamed in pieces)
        {"status": 401, "message": echo},                         # the key, echoed by the provider
        {"status": 400, "message": f"bad request for key {KEY}"},
        {"status": 404, "message": f"model not found (key {KEY})"},
        {"tool_calls": [{"name": "memory_search", "arguments": json.dumps({"query": "hello"})}]},
        "Done searching.",
    ]

    def background(body: dict) -> object:
        """The fast model: the first extraction fails with the key echoed; the exchange with the key gives a note
        that quotes the user's (masked) words, so it passes verification and reaches the store, and one that puts
        the key itself into the value, which verification refuses (and logs, masked); the summary of the session
        repeats the key."""
        system, exchange = body["messages"][0]["content"], body["messages"][-1]["content"]
        if system.startswith("You consolidate"):
            return json.dumps({"summary": f"The user shared their API key {KEY} and said hello.", "notes": []})
        exchange = said_in(exchange) or ""  # not the earlier turns shown as context
        if "hello there" in exchange:
            return {"status": 401, "message": echo}
        if "my API key is [secret]" in exchange:  # extraction reads the stored (masked) message, never the key;
            # a model that knew the key anyway and put it into a value is refused: a number the user did not say
            return notes(note("Has the API key [secret]", "my API key is [secret]"),
                         note(f"Has the API key {KEY}", "my API key is [secret]"))(body)
        return '{"notes": []}'

    openai_server.background_default = background
    lines = (f"hello there\nmy API key is {KEY}\nsecond try\nthird try\nfourth try\nsearch my memory\n"
             f"/remember my backup key is {KEY}\n/remember I have a dog named Rex\n")
    results = [run_coop(["--debug", "chat", "--user", "sam", "--commands-from-pipe"], env, lines.encode())]
    # the session the chat ended, summarised now
    results.append(run_coop(["memory", "consolidate", "--user", "sam"],
                            {**env, "COOP_MEMORY_CONSOLIDATION_MIN_AGE_MINUTES": "0"}))
    assert results[-1].returncode == 0, results[-1].stderr.decode()

    def in_turn(*runs: list[str]) -> list[subprocess.CompletedProcess]:
        return [run_coop(args, env) for args in runs]

    # After the chat, two independent chains side by side (a search after the add it looks for): every command
    # is checked for the key on its own, whatever the others do meanwhile.
    with ThreadPoolExecutor(max_workers=2) as pool:
        writes = pool.submit(in_turn, ["memory", "add", "I like tea", "--user", "sam"],
                             ["memory", "search", "tea", "--user", "sam", "--json"],
                             ["memory", "list", "--user", "sam", "--limit", "100"])
        others = pool.submit(in_turn, ["memory", "reembed", "--user", "sam"], ["check"])
        results += writes.result() + others.result()
    # The key was really used: the model and the embedder both received it.
    assert {r["authorization"] for r in openai_server.requests} == {f"Bearer {KEY}"}
    assert embed_seen and set(embed_seen) == {f"Bearer {KEY}"}
    first = results[0]
    assert first.returncode == 4  # model errors in pipe mode
    err = first.stderr.decode()
    assert "the key was refused" in err and MARKER in err  # the error is shown, with the key masked
    assert "Noted: your key [secret] is safe with me." in first.stdout.decode()  # the reply, masked as it streamed
    for result in results:
        assert leaks(result.stdout) == [] and leaks(result.stderr) == [], (result.args, result.stderr.decode())
    assert trace.exists() and leaks(trace.read_bytes()) == []
    # the raw files, byte by byte: the database and its write-ahead log, coop.log (and the history, the trace and
    # the config around them)
    assert (coop_home / "coop.db").exists() and (coop_home / "coop.log").exists()
    assert scan_tree(coop_home) == {}
    assert scan_tree(tmp_path) == {}
    assert MARKER in (coop_home / "coop.log").read_text()  # the failed extraction, logged with the key masked
    # ... and the marker stands where the key was, in every kind of row
    from coop.memory.storage.database import open_database

    database = open_database(str(coop_home / "coop.db"))
    try:
        column = lambda sql: [row[0] for row in database.execute(sql)]  # noqa: E731
        errors = column("SELECT embedding_error FROM messages WHERE embedding_error IS NOT NULL")
        messages = column("SELECT content FROM messages WHERE role IN ('user', 'assistant')")
        facts = column("SELECT value FROM facts")
        summaries = column("SELECT text FROM summaries")
        history = column("SELECT new_value FROM fact_history WHERE new_value IS NOT NULL")
    finally:
        database.close()
    # the failed embeddings were recorded on the rows, without the key
    assert errors and all("the key was refused" in e and KEY not in e for e in errors)
    assert {"my API key is [secret]", "Noted: your key [secret] is safe with me."} <= set(messages)
    assert {"Has the API key [secret]", "my backup key is [secret]"} <= set(facts)  # extraction, /remember
    assert {"Has the API key [secret]", "my backup key is [secret]"} <= set(history)
    assert summaries == ["The user shared their API key [secret] and said hello."]


@pytest.mark.parametrize("toml", [
    f'[model]\napi_key_env = "{KEY}"\n',                 # the key pasted where its variable's name belongs
    f'[model]\napi_key = "{KEY}"\n',                     # a key that does not exist
    f'[model]\napi_key_env = ["{KEY}"]\n',               # the wrong type
    f'[memory.embedder]\napi_key_env = "{KEY}"\n',
    f'[model]\napi_key_env = {KEY}\n',                   # not even TOML
    f'[model]\nname = "openai/x"\napi_key_env = "{KEY}" # comment\n',
])
def test_a_key_pasted_into_the_config_is_never_repeated_in_the_error(tmp_path, run_cli, toml):
    path = tmp_path / "coop.toml"
    path.write_text(toml, encoding="utf-8")
    result = run_cli("--config", str(path), "memory", "list")
    assert result.exit_code == 2
    assert "error:" in result.stderr and "hint:" in result.stderr
    assert leaks(result.stdout + result.stderr) == []
    for args in (["check"], ["check", "--json"]):
        result = run_cli("--config", str(path), *args)
        assert result.exit_code == 2 and "config" in result.stdout
        assert leaks(result.stdout + result.stderr) == []


def test_a_key_in_an_environment_override_is_never_repeated(run_cli):
    result = run_cli("memory", "list", env={"COOP_MODEL_API_KEY_ENV": KEY})
    assert result.exit_code == 2 and "error:" in result.stderr
    assert leaks(result.stdout + result.stderr) == []


@pytest.mark.slow  # runs `coop chat` as a process, which imports litellm: seconds each
@pytest.mark.sqlite_only  # SQLite's own file (its size limit, permissions, read-only mode)
def test_files_are_private_whatever_the_umask(coop_home, tmp_path, openai_server, memory):
    assert stat.S_IMODE(coop_home.stat().st_mode) == 0o700  # created by the `memory` fixture's database
    home = tmp_path / "fresh-home"
    trace = tmp_path / "trace.jsonl"
    env = {**os.environ, "COOP_HOME": str(home), "COOP_MODEL_NAME": "openai/test-model",
           "COOP_MODEL_API_BASE": openai_server.api_base, "COOP_TRACE_FILE": str(trace)}
    result = run_coop(["chat"], env, b"hello\n", umask=0)
    assert result.returncode == 0, result.stderr.decode()
    assert run_coop(["memory", "export", "-o", str(tmp_path / "out.jsonl")], env, umask=0).returncode == 0
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    for name in ("coop.db", "coop.db-wal", "coop.db-shm"):
        path = home / name
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, name
    assert (home / "coop.db").exists()
    assert stat.S_IMODE(trace.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "out.jsonl").stat().st_mode) == 0o600


def test_the_history_file_is_private_whatever_the_umask(memory, openai_server, coop_home):
    import io

    from rich.console import Console

    from coop.chat.repl import Repl
    from coop.chat.session import ChatSession
    from coop.config.loading import apply_overrides, load_config
    from coop.memory.growth.embedders import HashEmbedder

    config = apply_overrides(load_config(), {"model.name": "openai/test-model"})
    session = ChatSession(memory, config, embedder=lambda: HashEmbedder(64))
    repl = Repl(session, console=Console(file=io.StringIO()), history_path=str(coop_home / "history"))
    old = os.umask(0)
    try:
        repl.make_prompt_session()
    finally:
        os.umask(old)
    assert stat.S_IMODE((coop_home / "history").stat().st_mode) == 0o600


# -- the patterns, the registry and the cost ----------------------------------------------------------------------

GOOGLE = "AIzaSy" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"  # 39 letters and digits: in form, a variable name
LIVE = "sk-live-4eC39HqLyjWDarjtT1zdp7dc"
PROJ = "sk-proj-Zx81nQ0aLk2m9Vb7Cc4Dd5Ee6Ff"
SLACK = "xoxb-2493201843-5820139475-Zq8LmN3bV7cX1pR4tY6uW9aS"
GITHUB = "ghp_" + "Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7fGh9j"
SHAPES = [
    "sk-Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7fGh9jKl1n",           # OpenAI, old style
    PROJ, LIVE, KEY,                                        # OpenAI project keys, and keys of that shape
    "sk-ant-api03-Xy7_Zk2-Lm9Qp4Rs8Tu1Vw6Xy3Za5Bc8De2Fg4Hi6Jk-AA",  # Anthropic
    "sk_live_51H8aB2cD3eF4gH5iJ6kL7mN",                      # Stripe
    GOOGLE, "AIzaSyD-1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P",
    SLACK, "xoxp-1234567890-0987654321-abcdef123456",
    GITHUB, "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRS",
    "AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A",        # AWS access key ids
    "hf_" + "AbCdEf0123456789GhIjKlMnOpQrStUvWx",             # Hugging Face
    "gsk_" + "AbCdEf0123456789GhIjKlMnOpQrStUvWxYz0123456789ab",  # Groq
]


@pytest.mark.parametrize("key", SHAPES)
def test_every_provider_key_shape_is_masked(key):
    from coop.privacy.secrets import mask

    for text, masked in ((key, MARKER), (f"my key is {key}.", f"my key is {MARKER}."),
                         (f'{{"api_key": "{key}"}}', f'{{"api_key": "{MARKER}"}}'),  # JSON stays JSON
                         (f"keys: {key}\n{key}", f"keys: {MARKER}\n{MARKER}")):
        assert mask(text) == masked
    assert mask(mask(key)) == MARKER  # the marker is never taken for a key


@pytest.mark.parametrize(("text", "masked"), [
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl",
     "Authorization: Bearer [secret]"),  # the word and the space are kept
    ("curl -H 'authorization: bearer 0123456789abcdefABCDEF'", "curl -H 'authorization: bearer [secret]'"),
    ("BEARER abcdef0123456789abcdef==", "BEARER [secret]"),
])
def test_the_token_after_bearer_is_masked(text, masked):
    from coop.privacy.secrets import mask

    assert mask(text) == masked


@pytest.mark.parametrize("text", [
    "sketch", "ask-me anything", "Bearer of bad news", "the bearer bond is 100 years old", "sk-learn is great",
    "task-force-2024-quarterly-review-notes", "risk-adjusted returns for 2024", "my-sk-Ab3dEf5hIj7lMn9pQr1tUv3x",
    "disk-Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7f", "sk-this-is-just-a-long-hyphenated-phrase", "AIza", "AKIA is short",
    "OAKIAIOSFODNN7EXAMPLE", "ghost_writer", "xox-ray", "github_pat_", "hf_hub_download", "openai/gpt-4o-mini",
    "f12 m345 s7 call_0 12345678901234567890", "Bearer tokens are 16 characters or more", "a [secret] marker",
])
def test_ordinary_text_is_left_exactly_as_it_is(text):
    from coop.privacy.secrets import mask

    assert mask(text) == text


def test_registered_values_are_masked_wherever_they_appear_and_short_ones_are_not_registered():
    from coop.privacy.secrets import StreamMasker, known, mask, mask_data, register, register_environment

    env = {"ACME_API_KEY": "acme-7c1f9e2d4b", "CORP_TOKEN": "corp:pw/93hd82", "OTHER": "not-a-secret-value",
           "TINY_API_KEY": "abc123"}
    register_environment(env, names=("CORP_TOKEN", "", None))
    assert {"acme-7c1f9e2d4b", "corp:pw/93hd82"} <= set(known())
    assert "not-a-secret-value" not in known() and "abc123" not in known()  # too short to mask safely
    assert mask("acme-7c1f9e2d4b and corp:pw/93hd82, not-a-secret-value, abc123") == \
        "[secret] and [secret], not-a-secret-value, abc123"
    assert mask("short one: abc123", extra=["abc123"]) == "short one: [secret]"  # the key of a failed request
    register("", None, "  ")  # nothing
    assert mask_data({"id": "m12", "score": 0.5, "n": 3, "ok": True, "none": None,
                      "items": [f"x {KEY}", ("acme-7c1f9e2d4b",)], "error": {"message": f"bad {KEY}"}}) == \
        {"id": "m12", "score": 0.5, "n": 3, "ok": True, "none": None,
         "items": ["x [secret]", ["[secret]"]], "error": {"message": "bad [secret]"}}
    # a key arriving in pieces (a streamed reply) is masked whole; the rest comes out as it is
    masker = StreamMasker()
    pieces = ["Here is ", "your key: s", "k-test-SEC", "RET-12345", "67890 and Bea", "rer ", "abcdef0123456789xyz",
              "\nbye ", "acme-7c1f", "9e2d4b"]
    shown = [masker.feed(piece) for piece in pieces] + [masker.flush()]
    assert "".join(shown) == "Here is your key: [secret] and Bearer [secret]\nbye [secret]"
    assert not any("sk-" in part or "acme" in part for part in shown)


def test_a_key_in_a_2_mb_message_of_pattern_starting_words_is_masked_and_nothing_else_is():
    """How long it takes is `bench/masking.py`'s to measure; here, what comes out."""
    from coop.privacy.secrets import mask

    # words that start a pattern's scan (ask-, sk-learn, bearer, gh, xox...) on every line, and one real key
    line = "An ordinary line: ask-me, a sketch, task-force, the bearer of news, risk-2024, ghost, xoxo, AIDS.\n"
    text = (line * (2_000_000 // len(line)))
    cut = text.index("\n", 1_000_000) + 1
    text = text[:cut] + f"{KEY}\n" + text[cut:]
    masked = mask(text)
    assert masked == text[:cut] + f"{MARKER}\n" + text[cut + len(KEY) + 1:]


# -- keys pasted into the wrong setting, typed at the prompt, or known only from the environment --------------------


@pytest.mark.parametrize(("toml", "env", "key"), [
    (f'[model]\nname = "openai/gpt-4o-mini"\napi_key_env = "{GOOGLE}"\n', {}, GOOGLE),  # a valid name, in form
    (f'[model]\nname = "openai/gpt-4o-mini"\nfast = "{LIVE}"\n', {}, LIVE),
    (f'[model]\ntimeout_seconds = "{PROJ}"\n', {}, PROJ),
    ('[model]\nname = "openai/gpt-4o-mini"\n', {"COOP_MODEL_FAST": LIVE}, LIVE),  # the same, from the environment
    ('[model]\nname = "openai/gpt-4o-mini"\n', {"COOP_MODEL_API_KEY_ENV": GOOGLE}, GOOGLE),
    ("", {"COOP_MODEL_TIMEOUT_SECONDS": PROJ}, PROJ),
])
def test_a_key_in_the_wrong_setting_is_named_never_shown(tmp_path, coop_home, run_cli, toml, env, key):
    path = tmp_path / "coop.toml"
    path.write_text(toml, encoding="utf-8")
    for args in (["memory", "list"], ["chat"], ["memory", "add", "I like tea"]):
        result = run_cli("--config", str(path), *args, env=env)
        assert result.exit_code == 2, (args, result.stderr)
        assert "error:" in result.stderr and "hint:" in result.stderr
        assert key not in result.stdout + result.stderr
    human = run_cli("--config", str(path), "check", env=env)
    report = run_cli("--config", str(path), "check", "--json", env=env)
    for result in (human, report):
        assert result.exit_code == 2 and key not in result.stdout + result.stderr
    config = report.json()["checks"][0]
    assert (config["name"], config["severity"]) == ("config", "error")
    # the setting is named; the value is not repeated (a key in `fast`, or that is a variable's name in form) or
    # is masked (a number's setting echoes what it was given)
    assert "looks like an API key" in config["message"] or "[secret]" in config["message"], config
    assert ("model." in config["message"] or "COOP_MODEL_" in config["message"]) and "config" in human.stdout
    assert not [p for p in coop_home.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]  # coop.log too


def test_a_configured_key_of_any_shape_never_reaches_the_database(coop_home, run_cli):
    token = "corp:proxy/93hd82kq"  # no provider's shape: masked because it is the configured key's value
    env = {"CORP_PROXY_TOKEN": token, "COOP_MODEL_API_KEY_ENV": "CORP_PROXY_TOKEN"}
    added = run_cli("memory", "add", f"the proxy token is {token}", "--json", env=env)
    assert added.exit_code == 0, added.stderr
    listed = run_cli("memory", "list", "--json", env=env).json()
    assert [item["text"] for item in listed] == ["the proxy token is [secret]"]
    assert not [p for p in coop_home.rglob("*") if p.is_file() and token.encode() in p.read_bytes()]


def test_a_key_typed_in_the_repl_reaches_neither_the_history_file_nor_the_database(memory, openai_server, coop_home):
    import io

    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput
    from rich.console import Console

    from coop.chat.repl import Repl
    from coop.chat.session import ChatSession
    from coop.config.loading import apply_overrides, load_config
    from coop.memory.growth.embedders import HashEmbedder

    config = apply_overrides(load_config(), {"model.name": "openai/test-model",
                                             "model.api_base": openai_server.api_base})
    session = ChatSession(memory, config, embedder=lambda: HashEmbedder(64))
    screen = io.StringIO()
    repl = Repl(session, console=Console(file=screen, width=200, color_system=None),
                history_path=str(coop_home / "history"))
    openai_server.replies = [f"Got it, {GITHUB} is noted."]
    with create_pipe_input() as pipe:
        pipe.send_text(f"my token is {GITHUB}\r/remember my slack token is {SLACK}\r\x04")
        assert repl.run_terminal(repl.make_prompt_session(input=pipe, output=DummyOutput())) == 0
    history = (coop_home / "history").read_text(encoding="utf-8")
    assert "my token is [secret]" in history and "/remember my slack token is [secret]" in history
    # masked before the turn's own request too (issue 42): nothing secret leaves the machine
    assert openai_server.chat_requests()[0]["messages"][-1]["content"] == "my token is [secret]"
    assert "Got it, [secret] is noted." in screen.getvalue()
    texts = [item.text for item in memory.list_items(limit=10)]
    assert {"my token is [secret]", "Got it, [secret] is noted.", "my slack token is [secret]"} <= set(texts)
    for secret in (GITHUB, SLACK):
        assert secret not in screen.getvalue()
        assert not [p for p in coop_home.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_printed_errors_json_tracebacks_in_the_log_and_the_trace_are_masked(tmp_path, capsys):
    import logging

    from coop import output
    from coop.errors import ModelError
    from coop.files.logs import logging_to_file
    from coop.files.trace import Tracer

    output.error(ModelError(f"openai/x: AuthenticationError: Incorrect API key provided: {KEY}",
                            hint=f"the header was Bearer {KEY}"))
    output.warn(f"embedding failed ({KEY})", hint=f"check {KEY}")
    output.info(f"using {KEY}")
    output.say(f"model: {KEY}")
    output.print_json({"id": "m12", "error": {"message": f"x {KEY}", "hint": None}, "score": 0.5})
    out, err = capsys.readouterr()
    assert leaks(out + err) == [] and err.count(MARKER) == 6
    assert json.loads(out) == {"id": "m12", "error": {"message": "x [secret]", "hint": None}, "score": 0.5}
    with logging_to_file(tmp_path / "home") as path:
        try:
            raise RuntimeError(f"the provider said {KEY}")
        except RuntimeError:
            logging.getLogger("coop.chat").exception("turn failed for %s", KEY)
    logged = path.read_text()
    assert leaks(logged) == [] and "turn failed for [secret]" in logged
    assert "RuntimeError: the provider said [secret]" in logged  # the traceback, masked too
    trace = tmp_path / "trace.jsonl"
    Tracer(str(trace)).event("model_error", error=f"401 {KEY}", detail=RuntimeError(KEY), ids=[1, 2])
    event = json.loads(trace.read_text())
    assert leaks(trace.read_bytes()) == [] and (event["error"], event["detail"], event["ids"]) == \
        ("401 [secret]", "[secret]", [1, 2])


def test_a_streamed_reply_never_shows_part_of_a_key(monkeypatch):
    import io

    from rich.console import Console

    from coop.chat import render

    monkeypatch.setattr(render, "MIN_REDRAW_SECONDS", 0.0)  # draw after every piece
    pieces = ["Your key ", "is s", "k-te", "st-SEC", "RET-123", "4567890", " and your ", "token is ", "Bea", "rer ",
              "abcdef012", "3456789xyz", "."]
    screen = io.StringIO()  # every frame the live area drew, and the lines printed for good
    stream = render.MarkdownStream(Console(file=screen, force_terminal=True, width=80, color_system=None))
    stream.start()
    for piece in pieces:
        stream.update(piece)
    stream.finish()
    plain = io.StringIO()
    pipe = render.PlainStream(plain)
    written = []
    for piece in pieces:
        pipe.update(piece)
        written.append(plain.getvalue())
    pipe.finish()
    assert plain.getvalue() == "Your key is [secret] and your token is Bearer [secret].\n"
    for shown in (screen.getvalue(), *written):
        assert "sk-" not in shown and "SEC" not in shown and "abcdef" not in shown
    assert "Your key is [secret] and your token is Bearer [secret]." in screen.getvalue()
