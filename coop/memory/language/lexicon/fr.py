"""French: "ne … pas" with or without its "ne", elisions ("n'", "j'") joined to the next word. "Si" alone marks a
condition: "s'il" is mostly "s'il te plaît"."""

_KIN = ("ami", "amie", "sœur", "frère", "mère", "père", "femme", "mari", "copain", "copine", "fils", "fille", "patron",
        "patronne", "chef", "collègue", "voisin", "voisine", "cousin", "cousine", "tante", "oncle", "grand-mère",
        "grand-père", "compagnon", "compagne", "parents", "enfants")

MARKERS: dict[str, tuple[str, ...]] = {
    "negation": ("ne", "n'", "pas", "jamais", "rien", "personne", "aucun", "aucune", "ni", "sans", "non"),
    "no_longer": ("ne … plus", "n' … plus", "plus jamais", "j'ai arrêté", "arrêté de", "ne … plus du tout",
                  "c'est fini"),
    "doubt": ("peut-être", "je pense", "je crois", "probablement", "pas sûr", "pas sûre", "il se peut",
              "j'envisage", "je réfléchis", "éventuellement", "pas encore décidé"),
    "condition": ("si", "au cas où", "à condition que", "imaginons", "supposons"),
    "wish": ("j'espère", "je souhaite", "je voudrais", "j'aimerais", "un jour", "je rêve de"),
    "past": ("avant", "autrefois", "à l'époque", "quand j'étais", "dans le temps"),
    "dream": ("j'ai rêvé", "dans mon rêve", "en rêve", "cette nuit j'ai rêvé", "un rêve"),
    "irony": ("c'est ça", "mais bien sûr", "mon œil", "je plaisante", "je rigole"),
    "fiction": ("mon personnage", "dans mon roman", "dans le roman", "dans mon histoire", "dans l'histoire",
                "dans le jeu", "jeu de rôle", "imaginons", "fictif", "fictive"),
    "report": ("dit", "a dit", "m'a dit", "disait", "selon", "raconte", "prétend", "pense que"),
    "change": ("devenu", "devenue", "suis passé", "suis passée", "rejoint", "quitté", "enfin", "maintenant",
               "désormais", "dorénavant", "depuis peu", "changé", "déménagé", "vendu", "commencé", "à nouveau",
               "de nouveau", "nouveau", "nouvelle", "plutôt", "ne … plus", "n' … plus"),
    "subject": ("^je", "^j'", "^nous"),
    "self": ("^je", "^j'", "^moi", "^nous", "^mon", "^ma", "^mes"),
    "addressee": ("tu", "te", "t'", "toi", "vous", "ton", "ta", "tes", "votre", "vos"),
    "directive": ("^fais", "^faites", "^mets", "^dis-moi", "^reste",
                  "s'il te plaît", "s'il vous plaît", "stp", "svp", "à partir de maintenant", "dorénavant",
                  "désormais", "à l'avenir", "la prochaine fois", "^réponds", "^répondez", "^écris", "^écrivez",
                  "^utilise", "^utilisez", "^appelle-moi", "^appelez-moi", "^parle", "^parlez", "^tutoie",
                  "^vouvoie", "^ne me", "^n'utilise", "^évite", "^évitez", "^donne", "^explique", "^sois",
                  "^soyez", "^garde"),
    "standing": ("toujours", "jamais", "à partir de maintenant", "dorénavant",
                 "désormais", "à l'avenir", "chaque fois", "à chaque fois"),
    "with_me": ("et moi", "moi et", "avec moi"),
    "other": (("^il", "^elle", "^ils", "^elles")
              + tuple(f"^{det} {kin}" for det in ("mon", "ma", "mes", "notre", "nos") for kin in _KIN)),
    "question": ("^est-ce que", "^est-ce qu'", "^dois-je", "^devrais-je", "^puis-je", "^qu'est-ce", "^pourquoi",
                 "^comment", "^où", "^quand", "^quel", "^quelle"),
    "unsafe": ("oublie … règles", "ignore … règles", "supprime", "supprimer", "efface", "effacer", "oublie tout",
               "règles de sécurité", "consignes de sécurité", "sans restriction", "sans restrictions",
               "sans limite", "sans limites", "sans filtre", "mode développeur", "ignore tes règles",
               "oublie tes règles"),
    "widening": ("partage", "partager", "révèle", "révéler", "divulgue", "divulguer", "transmets", "transmettre",
                 "envoie", "envoyer", "publie", "publier", "à tout le monde", "avec tout le monde",
                 "n'importe quelle personne", "n'importe qui", "n'importe quel", "n'importe quelle", "à quiconque",
                 "toute personne", "qui le demande", "qui la demande", "qui les demande", "aux autres",
                 "avec les autres", "à des inconnus", "en public", "publiquement", "peu importe qui", "sans exception",
                 "ce que tu sais sur moi", "ce que tu sais de moi", "ce que vous savez sur moi"),
    "withholding": ("arrête de", "évite de", "garde … pour toi", "garde … secret", "garde … secrète",
                    "garde … privé", "garde … privée", "garde … confidentiel"),
    "the_user": ("l'utilisateur", "l'utilisatrice", "utilisateur", "utilisatrice"),
    "aside": ("^c'", "^ce", "^ça", "^cela", "^ceci", "^il y a"),
    "consequence": ("^donc", "^alors", "^du coup", "^parce que", "^parce qu'", "^car", "^puisque",
                    "^c'est pourquoi", "^d'où"),
    "first_person": ("je", "j'", "me", "m'", "moi", "mon", "ma", "mes", "nous", "notre", "nos"),
    "possessive": ("^mon", "^ma", "^mes", "^notre", "^nos"),
    "social": ("salut", "bonjour", "bonsoir", "coucou", "merci", "merci beaucoup", "merci bien", "au revoir",
               "à bientôt", "à plus", "bonne nuit", "bonne journée", "bonne soirée", "pardon", "désolé", "désolée",
               "d'accord", "ok", "super", "parfait", "génial", "mdr", "haha", "au fait"),
}

# whether a clause writes its subject ("I", "je", "ich"), so that one without it is not the speaker's: not so
# where the verb carries it ("vivo", "moro", "住んでいます")
WRITES_SUBJECTS = True

# words that may come before a phrase said to open a clause ("^..."): "And always answer ...", "Just never ..."
LEAD_INS: tuple[str, ...] = ("et", "mais", "alors", "donc", "aussi", "bon", "ah", "puis")

CONJUNCTIONS: tuple[str, ...] = ("et", "mais", "ou", "donc", "car", "parce que", "bien que", "alors que", "puis")

# words after which what comes next stands on its own: a negation before them does not reach past them
CONTRASTS: tuple[str, ...] = ("mais", "sauf", "cependant", "par contre", "en revanche")
