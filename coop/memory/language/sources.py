"""Which parts of a message are not the user's own words, found by their shape alone, in any language.

Lines: fenced and indented code, and code pasted bare: a line that opens a block as code does (a call's
parentheses before its closing colon, "def f(x):"; or an opening brace at its end) with the lines under it indented
deeper, and a closing brace at its own depth; lines that start with ">" (a quoted reply); pasted material, which
is everything from an e-mail header block on (two or more consecutive "Key: value" lines where a key is a mail
header or a value an address), and the lines after a line that ends with ":" when they span several lines or
stand apart after a blank line (a document put in to work on, not news of the user). A list after a colon is the
user's own enumeration. A paste runs to the end of the message: its end is not marked, and a sentence of the
user's lost there costs less than someone else's sentence stored as the user's.

Spans inside a line: inline code, links (URLs, bare domains with a path, e-mail addresses: a slug is not a
sentence), and text between quotation marks of any script. A quotation of one or two plain words is a mention
(a title, a name, a word being talked about) and stays in the user's sentence.
"""

from __future__ import annotations

import bisect
import re
from typing import NamedTuple

from coop.memory.language.scripts import UNSPACED, has_unspaced, regex, word_count

OWN, QUOTED, PASTED, CODE, LINK = "own", "quoted", "pasted", "code", "link"
SOURCES = (OWN, QUOTED, PASTED, CODE, LINK)

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_INDENTED = re.compile(r"^(?: {4}|\t)")
_QUOTE_LINE = re.compile(r"^[ \t]*>")
# A line that opens a block of code: a call's parentheses right after a name, then a colon; or an opening brace.
_BLOCK_OPENER = re.compile(r"^[ \t]*\S.*(?:\w\([^()]*\)[ \t]*(?:->[^:]*)?:|\{)[ \t]*$")
_CLOSER = re.compile(r"^[ \t]*[}\])][;,)]*[ \t]*$")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+•·]|\d{1,3}[.)])[ \t]+\S")
_HEADER = re.compile(r"^[ \t]*([^\W\d_][\w.\- ]{0,24}?)[ \t]*[:：][ \t]*(\S.*)$")
# Mail headers as mail programs write them in the languages coop has lexicons for (a format's vocabulary).
MAIL_HEADERS = frozenset("""from to cc bcc subject date sent reply-to von an betreff datum gesendet kopie de à a objet
envoyé envoyée date para asunto enviado fecha assunto enviada data 件名 差出人 宛先 送信日時 日付 送信者""".split())
_EMAIL = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+")
_NOT_IN_URL = f"\\s<>\"`“”«»{UNSPACED}、。「」『』（）"
_URL = f"\\b(?:[A-Za-z][A-Za-z0-9+.\\-]*://|[Ww]{{3}}\\.)[^{_NOT_IN_URL}]+"
_DOMAIN_PATH = f"\\b[A-Za-z0-9\\-]+(?:\\.[A-Za-z0-9\\-]+)*\\.[A-Za-z]{{2,}}/[^{_NOT_IN_URL}]*"
_URL_TAIL = ".,;:!?\"'>»”’"
_INLINE_CODE = re.compile(r"(`+)(?=[^`\n])(.+?)(?<!`)\1(?!`)")
# Opening quotation marks and the marks that may close them.
QUOTES = {'"': '"', "“": "”“", "„": "“”", "«": "»", "»": "«»", "‚": "‘’", "‘": "’", "‹": "›", "›": "‹›",
          "「": "」", "『": "』", "〝": "〟〞", "'": "'", "＂": "＂"}
_QUOTE_MARK = re.compile("[" + re.escape("".join(QUOTES)) + "]")
_CLOSING = frozenset("".join(QUOTES.values()))
_LIKE_APOSTROPHE = frozenset("'‘’")
_AMBIGUOUS = frozenset("'‘\"»›")
_BEFORE_OPENER = frozenset(" \t([{:—–-/")
MENTION_WORDS = 2
# Enough for any mail's header block, and a long "key: value" list is not read again from each of its lines.
MAX_HEADER_LINES = 12


class Unit(NamedTuple):
    """A line, or a block of lines kept whole (code), and whose words it holds."""

    start: int
    end: int
    source: str


class Span(NamedTuple):
    """A part of a line that is not the user's own words."""

    start: int
    end: int
    source: str


