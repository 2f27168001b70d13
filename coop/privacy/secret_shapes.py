"""What a secret looks like, for `coop.privacy.secrets.mask`: three sources of `Shape`s, and numbers with a check.

- **detect-secrets' detectors** (Yelp's detect-secrets, pinned): its regexes for GitLab, JWT, Stripe, Slack,
  Twilio, SendGrid, Discord, Telegram, npm, PyPI, Mailchimp, Square, Azure storage, AWS, basic-auth URLs and more.
  A maintained list grows with the providers; coop uses its patterns only (never its scanner), loaded on the first
  mask (importing it costs about 0.2 s, mostly `requests`). Its Artifactory and public-IP detectors are left out:
  they match ordinary words and addresses.
- **coop's own shapes**: providers detect-secrets does not know (OpenAI and Anthropic `sk-`, Google `AIza`,
  Hugging Face, Groq, xAI, Perplexity `pplx-`, Replicate `r8_`, GitHub fine-grained tokens), whole JWTs and
  private key blocks (detect-secrets matches their first part only), `password=` in connection strings, key-named
  parameters of a URL (`?api-key=...`), and the token after `Bearer`.
- **A key word and a random token**: a token of 16+ characters with letters and digits whose characters look
  random (Shannon entropy of at least 3.2 bits a character) within a few words after key, token, secret,
  password, credential (a 32-character Azure or Mistral key, an AWS secret access key); a password of 8+ characters
  with three kinds of character after "password is" / "password:".
- **Numbers with a check digit** (`number_spans`): payment card numbers whose Luhn digit is right and IBANs whose
  ISO 13616 check digits are, whole or in groups; a phone number or an order id that fails the check is kept.
A `Shape` masks its whole match, or only its `secret` group (a URL keeps its host, `Bearer` its word).
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

_KEY = "[A-Za-z0-9_-]"
# a bearer token: 16+ characters of a token (a sentence's full stop after it is not one of them) with a digit
_TOKEN = r"(?=[A-Za-z0-9._~+/-]*[0-9])[A-Za-z0-9._~+/-]{15,}[A-Za-z0-9_~+/-]=*"


@dataclass(frozen=True)
class Shape:
    """One pattern; `group` is the group that holds the secret (0: the whole match). `needles`: lower-case
    substrings one of which any match holds; a text without any is not scanned (a pattern that does not begin
    with a literal costs 10-300 ms on 2 MB). `bounded`: a match right after a letter or digit is part of a longer
    word, not a key (detect-secrets' patterns have no such edge of their own)."""

    pattern: re.Pattern[str]
    group: int | str = 0
    needles: tuple[str, ...] = ()
    bounded: bool = False
    whole_text: bool = False  # spans lines, or may be shorter than `LONG_RUN`: never scanned by windows

    def spans(self, text: str, lowered: str) -> Iterator[tuple[int, int]]:
        if self.needles and not any(needle in lowered for needle in self.needles):
            return
        for match in self.pattern.finditer(text):
            if match.group(self.group) and not (self.bounded and match.start() and text[match.start() - 1].isalnum()):
                yield match.span(self.group)


def _own(pattern: str, group: int | str = 0, flags: int = 0, needles: tuple[str, ...] = (),
         whole_text: bool = False) -> Shape:
    return Shape(re.compile(pattern, flags), group, needles, whole_text=whole_text)


# Each pattern begins with a literal where it can, which the regex engine scans for as fast as a substring search.
OWN_SHAPES: tuple[Shape, ...] = (
    # OpenAI (sk-..., sk-proj-...), Anthropic (sk-ant-api03-...), OpenRouter (sk-or-v1-...), DeepSeek: 20+ key
    # characters with a digit; Stripe secret keys (sk_live_..., sk_test_...)
    _own(rf"sk(?<!{_KEY}sk)(?:-(?={_KEY}*[0-9]){_KEY}{{20,}}|_(?:live|test)_[A-Za-z0-9]{{16,}})"),
    # Google (AIza and 35 more), AWS access key ids (AKIA..., ASIA...: 16 more capitals and digits)
    _own(r"A(?<![A-Za-z0-9_-]A)(?:Iza[A-Za-z0-9_-]{30,}|[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9]))"),
    # Slack tokens (xoxb-, xoxp-, xoxa-, xoxe-, xoxr-, xoxs-, xoxo-) with a digit; xAI keys
    _own(r"x(?<![A-Za-z0-9_-]x)(?:ox[abeoprs]-(?=[A-Za-z0-9-]*[0-9])[A-Za-z0-9-]{10,}|ai-[A-Za-z0-9]{40,})"),
    # GitHub personal, OAuth, user-to-server, server-to-server and refresh tokens; fine-grained tokens
    _own(r"gh[pousr]_(?<![A-Za-z0-9_]gh[pousr]_)[A-Za-z0-9]{30,}"),
    _own(r"github_pat_(?<![A-Za-z0-9_]github_pat_)[A-Za-z0-9_]{30,}"),
    # Hugging Face (with a digit), Groq, Perplexity, Replicate
    _own(r"hf_(?<![A-Za-z0-9_]hf_)(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{30,}"),
    _own(r"gsk_(?<![A-Za-z0-9_]gsk_)[A-Za-z0-9]{40,}"),
    _own(r"pplx-(?<![A-Za-z0-9_-]pplx-)(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{32,}"),
    _own(r"r8_(?<![A-Za-z0-9_]r8_)(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{30,}"),
    # a whole JWT: header, payload and signature
    _own(r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    # a private key block, to its END line (or, cut short, to a blank line or the end of the text)
    _own(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
         r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|(?=\n[ \t]*\n)|\Z)", flags=re.DOTALL,
         needles=("-----begin",), whole_text=True),
    # a URL's password (scheme://user:password@host) and key-named query parameters (?api-key=..., &sig=...)
    _own(r"://[^\s/:@]{1,256}:(?P<secret>[^\s/@]{1,256})@", "secret", needles=("://",)),
    _own(r"[?&;](?:api[-_]?key|apikey|key|token|access[-_]?token|auth|secret|client[-_]?secret|password|sig|"
         r"signature|x-amz-signature|x-amz-credential|code)=(?P<secret>[^&#;\s'\"<>]+)", "secret", re.IGNORECASE,
         ("=",)),
    # password=... in a connection string (ADO.NET, ODBC, DSNs), whatever the value
    _own(r"(?:password|pwd)=(?P<secret>[^;&\s'\"]{3,})", "secret", re.IGNORECASE,
         ("password=", "pwd="), whole_text=True),
    # Authorization headers: the token after Bearer; the word and the space are kept
    _own(rf"[Bb]earer(?<![A-Za-z0-9][Bb]earer)\s+(?P<secret>{_TOKEN})", "secret", needles=("bearer",)),
    _own(rf"BEARER(?<![A-Za-z0-9]BEARER)\s+(?P<secret>{_TOKEN})", "secret", needles=("bearer",)),
)

# detect-secrets detectors whose group 1 is the secret (the rest: the whole match)
_GROUP_DETECTORS = {"AWSKeyDetector", "BasicAuthDetector", "CloudantDetector", "IbmCloudIamDetector",
                    "IbmCosHmacDetector", "SoftlayerDetector", "NpmDetector"}
# the words a detector's matches hold (lower case): a text without any of them is not scanned by it
_DETECTOR_NEEDLES = {"AWSKeyDetector": ("aws", "akia", "asia", "abia", "acca", "a3t"), "BasicAuthDetector": ("://",),
                     "CloudantDetector": ("cl",), "IbmCloudIamDetector": ("key", "pw", "pass", "token", "secret"),
                     "IbmCosHmacDetector": ("secret",), "SoftlayerDetector": ("sl", "softlayer"),
                     "MailchimpDetector": ("-us",), "TelegramBotTokenDetector": (":",), "NpmDetector": ("authtoken",),
                     "SlackDetector": ("xox", "hooks.slack"), "StripeDetector": ("k_live_",),
                     "OpenAIDetector": ("t3blbkfj",), "AzureStorageKeyDetector": ("accountkey=",),
                     "SendGridDetector": ("sg.",), "SquareOAuthDetector": ("sq0csp-",),
                     "PypiTokenDetector": ("pypi-",), "GitLabTokenDetector": ("gl", "gr1348941"),
                     "JwtTokenDetector": ("eyj",), "GitHubTokenDetector": ("gh",), "TwilioKeyDetector": ("ac", "sk"),
                     "DiscordBotTokenDetector": (".",)}
_SKIPPED_DETECTORS = {"ArtifactoryDetector", "IPPublicDetector", "PrivateKeyDetector"}
_DETECTOR_MODULES = ("aws", "azure_storage_key", "basic_auth", "cloudant", "discord", "github_token", "gitlab_token",
                     "ibm_cloud_iam", "ibm_cos_hmac", "jwt", "mailchimp", "npm", "openai", "pypi_token", "sendgrid",
                     "slack", "softlayer", "square_oauth", "stripe", "telegram_token", "twilio")
_lock = threading.Lock()
_detected: tuple[Shape, ...] | None = None


def detector_shapes() -> tuple[Shape, ...]:
    """detect-secrets' patterns, imported once (on first use: the import costs about 0.2 s)."""
    global _detected
    if _detected is None:
        with _lock:
            if _detected is None:
                _detected = tuple(_load_detectors())
    return _detected


def _load_detectors() -> Iterator[Shape]:
    import importlib

    from detect_secrets.plugins.base import RegexBasedDetector

    for name in _DETECTOR_MODULES:
        module = importlib.import_module(f"detect_secrets.plugins.{name}")
        for detector in vars(module).values():
            if (isinstance(detector, type) and issubclass(detector, RegexBasedDetector)
                    and detector.__module__ == module.__name__ and detector.__name__ not in _SKIPPED_DETECTORS):
                grouped = detector.__name__ in _GROUP_DETECTORS
                patterns: Iterable[re.Pattern[str]] = detector.__dict__["denylist"]  # a class attribute
                for pattern in patterns:
                    yield Shape(pattern, 1 if grouped and pattern.groups else 0,
                                _DETECTOR_NEEDLES.get(detector.__name__, ()),
                                bounded=not (grouped and pattern.groups))


# -- a key word and a random token ----------------------------------------------------------------------------

KEY_WORDS = ("key", "token", "secret", "password", "passwd", "pwd", "passphrase", "credential")
_NEAR_KEY_WORD = re.compile(
    r"(?<!\[)(?:key|token|secret|passw(?:or)?d|pwd|passphrase|credential)s?(?![a-z])"  # api_key, SECRET_KEY too
    r"(?P<gap>[^\n]{0,40}?)(?<![A-Za-z0-9+/_.~-])(?P<secret>[A-Za-z0-9+/_.~-]{15,}[A-Za-z0-9+/_]={0,2})"
    r"(?![A-Za-z0-9+/=_~-]|\.[A-Za-z0-9])",
    re.IGNORECASE)
_PASSWORD = re.compile(
    r"(?:password|passwd|passphrase)s?(?:\s+(?:is|was|=)|\s*[:=])\s*[\"'`]?(?P<secret>[^\s\"'`]{8,})", re.IGNORECASE)
# a token made of words (a-hyphenated-phrase-2024, openai/gpt-4o-mini, Llama-3.1-8B-Instruct), not a key
_SEGMENT = re.compile(r"(?:[A-Z]?[a-z]+[0-9]*|[A-Z0-9.]{1,5}|[a-z0-9.]{1,12})\Z")


def entropy(token: str) -> float:
    """Shannon entropy in bits a character: random keys score 3.5-6, words and dates below 3."""
    counts = Counter(token)
    return -sum(n / len(token) * math.log2(n / len(token)) for n in counts.values())


def looks_random(token: str) -> bool:
    digits = sum(ch.isdigit() for ch in token)
    letters = sum(ch.isalpha() for ch in token)
    if letters < 2 or not (digits or "+" in token or "/" in token):
        return False
    if all(_SEGMENT.match(part) for part in re.split(r"[-_/]", token.rstrip("=")) if part) and digits < 6:
        return False
    return entropy(token) >= 3.2


def _kinds(token: str) -> int:
    return sum((any(c.islower() for c in token), any(c.isupper() for c in token), any(c.isdigit() for c in token),
                any(not c.isalnum() for c in token)))


def keyword_spans(text: str, lowered: str) -> Iterator[tuple[int, int]]:
    """Random tokens just after a key word; passwords after "password is" or "password:". A long text is scanned
    only around its key words (each one's line and the next: a password may follow "password:" on a new line),
    found with `str.find`: the patterns tried at every place of 2 MB took 200 ms, this 1 ms."""
    for start, end in _key_word_windows(lowered):
        window = text[start:end]
        for match in _NEAR_KEY_WORD.finditer(window):
            if looks_random(match.group("secret")):
                yield start + match.start("secret"), start + match.end("secret")
        for match in _PASSWORD.finditer(window):
            value = match.group("secret").rstrip(".,;:!?)")
            if _kinds(value) >= 3 and value != "[secret]":
                yield start + match.start("secret"), start + match.start("secret") + len(value)


_WHOLE_BELOW = 4096  # a text this short is scanned whole


def _key_word_windows(lowered: str) -> list[tuple[int, int]]:
    """The stretches of a text that hold a key word: (start, end) of its line and the next, merged."""
    found = [at for word in KEY_WORDS for at in _finds(lowered, word)]
    if not found:
        return []
    if len(lowered) < _WHOLE_BELOW:
        return [(0, len(lowered))]
    windows: list[tuple[int, int]] = []
    for at in sorted(found):
        start = lowered.rfind("\n", 0, at) + 1
        end = lowered.find("\n", at)
        end = len(lowered) if end < 0 else lowered.find("\n", end + 1)
        end = len(lowered) if end < 0 else end
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(end, windows[-1][1]))
        else:
            windows.append((start, end))
    return windows


