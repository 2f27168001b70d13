"""German: "nicht", "kein-", "nicht mehr"; separable and perfect forms matched by their fixed part."""

_KIN = ("freund", "freundin", "schwester", "bruder", "mutter", "mama", "vater", "papa", "frau", "mann", "sohn",
        "tochter", "chef", "chefin", "kollege", "kollegin", "nachbar", "nachbarin", "cousin", "cousine", "tante",
        "onkel", "oma", "opa", "partner", "partnerin", "eltern", "kinder")

MARKERS: dict[str, tuple[str, ...]] = {
    "negation": ("nicht", "kein", "keine", "keinen", "keinem", "keiner", "keines", "nie", "niemals", "nichts",
                 "niemand", "nirgends", "ohne", "weder"),
    "no_longer": ("nicht mehr", "kein … mehr", "keine … mehr", "keinen … mehr", "nie mehr", "nie wieder",
                  "aufgehört", "höre … auf"),
    "doubt": ("vielleicht", "wahrscheinlich", "eventuell", "ich glaube", "ich denke", "nicht sicher", "möglicherweise",
              "ich überlege", "noch nicht entschieden"),
    "condition": ("wenn", "falls", "würde", "würden", "wäre", "wären", "angenommen", "stell dir vor"),
    "wish": ("ich hoffe", "hoffentlich", "ich wünsche", "ich würde gern", "ich würde gerne", "eines tages",
             "ich träume davon"),
    "past": ("früher", "damals", "als kind", "ehemals", "einst"),
    "dream": ("geträumt", "im traum", "in meinem traum", "einen traum"),
    "irony": ("ja klar", "na klar", "von wegen", "nur ein scherz", "war ein scherz"),
    "fiction": ("meine figur", "mein charakter", "meine rolle", "in meinem roman", "im roman", "in meiner geschichte",
                "in der geschichte", "im spiel", "rollenspiel", "fiktiv"),
    "report": ("sagt", "sagte", "gesagt", "meint", "meinte", "zufolge", "erzählt", "behauptet"),
    "change": ("geworden", "gewechselt", "angefangen", "verlassen", "endlich", "jetzt", "nun", "inzwischen",
               "mittlerweile", "seit kurzem", "gewechselt", "umgezogen", "verkauft", "angefangen", "wieder", "neu",
               "neue", "neuen", "neuer", "stattdessen", "nicht mehr"),
    "subject": ("^ich", "^wir"),
    "self": ("^ich", "^wir", "^mein", "^meine"),
    "addressee": ("du", "dich", "dir", "dein", "deine", "deinen", "deinem", "euch", "ihnen"),
    "directive": ("bitte", "ab sofort", "ab jetzt", "von nun an", "in zukunft", "künftig", "nächstes mal",
                  "^antworte", "^antworten sie", "^schreib", "^schreibe", "^nenn mich", "^nenne mich", "^sprich",
                  "^benutze", "^verwende", "^sei", "^vermeide", "^gib", "^erkläre", "^halte", "^duz mich",
                  "^sieze mich"),
    "standing": ("immer", "nie", "niemals", "ab sofort",
                 "ab jetzt", "von nun an", "in zukunft", "künftig", "jedes mal"),
    "with_me": ("und ich", "ich und", "mit mir"),
    "other": (("^er", "^sie")
              + tuple(f"^{det} {kin}" for det in ("mein", "meine", "meinem", "unser", "unsere") for kin in _KIN)),
    "question": ("^soll ich", "^sollte ich", "^kann ich", "^darf ich", "^muss ich", "^was", "^wo", "^wann",
                 "^warum", "^wie", "^welche", "^welcher", "^welches"),
    "unsafe": ("vergiss … regeln", "ignoriere … regeln", "lösche", "löschen", "vergiss alles", "sicherheitsregeln",
               "ohne einschränkungen", "ohne grenzen", "ohne filter", "entwicklermodus", "ignoriere deine regeln",
               "vergiss deine regeln"),
    "widening": ("weitergeben", "gib … weiter", "teile … mit", "mit … teilen", "verrate", "verraten", "preisgeben",
                 "gib … preis", "leite … weiter", "weiterleiten", "schicke", "schick", "veröffentliche",
                 "sag jedem", "sage jedem", "sag allen", "sage allen", "erzähl jedem", "erzähle jedem", "zeig jedem",
                 "zeige jedem", "gib jedem", "mit jedem", "an jeden", "an alle", "mit allen", "jedem, der",
                 "allen, die", "jedermann", "irgendwem", "irgendjemandem", "der danach fragt", "die danach fragen",
                 "wer danach fragt", "fremden", "öffentlich", "egal wer", "ohne ausnahme",
                 "was du über mich weisst", "alles über mich"),
    "withholding": ("hör auf", "höre auf", "vermeide", "behalte … für dich", "halte … geheim", "halte … privat",
                    "halte … vertraulich"),
    "the_user": ("der nutzer", "die nutzerin", "der benutzer", "die benutzerin", "nutzer", "benutzer"),
    "aside": ("^es", "^das", "^dies", "^dieses"),
    "consequence": ("^also", "^deshalb", "^deswegen", "^daher", "^darum", "^weil", "^denn", "^sodass", "^so dass"),
    "first_person": ("ich", "mich", "mir", "mein", "meine", "meinen", "meinem", "meiner", "meines", "wir", "uns",
                     "unser", "unsere", "unseren", "unserem"),
    "possessive": ("^mein", "^meine", "^meinem", "^meinen", "^unser", "^unsere"),
    "social": ("hallo", "hi", "servus", "moin", "guten morgen", "guten tag", "guten abend", "gute nacht", "danke",
               "danke schön", "dankeschön", "vielen dank", "tschüss", "bis bald", "bis dann", "entschuldigung",
               "sorry", "okay", "ok", "super", "perfekt", "toll", "haha", "übrigens"),
}

# whether a clause writes its subject ("I", "je", "ich"), so that one without it is not the speaker's: not so
# where the verb carries it ("vivo", "moro", "住んでいます")
WRITES_SUBJECTS = True

# words that may come before a phrase said to open a clause ("^..."): "And always answer ...", "Just never ..."
LEAD_INS: tuple[str, ...] = ("und", "aber", "also", "auch", "dann", "ach", "na")

CONJUNCTIONS: tuple[str, ...] = ("und", "aber", "oder", "denn", "sondern", "doch", "weil", "obwohl")

# words after which what comes next stands on its own: a negation before them does not reach past them
CONTRASTS: tuple[str, ...] = ("aber", "sondern", "jedoch", "außer")
