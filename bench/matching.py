"""How the extraction bench judges a stored fact against the gold, in any language.

A stored fact states a gold fact when their content words overlap with a Dice coefficient of at least
`MATCH_SHARE` (twice the shared units over the two counts), it holds every name and number of the gold, and both
are negated or neither is. This is a judge, not coop: its small per-language tables (stop words, negations,
number words, month names) live here, apart from the code it judges, so that a slip in coop's own language
handling is not repeated by the judge and hidden.

- English is judged exactly as the bench judged it before this module (the English figures must not move): the
  same opening of contractions, ISO dates written out, number words, stop words, light suffix stemmer (not
  Porter/Snowball, which merges words the old one kept apart) and the same name rule. Only contractions written
  without an apostrophe ("dont", "cant") and "cannot" (which the judge read as a word, not a negation) are new,
  opened like their spelled forms.
- Other cased languages (fr, de, es, pt, it, nl, and any language PyStemmer has): words stemmed by the language's
  Snowball stemmer, diacritics dropped after stemming ("Montreal" states "Montréal"), elisions split ("l'hôpital",
  "n'habite"), number words and written dates read, the stop words and negations of the language. Names are
  capitalised words that do not open a sentence, and (unlike English, where months are capitalised anyway)
  month names are required as numbers are.
- German capitalises every noun, and no rule without a lexicon tells "Hamburg" from "Krankenschwester". The
  judge keeps them all required, like English names: a stored value is written from the user's own words, so it
  holds the user's nouns, and a different city, employer or pet name must not match ("Wohnt in Berlin" against
  "Wohnt in Hamburg"). What would make that too strict is compounding ("Grundschullehrer" for "Lehrer an einer
  Grundschule", "wohnt"/"wohn"), so in German (and Dutch) a unit also counts as shared, and a name as held, when
  one stem holds the other and the shorter has four letters or more.
- Unspaced scripts (Han, Kana, Hangul, Thai): character bigrams of each run instead of words. In Japanese only
  the kanji and katakana count (bigrams of each run of them, a lone character as itself), unless the text has
  nothing else: hiragana carries the particles and the inflection ("お酒は飲みません" and "お酒を飲まない" differ only
  there), as English stop words and suffixes do, and the judge drops it as the English matcher drops those.
  Japanese has no capitals, so its nouns stand for names, as German's do: the runs of two or more Han or
  Katakana characters ("東京", "薬剤師", "コロ") and a lone one before a case particle or at the end ("兄が",
  "酒を", "名前は遥"). Without a segmenter such a run may hold two words ("毎朝近所", "2匹飼"), so the stored
  value must hold each character of these nouns rather than the run as written ("東京" against "大阪" or "京都"
  fails, "毎朝、近所" holds "毎朝近所"). Kanji numerals before a counter are read as digits ("二匹" -> "2匹").
- Negation per language, from its words (Japanese from its endings: ない, ません, なく, ず, but not the "must"
  of なければならない). French needs "ne ... pas/plus/jamais/..." or a negative word; "ne ... que" (only) is no
  negation.

`language` is an ISO 639-1 code, or "auto" to take it from the texts (the script, then the stop words of the
languages with tables): a tiny heuristic with no model, so that the judge gives the same verdict on every machine.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import Stemmer

MATCH_SHARE = 0.5

# --- English, as the bench judged it before ---------------------------------------------------------------------

STOP_EN = frozenset("""a an the and or but of in on at to for from with by as into about is are am was were be been
being has have had do does did i im me my mine we our us you your he she his her him they their them it its this
that these those there here so very just really also too user users who which what when where how now currently
still some any mostly usually""".split())
NEGATIONS_EN = frozenset({"not", "no", "never", "none", "nothing", "without", "nobody", "neither", "nor"})
NUMBER_WORDS_EN = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
                   "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20"}
MONTHS_EN = ("january february march april may june july august september october november december").split()
_NO_APOSTROPHE = re.compile(r"\b(do|does|did|is|are|was|were|has|have|had|ca|wo|should|could|would)nt\b",
                            re.IGNORECASE)


def _open_en(text: str) -> str:
    text = text.replace("\u2019", "'")
    text = re.sub(r"\b(\d{4})-(\d{2})-(\d{2})\b",
                  lambda m: f"{int(m.group(3))} {MONTHS_EN[int(m.group(2)) - 1]} {m.group(1)}"
                  if 1 <= int(m.group(2)) <= 12 else m.group(0), text)
    text = re.sub(r"\b(can)(?:'t|not)\b|\b(won)'t\b", lambda m: "can not" if m.group(1) else "will not", text,
                  flags=re.IGNORECASE)
    text = _NO_APOSTROPHE.sub(lambda m: {"ca": "can", "wo": "will"}.get(m.group(1).lower(), m.group(1)) + " not",
                              text)
    return re.sub(r"n't\b", " not", re.sub(r"(\d+)(st|nd|rd|th)\b", r"\1", text))


def _stem_en(word: str) -> str:
    word = word.removesuffix("'s")
    if word.isdigit():
        return word
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "e", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            word = word[: -len(suffix)]
            if suffix in ("ing", "ed") and len(word) > 2 and word[-1] == word[-2] and word[-1] not in "aeiouls":
                word = word[:-1]  # running -> run, not runn
            break
    return word


def _tokens_en(text: str) -> list[str]:
    return [NUMBER_WORDS_EN.get(w, w) for w in re.findall(r"[\w']+", _open_en(text).casefold())]


@lru_cache(maxsize=65536)
def _english(text: str) -> tuple[frozenset[str], frozenset[str], bool]:
    tokens = _tokens_en(text)
    content = frozenset(_stem_en(w) for w in tokens if w.strip("'") not in STOP_EN and w not in NEGATIONS_EN)
    opened = _open_en(text)
    names = {_stem_en(w) for m in re.finditer(r"(?<!^)(?<![.!?] )\b[A-Z][\w'-]*", opened.strip())
             for w in _tokens_en(m.group(0))}
    required = frozenset((names | {w for w in (_stem_en(t) for t in tokens) if w.isdigit()}) - STOP_EN)
    return content, required, any(w in NEGATIONS_EN for w in tokens)


# --- the tables of the other languages ----------------------------------------------------------------------------

STOP: dict[str, frozenset[str]] = {
    "fr": frozenset("""le la les l un une des du de d au aux à a en et ou mais dans sur sous par pour avec chez vers
        entre est sont suis es sommes êtes était étaient été être ai as avons avez ont avait avaient avoir je j me m
        moi mon ma mes tu te t toi ton ta tes il elle on nous vous ils elles se s son sa ses leur leurs notre nos
        votre vos lui eux ce c cet cette ces ça cela ceci qui que qu quoi dont où y ici là très bien aussi trop déjà
        encore toujours maintenant actuellement désormais aujourd hui plus comme surtout souvent généralement
        utilisateur utilisatrice""".split()),
    "de": frozenset("""der die das den dem des ein eine einen einem einer eines und oder aber in im ins am an auf
        aus bei beim mit nach von vom seit zu zum zur für über unter vor als wie ist sind bin bist war waren gewesen
        sein seine seinen seinem seiner seines hat habe hast haben hatte hatten wird werden wurde ich mich mir mein
        meine meinen meinem meiner du dich dir dein deine er sie es ihm ihn ihr ihre ihren ihrem ihrer wir uns
        unser unsere euch man sich dass so sehr auch noch schon jetzt gerade derzeit aktuell momentan inzwischen
        mittlerweile mehr da hier dort meist meistens normalerweise nutzer nutzerin benutzer""".split()),
    "es": frozenset("""el la los las lo un una unos unas de del al a en y e o u pero con por para sobre entre desde
        hasta hace es son soy eres somos era eran fue ser está están estoy estás estamos estaba estar he ha has han
        hemos había haber tiene tengo tienen tener tenía yo me mi mis mí tú te ti tu tus él ella ello nos
        nosotros nosotras vosotros usted ustedes ellos ellas se su sus nuestro nuestra nuestros vuestro le les
        que qué quien cual cuando donde como muy también ya ahora actualmente todavía aún aquí allí este esta
        estos estas ese esa eso esto normalmente generalmente usuario usuaria""".split()),
    "pt": frozenset("""o a os as um uma uns umas de do da dos das ao à aos às em no na nos nas num numa e ou mas com
        por pelo pela para sobre entre desde até é são sou era eram foi ser estar está estão estou estava tem
        tenho têm ter tinha há eu me mim meu minha meus minhas tu te ti teu tua você vocês ele ela eles elas nós
        nosso nossa se seu sua seus suas lhe que quem qual quando onde como muito também já agora atualmente
        ainda aqui ali este esta isto esse essa isso aquele normalmente geralmente usuário utilizador""".split()),
    "it": frozenset("""il lo la i gli le l un uno una un di del della dei delle a al alla in nel nella e ed o ma con
        per su tra fra da dal è sono sei siamo era erano essere ha ho hai hanno avere io mi me mio mia miei mie tu
        ti te tuo tua lui lei noi voi loro si suo sua che chi quale quando dove come molto anche già ora adesso
        ancora qui""".split()),
    "nl": frozenset("""de het een en of maar van in op aan te voor met bij uit naar om als is zijn ben was waren
        heeft heb hebben had ik mij me mijn jij je jou jouw hij zij ze het wij we ons onze u hun die dat dit deze er
        hier daar zo heel ook nog al nu""".split()),
}
NEGATIONS: dict[str, frozenset[str]] = {
    "fr": frozenset({"ne", "n", "pas", "jamais", "aucun", "aucune", "rien", "sans", "ni", "nul", "nulle", "guère",
                     "nullement"}),
    "de": frozenset({"nicht", "kein", "keine", "keinen", "keinem", "keiner", "keines", "nie", "niemals",
                     "nimmer", "nichts", "niemand", "ohne", "weder"}),
    "es": frozenset({"no", "nunca", "jamás", "ni", "ningún", "ninguno", "ninguna", "nadie", "sin", "tampoco"}),
    "pt": frozenset({"não", "nunca", "jamais", "nem", "nenhum", "nenhuma", "ninguém", "sem"}),
    "it": frozenset({"non", "mai", "nessuno", "nessuna", "niente", "nulla", "senza", "né"}),
    "nl": frozenset({"niet", "geen", "nooit", "niets", "niemand", "zonder"}),
}
# French "ne" alone is not enough when its partner is "que" ("ne mange que du poisson": only fish)
_FR_NE, _FR_NE_PARTNERS, _FR_ONLY = frozenset({"ne", "n"}), frozenset({"plus", "personne"}), frozenset({"que", "qu"})

# "one" is left out where it is also the article (un, ein, uno, um): a number the gold does not state must not
# become one it requires
NUMBER_WORDS: dict[str, dict[str, str]] = {
    "fr": dict(zip("deux trois quatre cinq six sept huit neuf dix onze douze vingt trente quarante cinquante cent"
                   .split(), "2 3 4 5 6 7 8 9 10 11 12 20 30 40 50 100".split())),
    "de": dict(zip("zwei zwo drei vier fünf sechs sieben acht neun zehn elf zwölf zwanzig dreißig vierzig fünfzig "
                   "hundert".split(), "2 2 3 4 5 6 7 8 9 10 11 12 20 30 40 50 100".split())),
    "es": dict(zip("dos tres cuatro cinco seis siete ocho nueve diez once doce veinte treinta cuarenta cincuenta "
                   "cien".split(), "2 3 4 5 6 7 8 9 10 11 12 20 30 40 50 100".split())),
    "pt": dict(zip("dois duas três quatro cinco seis sete oito nove dez onze doze vinte trinta quarenta cinquenta "
                   "cem".split(), "2 2 3 4 5 6 7 8 9 10 11 12 20 30 40 50 100".split())),
    "it": dict(zip("due tre quattro cinque sette otto nove dieci undici dodici venti".split(),
                   "2 3 4 5 7 8 9 10 11 12 20".split())),
    "nl": dict(zip("twee drie vier vijf zes zeven acht negen tien elf twaalf twintig".split(),
                   "2 3 4 5 6 7 8 9 10 11 12 20".split())),
}
MONTHS: dict[str, tuple[str, ...]] = {
    "fr": tuple("janvier février mars avril mai juin juillet août septembre octobre novembre décembre".split()),
    "de": tuple("januar februar märz april mai juni juli august september oktober november dezember".split()),
    "es": tuple("enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre".split()),
    "pt": tuple("janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro".split()),
    "it": tuple("gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre"
                .split()),
    "nl": tuple("januari februari maart april mei juni juli augustus september oktober november december".split()),
}
_DATE_WRITTEN = {"fr": "{d} {month} {y}", "de": "{d}. {month} {y}", "es": "{d} de {month} de {y}",
                 "pt": "{d} de {month} de {y}", "it": "{d} {month} {y}", "nl": "{d} {month} {y}"}
STEMMERS = {"en": "english", "fr": "french", "de": "german", "es": "spanish", "pt": "portuguese", "it": "italian",
            "nl": "dutch", "sv": "swedish", "da": "danish", "no": "norwegian", "nb": "norwegian", "fi": "finnish",
            "ru": "russian", "pl": "polish", "cs": "czech", "tr": "turkish", "ro": "romanian", "hu": "hungarian",
            "ca": "catalan", "el": "greek", "ar": "arabic", "eu": "basque", "ga": "irish", "lt": "lithuanian",
            "hi": "hindi", "id": "indonesian", "sr": "serbian", "et": "estonian", "hy": "armenian", "ne": "nepali",
            "ta": "tamil", "fa": "persian", "yi": "yiddish"}
# where one word is often written as several, or several as one (Lehrer an einer Grundschule, Grundschullehrer)
COMPOUNDING = frozenset({"de", "nl"})
_PART = 4  # the shortest stem that may count inside a longer one in a compounding language

# --- scripts ----------------------------------------------------------------------------------------------------

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3005\u3006\u30f5\u30f6"
_HIRAGANA = "\u3041-\u309f"
_KATAKANA = "\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
_HANGUL = "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
_THAI = "\u0e00-\u0e7f"
_UNSPACED_CHARS = _HAN + _HIRAGANA + _KATAKANA + _HANGUL + _THAI
_UNIT = re.compile(rf"(\d+)|([{_UNSPACED_CHARS}]+)|([^\W\d_{_UNSPACED_CHARS}]+)")
_CONTENT_RUN = re.compile(rf"[{_HAN}{_KATAKANA}]+")
# a Japanese noun, as far as the script tells: a run of two or more Han or Katakana characters, or one before a
# case particle or at the end ("兄が", "酒を", "名前は遥"); one before other kana is a verb's stem ("住んで")
_NOUN_RUN = re.compile(rf"[{_HAN}{_KATAKANA}]{{2,}}|[{_HAN}{_KATAKANA}](?=[をがはのにでともへや]|$)")
UNSPACED_LANGUAGES = frozenset({"ja", "zh", "ko", "th"})

_KANJI_DIGITS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_COUNTERS = "人匹歳才年回ヶヵか箇月日週時分台冊個つ本枚杯度階周行"
_KANJI_NUMBER = re.compile(rf"([一二三四五六七八九十百]+)(?=[{_COUNTERS}])")
# a counter belongs to its number, not to the kanji after it ("2匹飼っている": 匹 | 飼っている)
_COUNTED = re.compile(rf"(\d[{_COUNTERS}])(?=[{_HAN}{_KATAKANA}])")
# "must" is said with a negation (しなければならない: "if one does not, it will not do"): not a negation
_JA_MUST = re.compile(r"な(?:ければ|くては|くちゃ|きゃ)(?:なら|いけ|だめ|ダメ)(?:ない|ません)?"
                      r"|ないと(?:いけ|だめ|ダメ)(?:ない|ません)?")
_JA_NEGATION = re.compile(r"(?<![少危])ない|なかった|ません|なく|(?<![必ま])ず(?=[にとも、。，,.!！?？\s]|$)|なし|無し")


def _kanji_number(numeral: str) -> str:
    total, digit = 0, 0
    for ch in numeral:
        if ch == "百":
            total, digit = total + (digit or 1) * 100, 0
        elif ch == "十":
            total, digit = total + (digit or 1) * 10, 0
        else:
            digit = _KANJI_DIGITS[ch]
    return str(total + digit)


def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text).replace("\u2019", "'").replace("\u02bc", "'")


def _plain(word: str) -> str:
    """A Latin-script word without its diacritics (after stemming: the stemmers read them)."""
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))


@lru_cache(maxsize=64)
def _stemmer(language: str) -> Any:
    algorithm = STEMMERS.get(language)
    return Stemmer.Stemmer(algorithm) if algorithm in Stemmer.algorithms() else None


# digits, not word boundaries, delimit a date: in Japanese a date runs into the next word ("2027-04-01から")
_ISO = re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)")
_DAY_FIRST = re.compile(r"(?<![\d.])(\d{1,2})[./](\d{1,2})[./](\d{4})(?!\d)")


def _written_dates(text: str, language: str) -> str:
    """ISO dates (and day-first numeric ones, 1.3.2027 or 1/3/2027) written the language's way."""
    months = MONTHS.get(language)
    if language in ("ja", "zh"):
        return _ISO.sub(lambda m: f"{m[1]}年{int(m[2])}月{int(m[3])}日", text)
    if language == "ko":
        return _ISO.sub(lambda m: f"{m[1]}년 {int(m[2])}월 {int(m[3])}일", text)
    if months is None:
        return text

    def written(y: str, mo: str, d: str, whole: str) -> str:
        return _DATE_WRITTEN[language].format(d=int(d), month=months[int(mo) - 1], y=y) \
            if 1 <= int(mo) <= 12 and 1 <= int(d) <= 31 else whole

    text = _ISO.sub(lambda m: written(m[1], m[2], m[3], m[0]), text)
    return _DAY_FIRST.sub(lambda m: written(m[3], m[2], m[1], m[0]), text)