def _finds(lowered: str, word: str) -> Iterator[int]:
    at = lowered.find(word)
    while at >= 0:
        yield at
        at = lowered.find(word, at + len(word))


# -- numbers with a check digit: payment cards and IBANs --------------------------------------------------------

# A card number: 13 to 19 digits, whole or in groups (the first of four or more) split by a space or a dash,
# beginning as the card networks' numbers do (22-27, 3, 4, 5 or 6: a year or a timestamp in milliseconds does not).
# Each pattern begins with a digit, and its edge is looked at after it, so the scan is fast.
_CARD = re.compile(r"[2-6](?<![\w+][2-6])(?<![0-9][.,-][2-6])(?:(?<=2)[2-7]|(?<=[3-6])[0-9])(?=(?:[ -]?[0-9]){11})"
                   r"[0-9]{2,}(?:[ -][0-9]+)*")
# An IBAN: a country's two letters, two check digits and up to 30 letters and digits, whole or in groups of four
# split by spaces or dashes, in either case (a word after one may be read as its last group: the check digits
# then fail, and the longest run that passes is taken).
_IBAN = re.compile(r"[0-9]{2}(?<=[A-Za-z]{2}[0-9]{2})(?<!\w[A-Za-z]{2}[0-9]{2})"
                   r"(?:[ -]?[A-Za-z0-9]{4}){2,}(?:[ -]?[A-Za-z0-9]{1,3})?")
