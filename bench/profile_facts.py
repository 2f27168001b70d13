"""Extra facts for `bench/profile.py`: what an assistant also learns about a person over months of chat, none of
it what the benchmark's questions ask about.

`extra_facts(n, seed, avoid=..., avoid_keys=...)` makes `n` facts in the shape coop stores (third person, short:
"Watched a documentary about volcanoes last week", "Prefers aisle seats on short flights"), of low importance
(0.3 to 0.5), about a tenth with a key. They come from 49 templates in 16 categories (one-off events, small
preferences, things owned and borrowed, media, routines, friends and acquaintances, errands, courses, opinions,
...), each filled from word lists of its own: no template makes more than 6% of the facts, and a subject
comes once per template family ("Owns a telescope" and "Has an old telescope" never both). They are seeded (the
same seed, the same facts) and written for this benchmark, never taken from the data set.

What they avoid, so that they compete for the prompt without answering a question by accident or contradicting
the person:
- every name in the person's facts and questions (`names_in`): a fact that holds one is drawn again;
- the core of a biography (home, employer, partner, children, pets, diet, health conditions): no template
  speaks of them, and food is named only where it suits any diet (no meat, fish or dairy);
- dates: times are relative ("last week", "over the holidays"), so no fact offers a birthday's day;
- the (category, key) slots of the person's facts (`avoid_keys`): a user's write to a taken slot would supersede
  their fact, so such a fact is written without its key (or drawn again, for one-value slots such as a browser).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ExtraFact:
    value: str
    category: str
    key: str | None
    importance: float
    template: str  # which template made it (for the variety checks)


WHEN = ["last week", "last month", "over the holidays", "a few weeks ago", "in the spring", "last autumn",
        "a couple of years ago", "last weekend", "during a rainy weekend", "earlier this year", "years ago",
        "on a day off"]
TOPICS = ["volcanoes", "deep-sea creatures", "the space race", "honeybees", "medieval castles", "coral reefs",
          "the history of chess", "glaciers", "octopuses", "ancient roads", "urban foxes", "lighthouses",
          "the printing press", "desert survival", "migrating birds", "antique clocks", "submarines",
          "wild mushrooms", "the invention of the bicycle", "polar expeditions", "hurricanes", "tea plantations",
          "shipwrecks", "the first computers", "beekeeping", "forgotten railways", "the history of maps",
          "fireflies", "salt mines", "competitive crossword solving", "dinosaurs", "typography",
          "the deep ocean floor", "street art", "earthquakes", "bridges", "the history of perfume", "tornadoes",
          "ant colonies", "cave paintings", "the postal service", "zeppelins", "sea turtles", "meteorites",
          "the history of board games", "windmills", "canal boats", "wolves", "the Silk Road", "circus life"]
EVENTS = ["an open-air cinema night", "a pub quiz", "a board game café", "a housewarming party", "a craft fair",
          "a stand-up comedy show", "a charity fun run", "a cider-tasting evening", "an escape room", "a flea market",
          "a lantern festival", "a community garden open day", "a school reunion", "a planetarium show",
          "a vintage car show", "a karaoke night", "a magic show", "a puppet theatre", "an astronomy talk",
          "a book swap", "a ceilidh", "a street food market", "a beach clean-up", "a pottery fair",
          "a model railway exhibition", "a film festival", "a dog show", "a kite festival"]
ACTIVITIES = ["paddleboarding", "archery", "indoor bouldering", "axe throwing", "ice skating", "candle making",
              "geocaching", "kayaking", "salsa dancing", "fencing", "origami", "bowling", "wood carving",
              "lino printing", "tai chi", "roller skating", "foraging", "kite flying", "table tennis", "mini golf",
              "stand-up paddle yoga", "orienteering", "glass blowing", "trampolining", "go-karting", "snorkelling",
              "bookbinding", "laser tag", "pétanque", "zip-lining", "curling", "line dancing"]
PLACES = ["a botanical garden", "a science museum", "a lighthouse", "an old windmill", "a butterfly house",
          "a cave system", "a maritime museum", "a hilltop fort", "a toy museum", "a restored steam railway",
          "a lavender farm", "an observatory", "a sculpture park", "a salt marsh reserve", "a monastery ruin",
          "a covered market", "a clock museum", "a waterfall walk", "an old tin mine", "a bird sanctuary",
          "a tram museum", "a medieval village", "an apple orchard", "a stately home", "a glasshouse garden",
          "a transport museum", "a seaside pier", "an island nature reserve", "a chocolate workshop",
          "a paper mill"]
ITEMS = ["cast-iron pan", "label maker", "hammock", "French press", "sewing machine", "telescope",
         "record player", "pressure cooker", "standing lamp", "bread machine", "tent", "camping stove",
         "pair of binoculars", "typewriter", "rowing machine", "pasta maker", "chess set", "ukulele",
         "jigsaw table", "air fryer", "waffle iron", "dehumidifier", "weather station", "drone", "metal detector",
         "soldering iron", "bird feeder", "sandwich toaster", "pressure washer", "ladder", "tile cutter",
         "projector", "slow cooker", "stepladder", "cordless drill", "paddling pool", "folding bike",
         "karaoke machine", "fondue set", "wheelbarrow"]
SEATS = [("aisle", "short"), ("window", "long"), ("aisle", "long"), ("window", "short")]
PAIRS = [("tea", "coffee in the afternoon"), ("stairs", "lifts"), ("paper maps", "phone maps"),
         ("mornings", "late evenings for errands"), ("showers", "baths"), ("early flights", "late ones"),
         ("board games", "video games"), ("audiobooks", "podcasts on long drives"), ("sunrise walks", "sunset ones"),
         ("handwritten lists", "apps for shopping"), ("quiet cafés", "busy ones"), ("trains", "buses"),
         ("hardbacks", "paperbacks"), ("cold weather", "a heatwave"), ("small dinner parties", "big ones"),
         ("a fountain pen", "a ballpoint"), ("folk music", "pop on road trips"), ("black tea", "green tea"),
         ("cinemas", "streaming at home"), ("hiking boots", "trainers for walks"), ("sparkling water", "still"),
         ("crosswords", "sudoku"), ("printed photos", "digital albums"), ("the front of the bus", "the back")]
LIKES = ["roasted chestnuts", "the smell of rain", "crossword puzzles", "old black-and-white films",
         "thunderstorms", "fresh figs", "spicy ginger sweets", "long train journeys", "watching snooker",
         "bright orange sunsets", "the sound of a typewriter", "pickled ginger", "mint tea",
         "flea-market bargains", "very strong mustard", "peanut butter on toast", "sour cherries", "pomegranates",
         "wordless picture books", "quiet museum galleries", "freshly cut grass", "autumn leaves",
         "the first snow of the year", "handwritten letters", "old maps", "second-hand bookshops", "lemon sorbet",
         "roasted peanuts", "foggy mornings", "night trains"]
DISLIKES = ["the sound of leaf blowers", "crowded lifts", "liquorice", "self-checkout machines", "loud ringtones",
            "wet socks", "overly sweet cereal", "long voice messages", "automatic doors that open too slowly",
            "coriander", "escalators that are out of order", "wasps", "tiny print on forms", "clammy weather",
            "queueing at the post office", "sticky price labels", "small talk at the hairdresser",
            "reply-all emails", "fluorescent lighting", "hotel pillows that are too soft", "squeaky trolleys",
            "cling film", "umbrellas in crowds", "people who whistle on trains", "itchy wool jumpers",
            "slow walkers on narrow pavements", "tangled headphone cables", "pop-up adverts"]
SERIES_TOPICS = ["a family of lighthouse keepers", "a detective in a mountain village", "a space station crew",
                 "rival bakers", "a small-town radio station", "a heist gone wrong", "a shipwrecked orchestra",
                 "time-travelling librarians", "a struggling football club", "a chess prodigy", "a haunted hotel",
                 "a desert rally team", "an island postman", "twins who swap lives", "a travelling circus",
                 "a failing vineyard", "an undercover art forger", "a missing submarine", "a village election",
                 "two feuding magicians"]
PODCASTS = ["forgotten inventions", "unsolved mysteries", "the history of words", "personal finance basics",
            "famous court cases", "how everyday things are made", "the science of sleep", "old radio dramas",
            "strange maps", "ancient history", "language quirks", "architecture", "great escapes",
            "the history of advertising", "famous hoaxes", "urban legends", "space weather", "lost cities"]
DAYS = ["Sunday mornings", "Saturday afternoons", "Tuesday evenings", "Thursday mornings", "Friday afternoons",
        "Monday evenings", "Wednesday lunchtimes", "the first weekend of the month"]
CHORES = [("waters the plants", "plants"), ("changes the bed sheets", "sheets"), ("does the ironing", "ironing"),
          ("cleans the windows", "windows"), ("defrosts the freezer", "freezer"),
          ("sorts the recycling", "recycling"), ("writes a to-do list for the week", "todo_list"),
          ("calls an old school friend", "friend_call"), ("backs up their photos", "photo_backup"),
          ("polishes their shoes", "shoes"), ("pays the bills", "bills"), ("descales the kettle", "kettle"),
          ("tidies the garage", "garage"), ("checks the tyre pressure", "tyres")]
FRIENDS = ["Oskar", "Priya", "Hamid", "Greta", "Bruno", "Leila", "Tomasz", "Yuki", "Emeka", "Sinead", "Ravi",
           "Marguerite", "Felix", "Anouk", "Dmitri", "Zainab", "Callum", "Ines", "Matteo", "Noor", "Kwame",
           "Astrid", "Pablo", "Chiara", "Bertil", "Jonas", "Eleni", "Farid", "Hana", "Lorcan", "Imogen", "Tariq",
           "Wiebke", "Sven", "Malia", "Kofi", "Beatriz", "Ciaran", "Ludmila", "Amara", "Gideon", "Rosalind",
           "Hugo", "Ayesha", "Nikos", "Freya", "Idris", "Mirela", "Samir", "Tove", "Declan", "Yusuf", "Paloma",
           "Ewan", "Ingrid", "Thabo", "Vera", "Ansel", "Odile", "Kenji"]
FRIEND_TRAITS = ["collects vinyl records", "restores old bicycles", "plays the cello", "keeps bees",
                 "runs a small bookshop", "is training for a triathlon", "builds model ships", "grows giant pumpkins",
                 "fixes old radios", "writes crime short stories", "organises a monthly quiz",
                 "repairs clocks as a hobby", "teaches yoga on weekends", "brews ginger beer", "sings in a choir",
                 "paints miniatures", "volunteers at an animal shelter", "collects fountain pens",
                 "plays in a brass band", "rides a vintage motorbike"]
GAMES = ["chess", "badminton", "cards", "darts", "backgammon", "squash", "pool", "table tennis", "mahjong",
         "padel", "frisbee golf", "a long board game"]
APPS = [("browser", "Firefox as a web browser"), ("browser", "Vivaldi as a web browser"),
        ("notes_app", "Obsidian for notes"), ("notes_app", "a paper notebook for notes"),
        ("password_manager", "Bitwarden for passwords"), ("email_client", "Thunderbird for email"),
        ("podcast_app", "Pocket Casts for podcasts"), ("photo_editor", "Darktable to edit photos"),
        ("todo_app", "Todoist for to-do lists"), ("maps_app", "OsmAnd for maps on walks")]
DEVICES = ["phone", "laptop", "watch", "headphones", "electric toothbrush", "bike light", "smoke alarm",
           "car key fob", "kitchen scale", "remote control", "doorbell", "wireless mouse"]
ROOMS = ["hallway", "bathroom", "spare room", "kitchen", "landing", "downstairs loo", "garden shed", "porch"]
COLOURS = ["sage green", "pale yellow", "off-white", "dusty blue", "terracotta", "light grey"]
COURSES = ["first aid", "basic car maintenance", "touch typing", "watercolour painting", "public speaking",
           "knot tying", "sign language basics", "bookkeeping", "calligraphy", "birdsong identification",
           "photo editing", "DIY plumbing", "spreadsheet formulas", "bicycle repair", "beekeeping basics",
           "astronomy for beginners", "furniture upcycling", "speed reading", "knife skills", "juggling"]
OVERRATED = ["brunch", "smart fridges", "reality television", "airport lounges", "fancy notebooks",
             "New Year's resolutions", "open-plan offices", "superhero films", "matcha lattes", "electric scooters",
             "gender reveal parties", "influencer restaurants", "self-help books", "smart speakers"]
SHOPPING = ["winter coat", "pair of walking boots", "desk chair", "rug for the living room", "rain jacket",
            "set of kitchen knives", "bedside lamp", "suitcase", "reading lamp", "pair of slippers", "backpack",
            "bookcase", "umbrella that survives wind", "garden bench", "pair of sunglasses", "duvet",
            "shoe rack", "wall clock"]
VEGAN_DISHES = ["lentil soup", "vegetable curry", "ratatouille", "hummus", "gazpacho", "roasted vegetables",
                "chickpea stew", "stuffed peppers", "minestrone", "bean chilli", "pumpkin soup", "tabbouleh",
                "falafel", "dal", "mushroom stroganoff with oat cream", "vegetable paella"]
OCCASIONS = ["on cold evenings", "for Sunday lunch", "when friends visit", "after a long week", "on rainy days",
             "for picnics", "in big batches to freeze"]
COMPANIONS = ["some colleagues", "a neighbour", "old school friends", "the walking group", "a cousin",
              "a friend from university", "two old flatmates", "the book club"]
SIGHTS = ["a fox crossing the road", "a double rainbow", "a seal in a harbour", "a hot-air balloon landing in a field",
          "a kingfisher by a canal", "the northern lights on a clear night", "a heron catching a fish",
          "a solar eclipse", "a hedgehog in the garden", "a waterspout out at sea", "a murmuration of starlings",
          "a deer on a golf course", "an owl on a fence post", "a whale from a ferry"]
COLLECTIONS = ["postcards", "enamel pins", "old maps", "matchbox cars", "snow globes", "vintage postcards of piers",
               "fridge magnets", "bus tickets", "sea glass", "old keys", "cookbooks", "board games", "pressed flowers",
               "coffee mugs", "jigsaw puzzles", "train tickets", "seashells", "pocket knives"]
SAVING_FOR = ["new bicycle", "weekend away", "better camera", "garden shed", "new sofa", "pair of good speakers",
              "piano", "kayak", "bigger desk", "set of new tyres", "sewing course", "new mattress", "canoe",
              "telescope mount", "second-hand campervan"]
FIX = ["wobbly kitchen chair", "dripping shower head", "loose door handle", "squeaky wardrobe door",
       "cracked garden pot", "sticking drawer", "broken blind in the spare room", "flickering hallway light",
       "gate latch", "leaking gutter", "torn fly screen", "rattling window"]
VENUES = ["on a team day out", "on holiday", "at a friend's birthday", "with a group from work", "at a festival",
          "on a rainy holiday afternoon"]
SHOPS = ["a charity shop", "a car boot sale", "an online auction", "a garage sale", "a hardware shop",
         "a market stall", "a closing-down sale"]
ONE_OFFS = [
    ("events", "Once won a pub quiz on the strength of a single geography answer"),
    ("events", "Got a parking ticket outside a dentist's surgery"),
    ("events", "Locked themselves out of the house twice in one month"),
    ("events", "Helped a neighbour carry a sofa up three flights of stairs"),
    ("events", "Lost an umbrella on a bus and found it again the next day"),
    ("events", "Was once stuck in a lift for forty minutes"),
    ("events", "Saw a shooting star while walking home late"),
    ("events", "Accidentally dyed a load of white laundry pink"),
    ("events", "Found an old diary from their teenage years while tidying"),
    ("events", "Ran out of petrol on a country road once"),
    ("events", "Once appeared in the background of a television news report"),
    ("events", "Caught a bouquet at a wedding"),
    ("events", "Had a flat tyre on the way to an interview years ago"),
    ("events", "Spent a night in an airport when a flight was cancelled"),
    ("events", "Got sunburnt on a cloudy day at the beach"),
    ("traits", "Can't whistle"),
    ("traits", "Is afraid of moths"),
    ("traits", "Always carries a spare phone charger"),
    ("traits", "Keeps receipts in a shoebox"),
    ("traits", "Names their houseplants"),
    ("traits", "Hums while cooking"),
    ("traits", "Sneezes in bright sunlight"),
    ("traits", "Remembers phone numbers easily"),
    ("traits", "Gets travel sick on boats"),
    ("traits", "Always arrives ten minutes early"),
    ("traits", "Cannot sleep with the curtains open"),
    ("traits", "Writes shopping lists in the order of the aisles"),
    ("traits", "Talks to the satnav"),
    ("traits", "Is bad at remembering faces"),
    ("traits", "Always reads the last page of a novel first"),
    ("home", "Has a squeaky third stair"),
    ("home", "The kitchen tap drips when turned off too gently"),
    ("home", "Keeps a spare key with a trusted neighbour"),
    ("home", "Has a drawer full of mismatched charging cables"),
    ("home", "Grows basil on the kitchen windowsill"),
    ("home", "Recently bought blackout curtains for the bedroom"),
    ("home", "The front door sticks in damp weather"),
    ("home", "Keeps a jar of loose change by the door"),
    ("opinions", "Thinks hotel breakfasts are the best part of a trip"),
    ("opinions", "Believes a good umbrella is worth paying for"),
    ("opinions", "Finds airport security queues more tiring than the flight"),
    ("opinions", "Thinks the second film of a trilogy is usually the best"),
]


@dataclass(frozen=True)
class Template:
    name: str
    family: str             # a subject comes once per family ("owns" and "old item" share their things)
    category: str
    key: str | None         # a key pattern ({a}: the subject's slug), or None
    text: str               # {a} the subject, {b} the second slot
    a: Sequence[object]
    b: Sequence[str] | None = None
    pair: bool = False      # the subject is (a, b): "Went to a pub quiz with Oskar" and "... with Priya" both fit


TEMPLATES = [
    Template("documentary", "documentary", "events", None, "Watched a documentary about {a} {b}", TOPICS, WHEN),
    Template("article", "article", "events", None, "Read a long article about {a} {b}", TOPICS, WHEN),
    Template("event", "event", "events", None, "Went to {a} {b}", EVENTS, WHEN),
    Template("event_with", "event_with", "events", None, "Went to {a} with {b}", EVENTS, FRIENDS, pair=True),
    Template("tried", "activity", "events", None, "Tried {a} for the first time {b}", ACTIVITIES, WHEN),
    Template("tried_at", "tried_at", "events", None, "Did {a} {b}", ACTIVITIES, VENUES, pair=True),
    Template("event_group", "event_group", "events", None, "Went to {a} with {b}", EVENTS, COMPANIONS, pair=True),
    Template("visited_with", "visited_with", "travel", None, "Visited {a} with {b}", PLACES, COMPANIONS,
             pair=True),
    Template("sight", "sight", "events", None, "Once saw {a}", SIGHTS),
    Template("collects", "collects", "hobbies", "collects_{a}", "Collects {a}", COLLECTIONS),
    Template("saving", "saving", "finance", "saving_for_{a}", "Is saving up for a {a}", SAVING_FOR),
    Template("fix", "fix", "home", None, "Has been meaning to fix a {a}", FIX),
    Template("would_try", "activity", "hobbies", None, "Would like to try {a} some day", ACTIVITIES),
    Template("visited", "place", "travel", None, "Visited {a} {b}", PLACES, WHEN),
    Template("day_trip", "day_trip", "travel", None, "Took {b} on a day trip to {a}", PLACES, FRIENDS, pair=True),
    Template("seat", "seat", "preferences", "seat_{a}_flights", "Prefers {b} seats on {a} flights",
             [s[1] for s in SEATS], [s[0] for s in SEATS]),
    Template("prefers", "prefers", "preferences", None, "Prefers {a}", PAIRS),
    Template("likes", "likes", "preferences", None, "Likes {a}", LIKES),
    Template("enjoys", "likes", "preferences", None, "Really enjoys {a}", LIKES),
    Template("dislikes", "dislikes", "preferences", None, "Dislikes {a}", DISLIKES),
    Template("cant_stand", "dislikes", "preferences", None, "Can't stand {a}", DISLIKES),
    Template("owns", "item", "possessions", "owns_{a}", "Owns a {a}", ITEMS),
    Template("bought", "item", "possessions", None, "Bought a {a} {b}", ITEMS, WHEN),
    Template("old_item", "item", "possessions", None, "Has an old {a} that still works perfectly", ITEMS),
    Template("second_hand", "item", "possessions", None, "Found a {a} at {b}", ITEMS, SHOPS),
    Template("borrowed", "borrowed", "possessions", None, "Borrowed a {a} from {b}", ITEMS, FRIENDS, pair=True),
    Template("lent", "lent", "possessions", None, "Lent {b} a {a} and never got it back", ITEMS, FRIENDS,
             pair=True),
    Template("series", "story", "media", None, "Is watching a series about {a}", SERIES_TOPICS),
    Template("finished_series", "story", "media", None, "Finished a series about {a} {b}", SERIES_TOPICS, WHEN),
    Template("novel", "story", "media", None, "Read a novel about {a} {b}", SERIES_TOPICS, WHEN),
    Template("podcast", "podcast", "media", "podcast_{a}", "Listens to a podcast about {a}", PODCASTS),
    Template("podcast_tip", "podcast_tip", "media", None, "{b} recommended a podcast about {a}", PODCASTS,
             FRIENDS, pair=True),
    Template("chore", "chore", "routines", "routine_{a}", "Usually {a} on {b}", CHORES, DAYS),
    Template("friend_trait", "friend", "acquaintances", None, "Has a friend called {a} who {b}", FRIENDS,
             FRIEND_TRAITS),
    Template("classmate", "friend", "acquaintances", None, "An old classmate, {a}, got in touch again {b}",
             FRIENDS, WHEN),
    Template("neighbour", "friend", "acquaintances", None, "A neighbour, {a}, {b}", FRIENDS, FRIEND_TRAITS),
    Template("games", "games", "hobbies", None, "Plays {a} with {b} now and then", GAMES, FRIENDS, pair=True),
    Template("app", "app", "tech", "{a}", "Uses {a}", APPS),
    Template("device", "device", "tech", None, "Replaced the battery of their {a} {b}", DEVICES, WHEN),
    Template("broken_device", "device", "tech", None, "Their {a} has been playing up lately", DEVICES),
    Template("repainted", "room", "home", None, "Repainted the {a} {b}", ROOMS, COLOURS),
    Template("course", "course", "learning", None, "Took an online course in {a} {b}", COURSES, WHEN),
    Template("wants_course", "course", "learning", None, "Would like to learn {a} one day", COURSES),
    Template("overrated", "opinion", "opinions", None, "Thinks {a} are overrated", OVERRATED),
    Template("shopping", "shopping", "shopping", "looking_for_{a}", "Is looking for a new {a}", SHOPPING),
    Template("returned", "shopping", "shopping", None, "Returned a {a} that turned out to be the wrong size",
             SHOPPING),
    Template("cooks", "dish", "food", None, "Likes to make {a} {b}", VEGAN_DISHES, OCCASIONS),
    Template("recipe", "recipe", "food", None, "Got a good recipe for {a} from {b}", VEGAN_DISHES, FRIENDS,
             pair=True),
    Template("one_off", "one_off", "", None, "{a}", ONE_OFFS),
]
IMPORTANCE = (0.3, 0.35, 0.4, 0.45, 0.5)
TEMPLATE_SHARE = 0.06  # at most this share of the facts from one template (at least 3 each)
NAME_USES = 8          # a friend's name in at most this many facts
ONE_VALUE_SLOTS = ("app", "seat", "chore")  # a second value for these would change the first: drawn again instead
_WORD = re.compile(r"[A-Za-zÀ-ÿ][\w'’-]*")
_AN = re.compile(r"\ba (?=[aeio]|umb)")
_SENTENCE_END = re.compile(r"[.!?:;]\s+")


def _slug(text: str) -> str:
    return "_".join(re.findall(r"[a-z0-9]+", text.lower()))[:40]


def names_in(texts: Iterable[str]) -> set[str]:
    """The names in some texts, folded to lower case without a possessive: capitalised words other than a
    sentence's first word, and a first word in the possessive ("Tiago's birthday")."""
    names: set[str] = set()
    for text in texts:
        for sentence in _SENTENCE_END.split(text):
            for position, word in enumerate(_WORD.findall(sentence)):
                possessive = word.endswith(("'s", "’s"))
                bare = word[:-2] if possessive else word
                if len(bare) > 1 and bare[0].isupper() and (position > 0 or possessive):
                    names.add(bare.casefold())
    return names


