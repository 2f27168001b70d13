"""What no standing instruction may say, whoever writes it.

An instruction is in every prompt, so one written by mistake or by someone else steers every later reply. Two
checks, on the instruction's own text, run by `FactWriter` for every writer:
- `is_unsafe_instruction`: it asks the assistant to drop a safety behaviour; never stored as an instruction.
- `widens`: it lets the assistant reveal or do more (share, reveal, disclose, send, forward, publish, ignore,
  bypass, ...) without a negation in its clause. A machine source (extraction, the model's tool, an MCP host, an
  import, consolidation) never stores such an instruction (refused and logged); a person who means it adds it with
  `coop memory add`.
These read English; that they cover other languages is the trust-boundaries work's (a widening instruction in
another language still reaches memory only from the user's own words, through `verify`).
"""

from __future__ import annotations

import re

WIDENING = frozenset("""share shares reveal reveals disclose disclosed expose leak send sends forward forwards post
publish upload email e-mail ignore ignores disregard bypass override overrule circumvent tell give""".split())
WIDENING_OBJECTS = frozenset("anyone everyone anybody everybody others people public strangers all".split())
NEGATING = frozenset("never not no don't dont without stop".split())
_TOKEN = re.compile(r"[\w']+")


def is_unsafe_instruction(text: str) -> bool:
    """A 'standing instruction' that asks the assistant to drop a safety behaviour is never stored as one."""
    lowered = text.casefold()
    return bool(re.search(
        r"(ignore|disregard|bypass|disable|turn off|skip|drop|remove|forget|without)\b[^.]{0,40}\b"
        r"(safety|guardrail|filter|rules|polic|restriction|ethic|warning|content polic|system prompt)"
        r"|\b(jailbreak|developer mode|dan mode|no (limits|restrictions|filters))\b"
        r"|pretend (you have|there are) no (rules|restrictions|limits)", lowered))


def widens(instruction: str) -> bool:
    """True when the instruction lets the assistant reveal or do more: a widening verb outside a negation, or
    telling / giving something to others ("tell anyone", "give my number to everyone")."""
    for clause in re.split(r"[.;,!?]|\b(?:but|and then)\b", instruction.casefold()):
        words = _TOKEN.findall(clause.replace("\u2019", "'"))
        for i, word in enumerate(words):
            if word not in WIDENING:
                continue
            if NEGATING & set(words[max(0, i - 4):i]):
                continue
            if word in ("tell", "give") and not WIDENING_OBJECTS & set(words[i:]):
                continue  # "tell me when ...", "give short answers": not a disclosure
            return True
    return False
