"""Chat messages in English, French, German, Spanish and Japanese, ordinary and hard (dates, ordinals,
abbreviations, decimals, links, addresses, quotations, emoji), which the properties of the parse run over."""

from __future__ import annotations

MESSAGES: dict[str, tuple[str, ...]] = {
    "en": (
        "I moved to Berlin in 2019. Dr. Smith was my neighbour, and he is 4.5 years older than me.",
        "I don't eat meat anymore, but my sister Ana still does. She lives in Sevilla with her 2 cats 🐱.",
        "Can you help me? I was thinking... maybe I should learn Spanish, etc. Mail me at ana@example.com!",
        "My favourite film is \"Amélie\" and I watch it every year, though my husband hates it.",
        "Check https://example.org/i-live-in-berlin. It's a funny page about Mr. and Mrs. Brown.",
        "Hi there\nI started a new job at Acme Inc. last week; the pay is 1,000 euros more.",
    ),
    "fr": (
        "Je n'habite plus à Berlin ! J'habite à Lyon depuis le 1er mars, et je travaille chez Airbus.",
        "Ma sœur Ana vit à Séville. Elle a 2 chats, 4,5 kilos chacun, etc. Tu viens ?",
        "« Je suis fatiguée », dit-elle. Puis elle est partie à Paris avec M. Bernard.",
        "Bon… je ne sais pas. Écris-moi à jean.dupont@exemple.fr, merci beaucoup !",
        "J'adore le café ☕ le matin, mais je ne bois jamais de thé. Réponds toujours en français.",
    ),
    "de": (
        "Ich komme am 1. März 2026 an. Bis dann!",
        "Ich wohne nicht mehr in Berlin, sondern seit dem 15. Januar in Köln und arbeite bei der Bahn.",
        "Das ist z. B. sehr teuer, es kostet 4,5 Euro bzw. 1.000 Euro im Jahr. Dr. Müller sagt das auch.",
        "Meine Schwester Anna wohnt in Hamburg. Sie hat zwei Katzen und einen Hund 🐶.",
        "Er sagte: „Ich bin müde.“ Dann ging er. Siehe https://beispiel.de/ich-wohne-in-berlin, lustig!",
    ),
    "es": (
        "¿Dónde vives? Ya no vivo en Berlín, ahora vivo en Lisboa y trabajo en casa.",
        "¡Qué bien! Mañana voy a Madrid con el Sr. García, que tiene 4,5 millones.",
        "Mi hermana Ana vive en Sevilla. Tiene dos gatos y 1.000 libros 📚.",
        "Bueno... no sé. Escríbeme a ana.lopez@ejemplo.es, por favor. Responde siempre en español.",
        "Nací el 3 de mayo de 1990 en Valencia, pero vivo en Barcelona desde hace años.",
    ),
    "ja": (
        "東京に住んでいます。大阪が好きです。",
        "もう京都には住んでいません！今は札幌で働いています。",
        "本当？すごい！価格は4.5ドルです。",
        "「疲れた。」と彼女は言った。そして帰った。",
        "メールはana@example.comです。猫が好き😺。犬も好きですが、アレルギーがあります。",
        "２０２６年３月１日に引っ越します。楽しみです。",
    ),
}

# One ordinary sentence per language, long enough for a detector to tell (four words or more).
ORDINARY: dict[str, tuple[str, ...]] = {
    "en": ("I live in Berlin with my wife.", "My brother works as a nurse in Leeds.",
           "Please always answer in short sentences."),
    "fr": ("J'habite à Lyon depuis le mois de mars.", "Mon frère travaille comme infirmier à Lille.",
           "Réponds toujours en phrases courtes, s'il te plaît."),
    "de": ("Ich wohne seit zwei Jahren in Hamburg.", "Mein Bruder arbeitet als Krankenpfleger in Bremen.",
           "Bitte antworte immer in kurzen Sätzen."),
    "es": ("Vivo en Sevilla desde hace dos años.", "Mi hermano trabaja como enfermero en Bilbao.",
           "Por favor, responde siempre con frases cortas."),
    "ja": ("東京に住んでいます。", "兄は看護師として働いています。", "いつも短い文で答えてください。"),
}

ALL = tuple((language, message) for language, messages in MESSAGES.items() for message in messages)