def _fill(rng: random.Random, template: Template) -> tuple[object, str, str, str | None]:
    """(subject, text, category, key) of one draw from a template."""
    a = rng.choice(template.a)
    b = rng.choice(template.b) if template.b is not None else ""
    category, key = template.category, template.key
    if template.name == "seat":  # a seat goes with its flight length: one pair
        b, a = rng.choice(SEATS)
    if template.name == "prefers":
        assert isinstance(a, tuple)
        text = f"Prefers {a[0]} to {a[1]}"
    elif template.name == "chore":
        assert isinstance(a, tuple)
        text, key = template.text.format(a=a[0], b=b), f"routine_{a[1]}"
    elif template.name == "app":
        assert isinstance(a, tuple)
        text, key = template.text.format(a=a[1]), a[0]
    elif template.name == "one_off":
        assert isinstance(a, tuple)
        category, text = a
    else:
        text = template.text.format(a=a, b=b)
        if key is not None:
            key = key.format(a=_slug(str(a)))
    subject = (a, b) if template.pair else a
    text = _AN.sub("an ", text)
    return subject, text[0].upper() + text[1:], category, key


def extra_facts(n: int, seed: str | int, *, avoid: Iterable[str] = (),
                avoid_keys: Iterable[tuple[str, str]] = ()) -> list[ExtraFact]:
    """`n` facts, seeded (fewer only if the templates run out, which they do not below 2,000). `avoid`: names
    (lower case, as `names_in` gives them) no fact may hold; `avoid_keys`: (category, key) slots of the person's
    facts. A subject once per template family; texts and keys unique; no template makes more than
    `TEMPLATE_SHARE` of them, no friend's name is in more than `NAME_USES`."""
    rng = random.Random(f"coop-profile-extra:{seed}")
    avoided = {name.casefold() for name in avoid}
    keys: set[tuple[str, str]] = set(avoid_keys)
    subjects: set[tuple[str, object]] = set()
    texts: set[str] = set()
    per_template: dict[str, int] = {}
    per_name: dict[str, int] = {}
    cap = max(3, -(-n * TEMPLATE_SHARE // 1))
    out: list[ExtraFact] = []
    misses = 0
    while len(out) < n and misses < 50_000:
        template = rng.choice(TEMPLATES)
        subject, text, category, key = _fill(rng, template)
        names = names_in([text])
        if per_template.get(template.name, 0) >= cap or (template.family, subject) in subjects \
                or text.casefold() in texts or names & avoided or any(per_name.get(x, 0) >= NAME_USES for x in names):
            misses += 1
            continue
        if key is not None and (category, key) in keys:
            if template.name in ONE_VALUE_SLOTS:
                misses += 1
                continue
            key = None
        if key is not None:
            keys.add((category, key))
        subjects.add((template.family, subject))
        texts.add(text.casefold())
        per_template[template.name] = per_template.get(template.name, 0) + 1
        for name in names:
            per_name[name] = per_name.get(name, 0) + 1
        out.append(ExtraFact(text, category, key, rng.choice(IMPORTANCE), template.name))
    return out