def _ordinals(text: str) -> str:
    """1er, 2e, 2ème, 1º, 1.º, 3ª -> 1, 2, 2, 1, 1, 3 (German "1." loses its point with the other punctuation)."""
    return re.sub(r"\b(\d+)(?:er|re|ère|e|ème|eme|nd|nde|\.?º|\.?ª|\.?o|\.?a|°)(?=\W|$)", r"\1", text)


# --- analysis of one text ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Analysis:
    """What the judge compares: the content units, the units every match must hold (names, numbers, months), the
    Japanese nouns each character of which a match must hold somewhere in its text, and whether it is negated."""

    content: frozenset[str]
    required: frozenset[str]
    negated: bool
    nouns: frozenset[str] = frozenset()
    text: str = ""


@lru_cache(maxsize=65536)
def _analyse(text: str, language: str) -> _Analysis:
    if language == "en":
        content, required, negated = _english(text)
        return _Analysis(content, required, negated)
    if language in UNSPACED_LANGUAGES:
        return _unspaced(text, language)
    return _cased(text, language)


def _cased(text: str, language: str) -> _Analysis:
    stop, negations = STOP.get(language, frozenset()), NEGATIONS.get(language, frozenset())
    numbers, months = NUMBER_WORDS.get(language, {}), frozenset(MONTHS.get(language, ()))
    stemmer = _stemmer(language)
    opened = _ordinals(_written_dates(_normal(text), language))
    content: set[str] = set()
    required: set[str] = set()
    words: list[str] = []
    previous_end = 0
    for i, m in enumerate(re.finditer(r"[^\W_]+", opened)):
        raw = m.group(0)
        starts = i == 0 or re.search(r"[.!?]\s*$", opened[previous_end:m.start()]) is not None
        previous_end = m.end()
        word = raw.casefold()
        word = numbers.get(word, word)
        words.append(word)
        if word in stop or word in negations:
            continue
        unit = word if word.isdigit() else _plain(stemmer.stemWord(word) if stemmer else word)
        if language == "de" and len(unit) > 3 and unit.endswith("t") and not unit.endswith("tt"):
            unit = unit[:-1]  # the third person's -t, which Snowball keeps: "lebt" and "lebe" are one verb
        content.add(unit)
        if word.isdigit() or word in months or (raw[0].isupper() and not starts):
            required.add(unit)
    return _Analysis(frozenset(content), frozenset(required), _negated_words(words, language))