_CARD_GROUP = re.compile(r"[0-9]+")
_IBAN_GROUP = re.compile(r"[A-Za-z0-9]{1,4}")
_RUN_READ = 512  # characters of a run of groups looked at: a longer run is a table of numbers


def luhn_valid(digits: str) -> bool:
    """The Luhn check that every payment card's last digit makes right (one number in ten passes by chance):
    every second digit from the right doubled (its digits summed), the total a multiple of ten."""
    doubled = digits[-2::-2].translate(_DOUBLED)
    return (sum(map(int, digits[-1::-2])) + sum(map(int, doubled))) % 10 == 0


_DOUBLED = str.maketrans("0123456789", "0246813579")  # a digit doubled, the digits of that summed


def is_card(text: str) -> bool:
    """13 to 19 digits (spaces and dashes aside) that begin as a card network's do, their Luhn digit right."""
    digits = text.replace(" ", "").replace("-", "")
    return (13 <= len(digits) <= 19 and digits.isdigit() and ("22" <= digits[:2] <= "27" or digits[0] in "3456")
            and luhn_valid(digits))


def is_iban(text: str) -> bool:
    """ISO 13616: moved to the end, the country and check digits make the number (letters as 10 to 35) leave 1
    when divided by 97. Its letters are all capitals or all small (as written, or typed in a hurry): a word after
    an IBAN in capitals ("... 656T was") is not one of its groups."""
    if not (text.isupper() or text.islower()):
        return False
    code = text.replace(" ", "").replace("-", "").upper()
    if not (15 <= len(code) <= 34 and code.isascii() and code.isalnum() and code[:2].isalpha()
            and code[2:4].isdigit()):
        return False
    return int("".join(str(int(ch, 36)) for ch in code[4:] + code[:4])) % 97 == 1


