"""Spanish: "no" before the verb, "ya no", "dejé de"; "¿" and "¡" are punctuation, not words."""

_KIN = ("amigo", "amiga", "hermana", "hermano", "madre", "mamá", "padre", "papá", "esposa", "esposo", "mujer",
        "marido", "novio", "novia", "hijo", "hija", "jefe", "jefa", "compañero", "compañera", "vecino", "vecina",
        "primo", "prima", "tía", "tío", "abuela", "abuelo", "pareja", "padres", "hijos")

MARKERS: dict[str, tuple[str, ...]] = {
    "negation": ("no", "nunca", "jamás", "nada", "nadie", "ningún", "ninguno", "ninguna", "ni", "sin", "tampoco"),
    "no_longer": ("ya no", "dejé de", "he dejado de", "dejó de", "no … más", "nunca más", "ya nunca"),
    "doubt": ("quizás", "quizá", "tal vez", "a lo mejor", "creo que", "probablemente", "no estoy seguro",
              "no estoy segura", "estoy pensando en", "puede que", "no he decidido"),
    "condition": ("si", "en caso de", "a menos que", "imagina", "supongamos"),
    "wish": ("espero", "ojalá", "me gustaría", "quisiera", "algún día", "sueño con"),
    "past": ("antes", "solía", "solíamos", "de joven", "de niño", "de niña", "cuando era", "en aquella época"),
    "dream": ("soñé", "he soñado", "en mi sueño", "tuve un sueño"),
    "irony": ("sí, claro", "ya, claro", "claro que sí", "es broma", "era broma"),
    "fiction": ("mi personaje", "en mi novela", "en la novela", "en mi historia", "en la historia", "en el juego",
                "juego de rol", "ficticio", "ficticia"),
    "report": ("dice", "dijo", "me dijo", "decía", "según", "afirma", "cree que"),
    "change": ("me hice", "me volví", "dejé", "por fin", "empecé a", "ahora", "ya", "últimamente", "cambié",
               "he cambiado", "me mudé", "nos mudamos", "vendí", "empecé", "he empezado", "de nuevo", "otra vez",
               "nuevo", "nueva", "en cambio", "ya no"),
    "subject": ("^yo", "^nosotros", "^nosotras"),
    "self": ("^yo", "^nosotros", "^nosotras", "^mi", "^mis"),
    "addressee": ("tú", "te", "ti", "usted", "ustedes", "contigo", "tu", "tus", "vosotros"),
    "directive": ("por favor", "a partir de ahora", "de ahora en adelante", "en adelante", "la próxima vez",
                  "respóndeme", "contéstame", "escríbeme", "llámame", "háblame", "dime", "^responde", "^contesta",
                  "^escribe", "^usa", "^utiliza", "^habla", "^no uses", "^no me", "^evita", "^sé", "^dame",
                  "^explica", "^tutéame"),
    "standing": ("siempre", "nunca", "a partir de ahora", "de ahora en adelante", "en adelante", "cada vez"),
    "with_me": ("y yo", "yo y", "conmigo"),
    "other": (("^él", "^ella", "^ellos", "^ellas")
              + tuple(f"^{det} {kin}" for det in ("mi", "mis", "nuestro", "nuestra") for kin in _KIN)),
    "question": ("^debería", "^puedo", "^qué", "^dónde", "^cuándo", "^por qué", "^cómo", "^cuál"),
    "unsafe": ("olvida … reglas", "ignora … reglas", "borra", "borrar", "elimina", "eliminar", "olvida todo",
               "reglas de seguridad", "normas de seguridad", "sin restricciones", "sin límites", "sin filtros",
               "modo desarrollador", "ignora tus reglas", "olvida tus reglas"),
    "widening": ("comparte", "compartir", "revela", "revelar", "divulga", "envía", "enviar", "reenvía", "publica",
                 "a cualquiera", "con cualquiera", "a cualquier persona", "con cualquier persona", "a todo el mundo",
                 "con todo el mundo", "a todos los que", "quien lo pida", "quien la pida", "quien pregunte",
                 "a los demás", "con los demás", "a desconocidos", "en público", "públicamente", "no importa quién",
                 "sin excepción", "sin excepciones",
                 "lo que sabes de mí", "lo que sabes sobre mí", "todo sobre mí"),
    "withholding": ("deja de", "evita", "guarda … en secreto", "mantén … en secreto", "mantén … privado",
                    "mantén … privada"),
    "the_user": ("el usuario", "la usuaria", "usuario", "usuaria"),
    "aside": ("^eso", "^esto", "^es", "^está", "^hay"),
    "consequence": ("^así que", "^por eso", "^porque", "^entonces", "^ya que"),
    "first_person": ("yo", "me", "mi", "mis", "conmigo", "nosotros", "nosotras", "nos", "nuestro", "nuestra"),
    "possessive": ("^mi", "^mis", "^nuestro", "^nuestra"),
    "social": ("hola", "buenos días", "buenas tardes", "buenas noches", "buenas", "gracias", "muchas gracias",
               "mil gracias", "adiós", "hasta luego", "hasta pronto", "perdón", "lo siento", "vale", "ok", "genial",
               "perfecto", "de acuerdo", "jaja", "jajaja", "por cierto"),
}

# whether a clause writes its subject ("I", "je", "ich"), so that one without it is not the speaker's: not so
# where the verb carries it ("vivo", "moro", "住んでいます")
WRITES_SUBJECTS = False

# words that may come before a phrase said to open a clause ("^..."): "And always answer ...", "Just never ..."
LEAD_INS: tuple[str, ...] = ("y", "pero", "entonces", "también", "bueno", "ah", "pues")

CONJUNCTIONS: tuple[str, ...] = ("y", "e", "pero", "o", "u", "sino", "porque", "aunque", "pues")

# words after which what comes next stands on its own: a negation before them does not reach past them
CONTRASTS: tuple[str, ...] = ("pero", "sino", "excepto", "salvo", "sin embargo")