def _negated_words(words: list[str], language: str) -> bool:
    negations = NEGATIONS.get(language, frozenset())
    if language == "fr":
        present = set(words)
        if present & (negations - _FR_NE):
            return True
        return bool(present & _FR_NE) and (bool(present & _FR_NE_PARTNERS) or not present & _FR_ONLY)
    return any(w in negations for w in words)


def _unspaced(text: str, language: str) -> _Analysis:
    opened = _written_dates(_normal(text), language)
    if language == "ja":
        opened = _COUNTED.sub(r"\1 ", _KANJI_NUMBER.sub(lambda m: _kanji_number(m.group(1)), opened))
    units: list[str] = []
    kana: list[str] = []
    required: set[str] = set()
    for digits, run, word in _UNIT.findall(opened):
        if digits:
            units.append(digits)
            required.add(digits)
        elif word:
            units.append(word.casefold())
            if word[0].isupper():  # no capitals in the script: a capitalised Latin word is a name wherever it is
                required.add(word.casefold())
        elif language == "ja":
            units += [gram for part in _CONTENT_RUN.findall(run) for gram in _bigrams(part)]
            kana += _bigrams(run)
        else:
            units += _bigrams(run)
    content = frozenset(units or kana)
    nouns = frozenset(_NOUN_RUN.findall(opened)) if language == "ja" else frozenset()
    negated = bool(_JA_NEGATION.search(_JA_MUST.sub("", opened))) if language == "ja" else \
        _negated_words([w.casefold() for w in re.findall(r"[^\W\d_]+", opened)], language)
    return _Analysis(content, frozenset(required), negated, nouns, opened.casefold())


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]


