"""Language for memory, in any language: a message parsed once into sentences and clauses (with offsets, ids,
languages and whose words they are), the terms, numbers and names texts are compared by, and per-language
lexicons that may break ties in their own language only.

Importing this package is cheap: the segmenter, the language model, the stemmers and the number reader load on
first use.
"""

from coop.memory.language.detect import detect
from coop.memory.language.parse import Clause, Parse, Sentence, parse
from coop.memory.language.terms import names, numbers, terms

__all__ = ["Clause", "Parse", "Sentence", "detect", "names", "numbers", "parse", "terms"]
