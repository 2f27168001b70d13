"""What coop shows of memory reads in any script, at 40 and at 200 columns: Japanese (two cells a character),
Arabic and Hebrew (right to left), German and French typed decomposed (NFD: a letter, then its accent), emoji
(sequences joined by U+200D, a flag, a variation selector).

For `coop memory list/show/recall/why/review/history/undo`, on SQLite and Postgres: no line is wider than the
terminal (rich's `cell_len` and `wcwidth` both), every character of the text is there in order (nothing lost, cut
or garbled), no line starts with an accent torn from its letter or ends inside an emoji sequence, and the ids and
the hints that name them are on screen. A text cut short (`output.one_line`) is cut by cells, between two
characters a reader sees. Bidirectional overrides in stored text are shown as codes: they would reorder the rest of
the line, ids and hints included."""

from __future__ import annotations

import re
import unicodedata

import pytest
from rich.cells import cell_len
from wcwidth import wcswidth

from coop import output
from coop.memory.text import grapheme_start, shorten


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


JA = "東京に住んでいて、毎朝駅前の喫茶店で抹茶ラテを飲みながら小説を読んでいる"
JA_NEW = "大阪に引っ越して、今は梅田の近くで働いている"
AR = "أعيش في القاهرة مع عائلتي وأعمل مهندسة في شركة اتصالات"
HE = "אני גרה בתל אביב ועובדת כאחות בבית החולים במשמרות לילה"
DE = nfd("Ich wohne in München, trinke Kaffee mit Süßstoff und fahre täglich über die Brücke")
FR = nfd("Je préfère le thé à la menthe et j'habite près de la gare à Besançon")
EMOJI = "Loves hiking ⛰️ with the dog 🐕 and coding 👩‍💻 with friends 👨‍👩‍👧 in Lisbon 🇵🇹"
TEXTS = {"ja": JA, "ar": AR, "he": HE, "de": DE, "fr": FR, "emoji": EMOJI}
WIDTHS = (40, 200)


@pytest.fixture
def seeded(memory) -> dict[str, str]:
    """Each text said in a message and learned from it as a fact (with a quote); the Japanese fact then replaced
    by a newer one. Returns the fact id of each text, and of "ja_new"."""
    ids = {}
    session = memory.sessions.start("多言語")
    for name, text in TEXTS.items():
        said = memory.messages.add(session, "user", text)
        fact = memory.facts.add(text, category="location", key=name, source="extraction")
        memory.sources.link(fact.fact_id, [said], text[:grapheme_start(text, 24)])
        ids[name] = f"f{fact.fact_id}"
    said = memory.messages.add(session, "user", JA_NEW)
    new = memory.facts.add(JA_NEW, category="location", key="ja", source="extraction")
    memory.sources.link(new.fact_id, [said], JA_NEW)
    ids["ja_new"] = f"f{new.fact_id}"
    return ids


USER = ("--user", "ana")


def run(run_cli, width: int, *args: str, input: str | None = None):
    result = run_cli(*args, *USER, env={"COLUMNS": str(width)}, input=input)
    assert result.exit_code == 0, result.stderr
    assert_fits(result.stdout, width)
    return result


def assert_fits(stdout: str, width: int) -> None:
    """Every line within the terminal by both measures; no accent, joiner or selector torn from its character;
    nothing garbled."""
    assert "\ufffd" not in stdout and "\\u" not in stdout and "\\x" not in stdout, stdout
    for line in stdout.splitlines():
        assert cell_len(line) <= width and 0 <= wcswidth(line) <= width, (width, line)
        for i, char in enumerate(line):
            if unicodedata.category(char).startswith("M") or char in "\u200d\ufe0f":
                assert i > 0 and not line[i - 1].isspace(), f"a cluster split at a line's start: {line!r}"
        assert not re.search("\u200d(\\s|$)", line), f"a joiner at a line's end: {line!r}"


def squash(text: str) -> str:
    return "".join(text.split())


def column(stdout: str, name: str) -> str:
    """The text of a table's column `name`, from its header on, row after row (the columns before it hold ids,
    times and names: one cell a character)."""
    lines = stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if re.match(r"(id|when|action)\s", line) and f" {name}" in line)
    start = re.search(rf"\b{name}\b", lines[header]).start()
    return "\n".join(line[start:] for line in lines[header + 1:])


def assert_shown(shown: str, *texts: str) -> None:
    for text in texts:
        assert squash(text) in squash(shown), f"{text!r} not whole in:\n{shown}"