# --- the language of a text --------------------------------------------------------------------------------------

_CUES: dict[str, frozenset[str]] = {
    "en": STOP_EN | NEGATIONS_EN | frozenset("lives works likes loves speaks eats drinks plays wants prefers always "
                                             "answer reply".split()),
    "fr": STOP["fr"] | NEGATIONS["fr"] | frozenset("habite travaille vit mange boit parle aime appelle préfère "
                                                   "réponds répondre toujours".split()),
    "de": STOP["de"] | NEGATIONS["de"] | frozenset("wohnt lebt arbeitet heißt isst trinkt spricht mag liebt spielt "
                                                   "antworte immer bitte".split()),
    "es": STOP["es"] | NEGATIONS["es"] | frozenset("vive trabaja llama come bebe habla gusta prefiere juega "
                                                   "responde siempre".split()),
    "pt": STOP["pt"] | NEGATIONS["pt"] | frozenset("mora vive trabalha chama come bebe fala gosta prefere joga "
                                                   "responda sempre".split()),
    "it": STOP["it"] | NEGATIONS["it"] | frozenset("vive abita lavora chiama mangia beve parla piace sempre".split()),
    "nl": STOP["nl"] | NEGATIONS["nl"] | frozenset("woont werkt heet eet drinkt spreekt altijd".split()),
}
_MARKS = {"de": "äöüß", "fr": "çèêëîïôœùûàâ", "es": "ñ¿¡áíóú", "pt": "ãõç"}
# endings that break a tie between languages that share their short words ("es" is French and Spanish)
_ENDINGS = {"en": ("ing", "ly"), "fr": ("eau", "eux", "ment", "é", "ée", "ais", "ait"),
            "de": ("ung", "keit", "heit", "sch", "cht", "lich"), "es": ("o", "os", "as", "ción", "dad", "ía"),
            "pt": ("o", "ão", "ções", "ção", "dade", "inho", "inha"), "it": ("o", "zione", "tà", "ggio"),
            "nl": ("ij", "heid")}


