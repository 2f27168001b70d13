"""English: how people say these things in chat, contractions with or without the apostrophe."""

_KIN = ("friend", "sister", "brother", "mother", "mum", "mom", "father", "dad", "wife", "husband", "partner",
        "boyfriend", "girlfriend", "son", "daughter", "boss", "colleague", "neighbour", "neighbor", "cousin", "aunt",
        "uncle", "grandma", "grandpa", "grandmother", "grandfather", "roommate", "flatmate", "kid", "kids", "parents")

MARKERS: dict[str, tuple[str, ...]] = {
    "negation": ("not", "no", "never", "nor", "neither", "none", "nothing", "nobody", "nowhere", "without", "cannot",
                 "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "weren't", "can't", "couldn't", "won't",
                 "wouldn't", "shouldn't", "haven't", "hasn't", "hadn't", "ain't"),
    "no_longer": ("no longer", "anymore", "any more", "no more", "stopped", "quit", "gave up"),
    "doubt": ("maybe", "perhaps", "probably", "possibly", "might", "i think", "i guess", "not sure", "i'm not sure",
              "thinking about", "thinking of", "considering", "may be", "not decided", "haven't decided"),
    "condition": ("if", "unless", "in case", "suppose", "supposing", "imagine", "what if"),
    "wish": ("i hope", "hopefully", "i wish", "i'd love to", "i would love to", "someday", "one day", "i dream of"),
    "past": ("used to", "back then", "when i was", "formerly", "as a child", "as a kid"),
    "dream": ("i dreamt", "i dreamed", "in my dream", "had a dream", "dreaming"),
    "irony": ("yeah right", "yeah, right", "as if", "oh sure", "sure, sure", "just kidding", "jk", "kidding"),
    "fiction": ("my character", "in my novel", "in the novel", "in my story", "in the story", "in my book",
                "in the game", "in my game", "roleplay", "role-play", "role play", "pretend", "let's say",
                "fictional"),
    "report": ("says", "said", "told me", "tells me", "according to", "asked me", "thinks that", "reckons"),
    "change": ("went", "became", "become", "turned", "joined", "left", "finally", "now", "nowadays", "these days",
               "switched", "switch", "moved", "started", "changed", "sold", "upped", "again", "instead", "new",
               "anymore", "no longer"),
    "subject": ("^i", "^we"),
    "self": ("^i", "^i'm", "^i've", "^we", "^we've", "^my"),
    "addressee": ("you", "your", "yourself", "you're", "you'll"),
    "directive": ("please", "from now on", "going forward", "in future", "in the future", "next time", "^always",
                  "^never", "^don't", "^do not", "^stop", "^answer", "^reply", "^respond", "^write", "^use",
                  "^call me", "^keep", "^be", "^avoid", "^give", "^show", "^tell me", "^explain", "^include",
                  "^format", "^speak", "^talk", "^remember", "^address me", "^switch", "^stick", "^cite", "^list",
                  "^skip", "^limit", "^refer to me"),
    "standing": ("always", "never", "from now on", "going forward", "in future", "in the future",
                 "every time", "whenever", "anymore", "any more", "next time", "from today"),
    "with_me": ("and i", "and me", "me and", "with me"),
    "other": (("^he", "^she", "^they", "^his", "^her", "^their")
              + tuple(f"^my {kin}" for kin in _KIN)
              + tuple(f"^our {kin}" for kin in _KIN)),
    "question": ("^should i", "^shall i", "^do i", "^am i", "^can i", "^could i", "^would i", "^is it", "^what",
                 "^where", "^when", "^why", "^how", "^which", "^who", "^do you", "^does", "^did", "^is there",
                 "^are there", "^will i"),
    "unsafe": ("ignore … rules", "forget … rules", "delete every", "delete all", "delete my", "forget everything",
               "forget all", "erase", "wipe", "safety rules", "safety guidelines", "no restrictions", "no limits",
               "no filters", "developer mode", "jailbreak", "ignore your rules", "ignore your instructions"),
    "widening": ("share", "shares", "reveal", "reveals", "disclose", "discloses", "expose", "leak", "send", "sends",
                 "forward", "forwards", "post", "publish", "upload", "email", "e-mail", "ignore", "ignores",
                 "disregard", "bypass", "override", "overrule", "circumvent",
                 "to anyone", "with anyone", "to everyone", "with everyone", "to anybody", "with anybody",
                 "to everybody", "with everybody", "to others", "with others", "to other people", "with other people",
                 "anyone who asks", "anyone asks", "anybody asks", "whoever asks", "whoever wants", "to whoever",
                 "tell anyone", "tell everyone", "tell anybody", "tell everybody", "tell people", "tell strangers",
                 "give anyone", "give everyone", "give anybody", "give everybody", "give strangers",
                 "to strangers", "in public", "publicly", "to the public", "no matter who", "no exceptions",
                 "no exception", "without exception", "what you know about me", "everything you know about me"),
    "withholding": ("stop", "avoid", "refrain from", "keep … private", "keep … secret", "keep … confidential",
                    "keep … to yourself"),
    "the_user": ("the user", "user's", "the user's"),
    "aside": ("^it", "^it's", "^its", "^that", "^that's", "^this", "^this is", "^there's", "^there is",
              "^there are"),
    "consequence": ("^so", "^because", "^hence", "^therefore", "^which is why", "^that's why", "^that is why"),
    # "i" and "we" find "I'd", "I'll" and "we're"; written out, their apostrophe may go missing, and "id", "ill"
    # and "were" are other words
    "first_person": ("i", "i'm", "i've", "me", "my", "mine", "myself", "we", "us", "our"),
    "possessive": ("^my", "^our"),
    "social": ("hi", "hello", "hey", "good morning", "good afternoon", "good evening", "good night", "morning",
               "thanks", "thank you", "many thanks", "cheers", "bye", "goodbye", "see you", "sorry", "okay", "ok",
               "alright", "great", "cool", "awesome", "perfect", "so much", "a lot", "very much", "lol", "haha",
               "hahaha", "by the way", "btw"),
}

# whether a clause writes its subject ("I", "je", "ich"), so that one without it is not the speaker's: not so
# where the verb carries it ("vivo", "moro", "住んでいます")
WRITES_SUBJECTS = True

# words that may come before a phrase said to open a clause ("^..."): "And always answer ...", "Just never ..."
LEAD_INS: tuple[str, ...] = ("and", "but", "so", "also", "just", "ok", "okay", "oh", "well", "now", "then", "actually")

CONJUNCTIONS: tuple[str, ...] = ("and", "but", "or", "so", "yet", "because", "although", "though", "whereas")

# words after which what comes next stands on its own: a negation before them does not reach past them
CONTRASTS: tuple[str, ...] = ("but", "however", "except", "whereas", "and then")