def _lines(text: str) -> list[tuple[int, int]]:
    out, start = [], 0
    for line in text.split("\n"):
        out.append((start, start + len(line)))
        start += len(line) + 1
    return out


def _header_run(text: str, lines: list[tuple[int, int]], i: int) -> int:
    """How many lines from `i` are a mail header block (0 when they are not one)."""
    count, mail = 0, False
    while i + count < len(lines) and count < MAX_HEADER_LINES:
        match = _HEADER.match(text[slice(*lines[i + count])])
        if match is None:
            break
        key, value = match.group(1).strip().casefold(), match.group(2)
        mail = mail or key in MAIL_HEADERS or _EMAIL.search(value) is not None
        count += 1
    return count if count >= 2 and mail else 0


def _depth(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _code_block(text: str, lines: list[tuple[int, int]], i: int) -> int | None:
    """The last line of a block of bare code that line `i` opens (`_BLOCK_OPENER`, with the next line indented
    deeper), running while lines are deeper than it or close a bracket at its depth; None when it opens none."""
    line = text[slice(*lines[i])]
    if not _BLOCK_OPENER.match(line) or i + 1 >= len(lines):
        return None
    depth = _depth(line)
    below = text[slice(*lines[i + 1])]
    if not below.strip() or _depth(below) <= depth:
        return None
    j = k = i + 1
    while k + 1 < len(lines):  # blank lines inside the block belong to it when code follows them
        k += 1
        following = text[slice(*lines[k])]
        if not following.strip():
            continue
        if _depth(following) > depth or (_depth(following) == depth and _CLOSER.match(following)):
            j = k
        else:
            break
    return j


def _pasted_after_colon(text: str, lines: list[tuple[int, int]], i: int) -> int | None:
    """The line a paste starts at when line `i` ends with a colon and what follows is put in, not said."""
    if not text[slice(*lines[i])].rstrip().endswith((":", "：")):
        return None
    following = i + 1
    apart = following < len(lines) and not text[slice(*lines[following])].strip()
    while following < len(lines) and not text[slice(*lines[following])].strip():
        following += 1
    block = []
    for start, end in lines[following:]:
        if not text[start:end].strip():
            break
        block.append(text[start:end])
    if not block or all(_LIST_ITEM.match(line) for line in block) or _FENCE.match(block[0]) \
            or _QUOTE_LINE.match(block[0]) or (apart and _INDENTED.match(block[0])):
        return None  # a list is the user's own; code and quoted lines are marked as what they are
    return following if apart or len(block) >= 2 else None


def units(text: str) -> list[Unit]:
    """The message's lines (blank ones left out) and code blocks, each with the source of its words."""
    lines = _lines(text)
    out: list[Unit] = []
    pasted = False
    i = 0
    while i < len(lines):
        start, end = lines[i]
        line = text[start:end]
        previous_blank = i == 0 or not text[slice(*lines[i - 1])].strip()
        fence = _FENCE.match(line)
        if fence:
            mark = fence.group(1)
            j = i + 1
            while j < len(lines) and not text[slice(*lines[j])].lstrip().startswith(mark[0] * len(mark)):
                j += 1
            last = min(j, len(lines) - 1)
            out.append(Unit(start, lines[last][1], CODE))
            i = last + 1
            continue
        if not line.strip():
            i += 1
            continue
        if _INDENTED.match(line) and (previous_blank or (out and out[-1].source == CODE)) and not pasted:
            j = i
            while j + 1 < len(lines) and _INDENTED.match(text[slice(*lines[j + 1])]):
                j += 1
            out.append(Unit(start, lines[j][1], CODE))
            i = j + 1
            continue
        block = _code_block(text, lines, i) if not pasted else None
        if block is not None:
            out.append(Unit(start, lines[block][1], CODE))
            i = block + 1
            continue
        if not pasted and _header_run(text, lines, i):
            pasted = True
        if pasted:
            out.append(Unit(start, end, PASTED))
        elif _QUOTE_LINE.match(line):
            out.append(Unit(start, end, QUOTED))
        else:
            out.append(Unit(start, end, OWN))
            paste_at = _pasted_after_colon(text, lines, i)
            if paste_at is not None:
                pasted = True
                i = paste_at
                continue
        i += 1
    return out


def _link_spans(text: str, start: int, end: int) -> list[Span]:
    found: list[Span] = []
    for pattern in (regex(_URL), _EMAIL, regex(_DOMAIN_PATH)):
        for match in pattern.finditer(text, start, end):
            a, b = match.span()
            while b > a and text[b - 1] in _URL_TAIL:
                b -= 1
            while b > a and text[b - 1] == ")" and text.count("(", a, b) < text.count(")", a, b):
                b -= 1
            if not any(s.start <= a < s.end or a <= s.start < b for s in found):
                found.append(Span(a, b, LINK))
    return found


def _is_opener(text: str, at: int, start: int) -> bool:
    """Marks that also close or elide ("'", '"', "»") open only where a quotation can begin: at the line's start or
    after a space or an opening bracket, before a word."""
    mark = text[at]
    if mark not in _AMBIGUOUS:
        return True
    if at + 1 >= len(text) or text[at + 1].isspace():
        return False
    return at == start or text[at - 1] in _BEFORE_OPENER or text[at - 1] in QUOTES


class _Closers:
    """Where each closing mark of a line stands, so finding the close of every opening mark is a lookup, not a scan
    to the end of the line (a line of stray apostrophes would otherwise take seconds)."""

    def __init__(self, text: str, start: int, end: int, taken: list[Span]) -> None:
        self.anywhere: dict[str, list[int]] = {}
        self.after_a_word: dict[str, list[int]] = {}  # closes a quotation opened by ' or ": follows text, ends a word
        for j in range(start, end):
            mark = text[j]
            if mark not in _CLOSING or any(s.start <= j < s.end for s in taken):
                continue
            self.anywhere.setdefault(mark, []).append(j)
            after = text[j + 1] if j + 1 < end else " "
            if j > start and not text[j - 1].isspace() and not after.isalnum():
                self.after_a_word.setdefault(mark, []).append(j)

    def close(self, text: str, at: int) -> int | None:
        """Where the quotation opened at `at` closes (the index of its closing mark), or None."""
        mark = text[at]
        table = self.after_a_word if mark in _LIKE_APOSTROPHE or mark == '"' else self.anywhere
        found = []
        for closer in QUOTES[mark]:
            positions = table.get(closer, [])
            i = bisect.bisect_right(positions, at)
            if i < len(positions):
                found.append(positions[i])
        return min(found, default=None)


def _mention(content: str) -> bool:
    """A quotation of a plain word or two (a title, a name, a term) rather than someone's words."""
    return (not has_unspaced(content) and word_count(content) <= MENTION_WORDS
            and not re.search(r"[.!?,;:]", content))


def _quote_spans(text: str, start: int, end: int, taken: list[Span]) -> list[Span]:
    found: list[Span] = []
    closers = _Closers(text, start, end, taken)
    at = start
    for mark in _QUOTE_MARK.finditer(text, start, end):
        opened = mark.start()
        if opened < at or any(s.start <= opened < s.end for s in taken) or not _is_opener(text, opened, start):
            continue
        close = closers.close(text, opened)
        if close is not None:
            quoted = Span(opened, close + 1, QUOTED)
        elif text[opened] not in _LIKE_APOSTROPHE:
            quoted = Span(opened, end, QUOTED)  # an unclosed quotation runs to the end of the line
        else:
            continue  # a lone apostrophe-like mark elides, it does not quote
        if not _mention(text[opened + 1:close if close is not None else end]):
            found.append(quoted)
        at = quoted.end
    return found


def spans(text: str, unit: Unit) -> list[Span]:
    """The parts of a line that are not the user's own words, in order. Links are found in every line (so the
    segmenter never reads a URL's dots as sentence ends); code and quotations only matter in the user's lines."""
    if unit.source == CODE:
        return []
    found = [Span(m.start(), m.end(), CODE) for m in _INLINE_CODE.finditer(text, unit.start, unit.end)]
    found += [s for s in _link_spans(text, unit.start, unit.end)
              if not any(c.start <= s.start < c.end for c in found)]
    if unit.source == OWN:
        quotes = _quote_spans(text, unit.start, unit.end, sorted(found, key=lambda s: s.start))
        # a link or code inside a quotation is part of it
        found = [s for s in found if not any(q.start <= s.start and s.end <= q.end for q in quotes)] + quotes
    return sorted(found, key=lambda s: s.start)
