"""Portuguese (European and Brazilian): "não", "já não", "não … mais", "deixei de"."""

_KIN = ("amigo", "amiga", "irmã", "irmão", "mãe", "pai", "mulher", "marido", "esposa", "esposo", "namorado",
        "namorada", "filho", "filha", "chefe", "colega", "vizinho", "vizinha", "primo", "prima", "tia", "tio", "avó",
        "avô", "pais", "filhos")

MARKERS: dict[str, tuple[str, ...]] = {
    "negation": ("não", "nunca", "jamais", "nada", "ninguém", "nenhum", "nenhuma", "nem", "sem", "tampouco"),
    "no_longer": ("já não", "não … mais", "deixei de", "parei de", "deixou de", "nunca mais"),
    "doubt": ("talvez", "acho que", "provavelmente", "se calhar", "não tenho certeza", "não sei se", "pode ser que",
              "estou pensando em"),
    "condition": ("se", "caso", "a menos que", "imagina", "suponhamos"),
    "wish": ("espero", "gostaria", "tomara", "oxalá", "um dia", "sonho em"),
    "past": ("antes", "costumava", "antigamente", "quando eu era", "naquela época", "em criança"),
    "dream": ("sonhei", "no meu sonho", "tive um sonho"),
    "irony": ("até parece", "é brincadeira", "brincadeira"),
    "fiction": ("meu personagem", "minha personagem", "no meu romance", "no romance", "na minha história",
                "na história", "no jogo", "fictício", "fictícia"),
    "report": ("diz", "disse", "me disse", "dizia", "segundo ele", "segundo ela", "afirma"),
    "change": ("virei", "tornei-me", "passei a", "finalmente", "agora", "ultimamente", "mudei", "mudamos", "vendi",
               "comecei", "de novo", "novamente", "novo", "nova", "em vez", "já não"),
    "subject": ("^eu", "^nós"),
    "self": ("^eu", "^nós", "^meu", "^minha", "^meus", "^minhas"),
    "addressee": ("você", "vocês", "tu", "te", "ti", "contigo", "teu", "tua"),
    "directive": ("por favor", "a partir de agora", "daqui para a frente", "de agora em diante", "^responde",
                  "^responda", "^escreve", "^escreva", "^usa", "^use", "^chama-me", "^me chame", "^fala", "^fale",
                  "^não uses", "^não use", "^evita", "^evite", "^sê", "^seja", "^explica", "^explique"),
    "standing": ("sempre", "nunca", "a partir de agora", "de agora em diante", "daqui para a frente", "cada vez"),
    "with_me": ("e eu", "eu e", "comigo"),
    "other": (("^ele", "^ela", "^eles", "^elas")
              + tuple(f"^{det} {kin}" for det in ("meu", "minha", "meus", "minhas", "o meu", "a minha")
                      for kin in _KIN)),
    "question": ("^devo", "^posso", "^o que", "^onde", "^quando", "^por que", "^porque", "^como", "^qual"),
    "unsafe": ("esquece … regras", "ignora … regras", "ignore … regras", "apaga", "apagar", "esquece tudo",
               "regras de segurança", "sem restrições", "sem limites", "sem filtros", "modo desenvolvedor",
               "ignora as tuas regras", "ignore suas regras"),
    "widening": ("partilha", "partilhe", "partilhar", "compartilha", "compartilhe", "compartilhar", "revela",
                 "revele", "revelar", "divulga", "divulgue", "envia", "envie", "enviar", "publica", "publique",
                 "a qualquer um", "com qualquer um", "a toda a gente", "com toda a gente", "a qualquer pessoa",
                 "com qualquer pessoa", "a todos os que", "quem pedir", "quem perguntar", "aos outros",
                 "com os outros", "a desconhecidos", "em público", "publicamente", "não importa quem", "sem exceção",
                 "sem exceções",
                 "o que sabes sobre mim", "o que você sabe sobre mim", "tudo sobre mim"),
    "withholding": ("para de", "pare de", "deixa de", "deixe de", "evita", "evite", "em segredo",
                    "mantém … privado", "mantém … privada", "mantenha … privado", "mantenha … privada"),
    "the_user": ("o usuário", "a usuária", "o utilizador", "a utilizadora", "usuário", "utilizador"),
    "aside": ("^isso", "^isto", "^é", "^está", "^há"),
    "consequence": ("^então", "^por isso", "^porque", "^pois", "^já que"),
    "first_person": ("eu", "me", "meu", "minha", "meus", "minhas", "comigo", "nós", "nos", "nosso", "nossa"),
    "possessive": ("^meu", "^minha", "^o meu", "^a minha", "^nosso", "^nossa"),
    "social": ("olá", "oi", "bom dia", "boa tarde", "boa noite", "obrigado", "obrigada", "muito obrigado",
               "muito obrigada", "tchau", "até logo", "até mais", "desculpa", "desculpe", "ok", "ótimo", "perfeito",
               "valeu", "haha", "kkk", "aliás", "por sinal"),
}

# whether a clause writes its subject ("I", "je", "ich"), so that one without it is not the speaker's: not so
# where the verb carries it ("vivo", "moro", "住んでいます")
WRITES_SUBJECTS = False

# words that may come before a phrase said to open a clause ("^..."): "And always answer ...", "Just never ..."
LEAD_INS: tuple[str, ...] = ("e", "mas", "então", "também", "bom", "ah")

CONJUNCTIONS: tuple[str, ...] = ("e", "mas", "ou", "porque", "pois", "embora", "porém")

# words after which what comes next stands on its own: a negation before them does not reach past them
CONTRASTS: tuple[str, ...] = ("mas", "porém", "exceto", "salvo", "contudo")