def assert_ids_first(stdout: str, *ids: str) -> None:
    for ref in ids:
        assert re.search(rf"^{ref}\b", stdout, re.MULTILINE), f"{ref} not at a row's start:\n{stdout}"


@pytest.mark.parametrize("width", WIDTHS)
def test_list_and_show(seeded, run_cli, width):
    listed = run(run_cli, width, "memory", "list", "--archived").stdout
    assert_shown(column(listed, "text"), *TEXTS.values(), JA_NEW, f"{JA}  [superseded by {seeded['ja_new']}]")
    assert_ids_first(listed, *seeded.values())
    for name, ref in seeded.items():
        shown = run(run_cli, width, "memory", "show", ref).stdout
        assert shown.startswith(f"id: {ref}\n")
        assert_shown(shown, TEXTS.get(name, JA_NEW))


@pytest.mark.parametrize("width", WIDTHS)
def test_recall_shows_the_profile_in_every_script(seeded, run_cli, width):
    result = run(run_cli, width, "memory", "recall", "東京 München préfère")
    assert_shown(column(result.stdout, "text"), AR, HE, DE, FR, EMOJI, JA_NEW)
    assert squash(JA) not in squash(result.stdout)  # replaced: not recalled
    assert_ids_first(result.stdout, *(seeded[name] for name in ("ar", "he", "de", "fr", "emoji", "ja_new")))
    memory_text = run_cli("memory", "recall", "東京 München préfère", "--json", *USER).json()["memory"]
    for text in (AR, HE, DE, FR, EMOJI, JA_NEW):
        assert text in memory_text  # the prompt holds each text exactly, in the form it was typed


@pytest.mark.parametrize("width", WIDTHS)
def test_why_shows_the_words_the_messages_and_what_was_replaced(seeded, run_cli, width):
    for name in ("ar", "he", "de", "fr", "emoji"):
        result = run(run_cli, width, "memory", "why", seeded[name])
        assert result.stdout.startswith(f"{seeded[name]}: ")
        assert_shown(result.stdout, TEXTS[name], "quoted: “" + TEXTS[name][:grapheme_start(TEXTS[name], 24)] + "”")
    replaced = run(run_cli, width, "memory", "why", seeded["ja_new"]).stdout
    assert replaced.startswith(f"{seeded['ja_new']}: ")
    assert_shown(replaced, JA_NEW, f"supersedes {seeded['ja']}: {JA}", f"quoted: “{JA_NEW}”")
    history = run(run_cli, width, "memory", "history", seeded["ja"]).stdout
    assert_shown(column(history, "change"), f"{JA} -> {JA_NEW} ({seeded['ja_new']})")


@pytest.mark.parametrize("width", WIDTHS)
def test_review_lists_and_asks_about_each_fact(seeded, run_cli, width, monkeypatch):
    listed = run(run_cli, width, "memory", "review", "--all").stdout
    assert_shown(column(listed, "text"), AR, HE, DE, FR, EMOJI, JA_NEW)
    assert_ids_first(listed, *(seeded[name] for name in ("ar", "he", "de", "fr", "emoji", "ja_new")))
    monkeypatch.setattr("coop.cli.memory_review.on_terminal", lambda: True)
    asked = run(run_cli, width, "memory", "review", "--all", input="s\n" * 6).stdout
    for name in ("ar", "he", "de", "fr", "emoji"):
        assert_shown(asked, f"] {seeded[name]} ", TEXTS[name])
    assert_shown(asked, JA_NEW, f"replaces {seeded['ja']} (`coop memory why {seeded['ja_new']}`)")


@pytest.mark.parametrize("width", WIDTHS)
def test_undo_names_the_facts_it_changes(seeded, run_cli, width):
    undone = run(run_cli, width, "memory", "undo", seeded["ja_new"]).stdout
    assert_shown(undone, f"{seeded['ja_new']} forgotten; {seeded['ja']} is current again")
    assert_shown(run(run_cli, width, "memory", "list").stdout, JA)


# (flags with spaces between: rich folds a run of flags longer than a line between the two halves of one)
LONG = {"ja": "毎朝" + "駅前の喫茶店で抹茶ラテを飲む" * 30, "fr": nfd("é") * 400, "emoji": "👩‍💻" * 200,
        "flags": "🇵🇹🇧🇷 " * 100}