@lru_cache(maxsize=65536)
def detect(text: str) -> str:
    """The language of a short text: Japanese when it has kana, Korean Hangul, Thai Thai, Chinese Han alone;
    otherwise the language with tables whose cue words (stop words, negations, everyday verbs), letters and
    word endings the text uses most, English on a tie with it or when nothing tells."""
    if re.search(f"[{_HIRAGANA}{_KATAKANA}]", text):
        return "ja"
    for language, chars in (("ko", _HANGUL), ("th", _THAI), ("zh", _HAN)):
        if re.search(f"[{chars}]", text):
            return language
    words = re.findall(r"[^\W\d_]+", _normal(text).lower())  # lower, not casefold: "heißt" keeps its ß
    scores = {language: 2 * sum(w in cues for w in words)
              + 2 * sum(c in _MARKS.get(language, "") for w in words for c in w)
              + sum(w.endswith(_ENDINGS[language]) for w in words if len(w) > 3)
              for language, cues in _CUES.items()}
    best = max(scores.values())
    return "en" if best == 0 or scores["en"] == best else max(scores, key=lambda k: scores[k])


def _language(language: str, *texts: str) -> str:
    language = (language or "en").lower().split("-")[0].split("_")[0]
    return detect(" ".join(texts)) if language in ("auto", "und", "") else language