@dataclass(frozen=True)
class _Numbered:
    """A kind of number with a check: `pattern` finds a run of its groups (`back` characters after the run begins),
    `group` is one group, `first` the group a number begins with, `sizes` its length in letters and digits."""

    pattern: re.Pattern[str]
    back: int
    group: re.Pattern[str]
    first: re.Pattern[str]
    sizes: range
    valid: Callable[[str], bool]


_NUMBERED = (_Numbered(_CARD, 0, _CARD_GROUP, re.compile(r"(?:2[2-7]|[3-6][0-9])[0-9]{2}"), range(13, 20), is_card),
             _Numbered(_IBAN, 2, _IBAN_GROUP, re.compile(r"[A-Za-z]{2}[0-9]{2}"), range(15, 35), is_iban))


def number_spans(text: str) -> Iterator[tuple[int, int]]:
    """Card numbers and IBANs whose check digits are right: a phone number or an order id that fails them is
    kept. A run of groups may hold more than the number ("4539 1488 0343 6467 123 items"), so the longest run of
    whole groups that passes is taken, from each group a number can begin with (in a run's first `_RUN_READ`
    characters: deeper in a table of numbers, none is looked for)."""
    for kind in _NUMBERED:
        for match in kind.pattern.finditer(text):
            start = match.start() - kind.back
            near = text[start:min(match.end(), start + _RUN_READ)]  # (a group cut at its end is not whole)
            groups = [(start + g.start(), start + g.end()) for g in kind.group.finditer(near)]
            yield from _longest_valid(text, groups, kind)


def _longest_valid(text: str, groups: list[tuple[int, int]], kind: _Numbered) -> Iterator[tuple[int, int]]:
    """From each group a number may begin with, the longest whole run of groups that passes its check; the next
    is looked for after it."""
    first = 0
    while first < len(groups):
        start = groups[first][0]
        if kind.first.match(text, start) and (not start or not text[start - 1].isalnum()):
            last, size, ends = first, 0, []
            while last < len(groups) and size < kind.sizes.stop:
                size += groups[last][1] - groups[last][0]
                if size in kind.sizes:
                    ends.append(last)
                last += 1
            found = next((i for i in reversed(ends)
                          if _ends_number(text, groups[i][1]) and kind.valid(text[start:groups[i][1]])), None)
            if found is not None:
                yield start, groups[found][1]
                first = found
        first += 1


def _ends_number(text: str, end: int) -> bool:
    """No letter or digit goes on after `end`, nor a decimal point with digits."""
    after = text[end:end + 2]
    return not (after[:1].isalnum() or (after[:1] in (".", ",") and after[1:].isdigit()))