@pytest.mark.parametrize("width", WIDTHS)
def test_a_long_text_is_cut_by_cells_between_characters(memory, run_cli, width):
    """`list` shows a text up to 200 cells, `why` a message up to 300: cut before a whole character and "…"."""
    session = memory.sessions.start()
    refs = {}
    for text in LONG.values():
        fact = memory.facts.add(text, source="extraction")
        memory.sources.link(fact.fact_id, [memory.messages.add(session, "user", text)])
        refs[f"f{fact.fact_id}"] = text
    listed = run(run_cli, width, "memory", "list", "--kind", "fact").stdout
    shown = squash(column(listed, "text")).split("…")[:-1]
    assert len(shown) == len(LONG)
    for cut, text in zip(shown, reversed(LONG.values()), strict=True):  # newest first
        assert squash(text).startswith(cut) and 150 <= cell_len(cut) <= 199, cut  # (spaces squashed)
        assert grapheme_start(squash(text), len(cut)) == len(cut)  # never inside a character
    for ref, text in refs.items():
        why = run(run_cli, width, "memory", "why", ref).stdout
        message = squash(why.split("message:")[1].split("history:")[0])
        assert message.endswith("…") and squash(text).startswith(message[:-1]) and 230 <= cell_len(message) <= 300
        assert grapheme_start(squash(text), len(message) - 1) == len(message) - 1


@pytest.mark.parametrize("text, width, shown", [
    (JA, 11, "東京に住ん…"), (JA, 10, "東京に住…"), (nfd("éééé"), 3, nfd("éé") + "…"), (nfd("Müller"), 3, nfd("Mü") + "…"),
    ("a👩‍💻b", 3, "a…"), ("a👩‍💻b", 4, "a👩‍💻b"), ("🇵🇹🇧🇷🇯🇵", 5, "🇵🇹🇧🇷…"), ("🇵🇹🇧🇷🇯🇵", 4, "🇵🇹…"),
    ("⛰️⛰️⛰️", 5, "⛰️⛰️…"), (HE, 200, HE), (AR + " " + AR, 20, AR[:19] + "…")])
def test_one_line_counts_cells_and_cuts_between_characters(text, width, shown):
    assert output.one_line(text, width) == shown
    assert cell_len(shown) <= width


def test_shorten_never_cuts_inside_a_character():
    assert shorten(nfd("café crème"), 5) == nfd("caf") + "…"  # not "cafe…": the accent stays with its letter
    assert shorten("ok 👨‍👩‍👧 yes", 6) == "ok …"
    assert shorten("🇵🇹🇧🇷🇯🇵", 4) == "🇵🇹…" and shorten("🇵🇹🇧🇷", 3) == "🇵🇹…" and shorten("🇵🇹🇧🇷", 2) == "…"
    assert shorten(JA, 5) == JA[:4] + "…" and shorten(JA, 100) == JA


@pytest.mark.parametrize("width", WIDTHS)
def test_a_bidi_override_in_stored_text_is_shown_as_a_code(memory, run_cli, width):
    """U+202E (RIGHT-TO-LEFT OVERRIDE) would reverse the rest of the line on a terminal that lays out Hebrew and
    Arabic: the id and the hints after it included. Hebrew itself, and the marks U+200F, are shown as they are."""
    fact = memory.facts.add("Pays \u202e1337 :NABI\u202c to \u2067Ali\u2069, " + HE + "\u200f", source="extraction")
    result = run_cli("memory", "list", *USER, env={"COLUMNS": str(width)})
    assert "\\u202e" in result.stdout and "\\u2067" in result.stdout and "\\u202c" in result.stdout
    assert not set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069") & set(result.stdout)
    assert "\u200f" in result.stdout and squash(HE) in squash(result.stdout)
    why = run_cli("memory", "why", f"f{fact.fact_id}", *USER, env={"COLUMNS": str(width)}).stdout
    assert why.startswith(f"f{fact.fact_id}: Pays \\u202e1337")
    assert run_cli("memory", "show", f"f{fact.fact_id}", "--json", *USER).json()["text"].startswith("Pays \u202e")


def test_a_session_title_is_cut_between_characters_and_after_masking(memory):
    """The chat titles a session with the start of its first message (`/sessions`, `coop chat --session`)."""
    key = "sk-proj-" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5oQ7"
    firsts = [nfd("é") * 100, "👩‍💻" * 40, "x" * 70 + " " + key]
    for text in firsts:
        session = memory.sessions.start()
        memory.messages.add(session, "user", text)
        memory.sessions.set_title(session, text)
    titles = [entry["title"] for entry in reversed(memory.sessions.recent())]
    for title, text in zip(titles[:2], firsts, strict=False):
        assert len(title) <= 80 and text.startswith(title) and grapheme_start(text, len(title)) == len(title)
    assert titles[2] == "x" * 70 + " [secret]"  # masked whole, not a key cut short ("sk-proj-a") kept