# --- the judge -----------------------------------------------------------------------------------------------------


def content(text: str, language: str = "en") -> frozenset[str]:
    """The text's content units: stemmed words without stop words and negations, or bigrams (unspaced scripts)."""
    return _analyse(text, _language(language, text)).content


def required(text: str, language: str = "en") -> frozenset[str]:
    """The units a match of this text must hold: its names, numbers and (other than English) month names; in
    Japanese also its nouns (each of their characters)."""
    a = _analyse(text, _language(language, text))
    return a.required | a.nouns


def negated(text: str, language: str = "en") -> bool:
    """Whether the text says something does not hold (not, ne ... pas, nicht, kein, ya no, não, ない, ...)."""
    return _analyse(text, _language(language, text)).negated


def _holds(unit: str, units: frozenset[str], compounding: bool) -> bool:
    if unit in units:
        return True
    return compounding and not unit.isdigit() and any(
        len(other) >= _PART and len(unit) >= _PART and (unit in other or other in unit)
        for other in units if not other.isdigit())


def share(fact: str, gold: str, language: str = "en") -> float:
    """How well `fact` states `gold`: the Dice coefficient of their content units (twice the shared units over the
    two counts), or 0 when `fact` lacks a name or number of the gold, or one is negated and the other not."""
    language = _language(language, fact, gold)
    want, have = _analyse(gold, language), _analyse(fact, language)
    if not want.content or not have.content or want.negated != have.negated:
        return 0.0
    compounding = language in COMPOUNDING
    if not all(_holds(unit, have.content, compounding) for unit in want.required):
        return 0.0
    if any(char not in have.text for noun in want.nouns for char in noun):
        return 0.0
    if not compounding:
        return 2 * len(want.content & have.content) / (len(want.content) + len(have.content))
    shared = sum(_holds(u, have.content, True) for u in want.content) + \
        sum(_holds(u, want.content, True) for u in have.content)
    return shared / (len(want.content) + len(have.content))


def _same(a: str, b: str) -> bool:
    def flat(text: str) -> str:
        return " ".join(_normal(text).casefold().split()).rstrip(".。．")
    return flat(a) == flat(b)


def best_match(fact: str, candidates: list[Any], language: str = "en") -> Any | None:
    """The gold fact or trap `fact` states best, or None below `MATCH_SHARE`: one with the same text first, then
    the highest Dice. On a tie a fact wins over a trap ("Lives in Berlin" said at last, after "Is Berlin
    expensive?"), and the later of two facts wins. A candidate with a `language` of its own (a conversation that
    changes language) is judged in it."""
    ordered = sorted(candidates, key=lambda g: g.kind == "fact")  # stable: traps first, each in their order
    same = [g for g in ordered if _same(g.value, fact)]
    if same:
        return same[-1]
    best, best_share = None, MATCH_SHARE
    for gold in ordered:
        s = share(fact, gold.value, getattr(gold, "language", None) or language)
        if s >= best_share:
            best, best_share = gold, s
    return best
