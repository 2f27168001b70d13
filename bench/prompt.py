"""What reaches the prompt: LoCoMo questions asked through coop's real turn, and questions that need no memory.

    .venv/bin/python bench/prompt.py --data ../shared/data/locomo/locomo-dev.json [--json] [--model-path DIR]
                                     [--summaries] [--backend sqlite|postgres] [--url postgresql://...]

Each conversation of the file is one user's chat history, stored as `bench/locomo.py` stores it (speaker A as the
user, speaker B as the assistant, each session a session, importance scored at write time as `coop chat` scores
it, vectors from the real model). Each question of categories 1-4 is then asked as the first message of a new
session through `ChatSession.prepare` (the turn's retrieval and prompt building, with `[memory]` at its
defaults; no model is called). Figures:

- prompt recall: share of questions whose prompt holds at least one evidence turn among its recalled items;
- search R_any@10, in the same run: share of questions with an evidence turn in `search`'s top 10 (what
  retrieval found, before the turn chose what to show); the target is prompt recall >= 0.9 x this;
- items per prompt (recalled memory items), and the share of them recalled by salience;
- off-topic: questions that need no memory (small talk, general knowledge, coding: `OFF_TOPIC`, written for this
  benchmark) asked of every user: the mean number of relevance items injected (target <= 0.3); and the same for
  `OFF_TOPIC_SECOND`, a list of other kinds of requests (its misses shaped `recall.is_personal`), and
  `OFF_TOPIC_THIRD`, written after that and never tuned on, and `OFF_TOPIC_FOURTH`, written after
  `recall.names_its_subject` and measured once.

`--summaries` first adds one summary per session, written by a scripted summariser (the first sentence of each of
the session's turns, cut at 600 characters), so that summaries compete for the budget as they do in real use.
The `observation`, `session_summary` and `event_summary` fields of the data set are never read.
`--backend postgres` keeps the memories on a throwaway Postgres server started for the run (`--url URL`: in that
empty database).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BenchError, Stores, add_backend_arguments, load_embedder, machine, median
from locomo import Conversation, ingest, load

OFF_TOPIC = [
    # small talk
    "Hello!", "Hi there", "How's it going?", "Good morning!", "Thanks, that's all for now.", "Got it, thanks",
    "ok", "lol", "Haha that's funny", "Goodnight!", "What's up?", "Sorry, I was away for a bit.",
    "Can you say that again?", "Never mind.",
    # general knowledge
    "What's the capital of Mongolia?", "How far is the Moon from the Earth?", "Who wrote Pride and Prejudice?",
    "What is the boiling point of water at sea level?", "Why is the sky blue?", "How many bones are in the human body?",
    "What's the difference between weather and climate?", "When did the Roman Empire fall?",
    "What does DNA stand for?", "How do vaccines work?", "What is the speed of light?",
    "Which planet has the most moons?", "Explain photosynthesis in two sentences.", "What causes the seasons?",
    # coding
    "How do I reverse a list in Python?", "What does git rebase do?", "Write a regex that matches an email address.",
    "What's the difference between a process and a thread?", "How do I center a div with CSS?",
    "Explain big-O notation briefly.", "What is a SQL JOIN?", "How do I read a file line by line in Rust?",
    "What does the `static` keyword mean in C?", "Convert this to a list comprehension: for x in xs: ys.append(x*2)",
    "Why does my Python script say ModuleNotFoundError?", "What is the difference between TCP and UDP?",
    "How do I undo the last git commit?", "What is a race condition?",
]
# A second list, written after the profile and its floors were tuned and never tuned on: other kinds of
# requests (practical, creative, arithmetic, translation, opinions, planning in general, tech support), so the
# off-topic figure is not one fitted to the first list.
OFF_TOPIC_SECOND = [
    "Can you set a timer for ten minutes?", "Translate 'good evening' into Italian.", "What's 17 times 23?",
    "Write a haiku about autumn leaves.", "Give me three tips for a job interview.", "Is a tomato a fruit?",
    "What is the tallest mountain in Africa?", "How do I convert Celsius to Fahrenheit?",
    "Recommend a classic novel for a long flight.", "What's a good stretch for a stiff neck?",
    "Summarise the plot of Hamlet in one line.", "How does a heat pump work?", "What rhymes with orange?",
    "Tell me a fun fact about octopuses.", "How many minutes are in a week?", "What's the plural of cactus?",
    "Explain what an index fund is.", "How do I make a paper airplane?", "What is the Pythagorean theorem?",
    "Draft a polite email declining a meeting.", "Which is bigger, a kilobyte or a kibibyte?",
    "How do I remove a stripped screw?", "What does 'ad hoc' mean?", "Suggest a name for a goldfish.",
    "Why do cats purr?", "How do I sort a dictionary by value in Python?", "What is Docker used for?",
    "Brainstorm five ideas for a rainy afternoon.", "What's the difference between affect and effect?",
    "How long should I boil an egg?",
]
# A third list, written after the rule for impersonal questions (`recall.is_personal`) was made while looking at
# the second list's misses, and measured only once: the list no rule was fitted to.
OFF_TOPIC_THIRD = [
    "What year did the Berlin Wall come down?", "How do magnets work?", "Write a limerick about a sleepy dog.",
    "What's a synonym for 'happy'?", "How many ounces are in a pound?", "Explain recursion to a beginner.",
    "Which ocean is the deepest?", "Give me a random number between 1 and 50.", "What is inflation?",
    "How do I tie a bowline knot?", "What is the square root of 144?", "Name three primary colours.",
    "How do noise-cancelling headphones work?", "Suggest a title for a blog post about houseplants.",
    "What's the difference between a crocodile and an alligator?", "What is a haiku?",
    "How do I make cold brew coffee?", "Write a SQL query that counts rows per day.", "What is a black hole?",
    "List the planets in order from the Sun.", "What does HTTP 404 mean?", "How do bees make honey?",
    "Translate 'thank you very much' into Japanese.", "What is the capital of Canada?",
    "Explain the offside rule in football.", "How do I split a string in JavaScript?",
    "What's a good warm-up before running?", "Why do leaves change colour in autumn?",
    "What does a product manager do?", "How long does light from the Sun take to reach Earth?",
]
# A fourth list, written after `recall.names_its_subject` (an impersonal question that shares two content words
# with a past message found by words is about it) was made while looking at LoCoMo questions the third list's rule
# had cost, and measured once; many of its subjects are ones people chat about (photos, gardens, board games).
OFF_TOPIC_FOURTH = [
    "What's a good recipe for banana bread?", "How do solar panels generate electricity?",
    "Explain castling in chess.", "What is the population of Brazil?", "How do I fix a flat tyre on a bike?",
    "What's the best way to learn a new language?", "Who painted the Mona Lisa?", "How does compound interest work?",
    "Write a short poem about the ocean.", "What is the difference between a virus and a bacterium?",
    "How do I get a red wine stain out of a carpet?", "What are the health benefits of green tea?",
    "Explain how a rainbow forms.", "What is machine learning in simple terms?",
    "How many players are on a basketball team?", "What's the origin of Halloween?",
    "How do I keep basil alive indoors?", "Give me a packing list for a beach holiday.",
    "What is the difference between baking soda and baking powder?", "How do airplanes stay in the air?",
    "Recommend a board game for four players.", "What's the best time of year to visit Japan?",
    "How do I write a good cover letter?", "What are the symptoms of dehydration?", "Explain the water cycle.",
    "How do I start a vegetable garden?", "What does the word 'serendipity' mean?",
    "How do I calculate the area of a circle?", "What instruments play in a string quartet?",
    "Any tips for taking better photos with a phone?",
]
# Each list by the prefix of its figures' keys (the first list's keys have none) and its label in the table.
OFF_TOPIC_LISTS = {"": OFF_TOPIC, "second_": OFF_TOPIC_SECOND, "third_": OFF_TOPIC_THIRD, "fourth_": OFF_TOPIC_FOURTH}
_LIST_NAMES = {"": "first", "second_": "second", "third_": "third", "fourth_": "fourth"}
_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(\s|$)")


def scripted_summary(turns: list[str]) -> str:
    """The first sentence of each turn (speaker name kept), cut at 600 characters: a summariser with no model."""
    parts = []
    for text in turns:
        body = text.split(" [image:", 1)[0]
        match = _FIRST_SENTENCE.match(body)
        parts.append(match.group(1) if match else body)
    summary = " ".join(parts)
    return summary if len(summary) <= 600 else summary[:599] + "…"


def add_summaries(memory, conv: Conversation, ids: dict[int, str]) -> int:
    by_dia = {dia: message_id for message_id, dia in ids.items()}
    sessions = {s["id"]: s for s in memory.sessions.recent(limit=10_000)}
    added = 0
    for session in conv.sessions:
        message_ids = [by_dia[t.dia_id] for t in session.turns if t.dia_id in by_dia]
        if not message_ids:
            continue
        first = memory.get("message", message_ids[0])
        if first.session_id not in sessions:
            continue
        memory.summaries.add(scripted_summary([t.text for t in session.turns]), session_id=first.session_id,
                           span=(message_ids[0], message_ids[-1]),
                           created_at=memory.get("message", message_ids[-1]).created_at + 60)
        added += 1
    memory.messages.mark_consolidated([m for m in ids])
    return added


def evaluate(conversations: list[Conversation], embedder, *, summaries: bool, batch_size: int = 32,
             stores: Stores | None = None) -> dict:
    from coop.chat.session import ChatSession
    from coop.config.loading import Config
    from coop.memory.growth.embedding import embed_pending
    from coop.memory.retrieval.search import search
    config = Config()
    rows: list[dict] = []
    off_topic: list[dict] = []
    prepare_ms: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, (stores or Stores(directory=tmp)) as where:
        store = where.one("prompt")
        for conv in conversations:
            memory, ids = ingest(store, conv, embedder, batch_size)
            if summaries:
                add_summaries(memory, conv, ids)
                embed_pending(memory, embedder, kinds=("summary",))
                Stores.settle(memory)
            # the questions are asked the day after the conversation's last message, as its user would ask them
            asked_at = max(memory.get("message", i).created_at for i in ids) + 86400
            for question in conv.questions:
                searched = search(memory, question.text, embedder=embedder, limit=10,
                                  settings=_settings(config))
                found = {ids.get(h.item.item_id) for h in searched.hits if h.kind == "message"}
                chat = ChatSession(memory, config, embedder=lambda: embedder, clock=lambda at=asked_at: at)
                started = time.perf_counter()
                prompt = chat.prepare(question.text)
                prepare_ms.append((time.perf_counter() - started) * 1000)
                recalled = prompt.recalled
                shown = {ids.get(r.item.item_id) for r in recalled if r.item.kind == "message"}
                rows.append({"conversation": conv.sample_id, "category": question.category,
                             "prompt_hit": bool(question.evidence & shown),
                             "search_hit": bool(question.evidence & found),
                             "items": len(recalled),
                             "salience": sum(r.reason == "salience" for r in recalled),
                             "relevance": sum(r.reason == "relevance" for r in recalled),
                             "memory_tokens": prompt.tokens["memory"]})
            for text, which in [(t, name) for name, texts in OFF_TOPIC_LISTS.items() for t in texts]:
                prompt = ChatSession(memory, config, embedder=lambda: embedder).prepare(text)
                off_topic.append({"conversation": conv.sample_id, "question": text, "list": which,
                                  "relevance": sum(r.reason == "relevance" for r in prompt.recalled),
                                  "items": len(prompt.recalled)})
        store.close()
    return {"rows": rows, "off_topic": off_topic, "prepare_ms_median": median(prepare_ms)}


def _settings(config):
    from coop.memory.retrieval.settings import RetrievalSettings

    return RetrievalSettings.from_config(config.memory)


def report(figures: dict, embedder_id: str, data: Path, summaries: bool) -> dict:
    rows, every = figures["rows"], figures["off_topic"]
    n = len(rows)
    items = sum(r["items"] for r in rows)
    prompt_recall = sum(r["prompt_hit"] for r in rows) / n if n else 0.0
    search_recall = sum(r["search_hit"] for r in rows) / n if n else 0.0
    result = {
        "data": str(data), "summaries": summaries, "embedder": embedder_id,
        "questions": n, "conversations": len({r["conversation"] for r in rows}),
        "prompt_recall": round(prompt_recall, 3),
        "search_R_any@10": round(search_recall, 3),
        "prompt_over_search": round(prompt_recall / search_recall, 3) if search_recall else 0.0,
        "items_per_prompt": round(items / n, 2) if n else 0.0,
        "salience_share": round(sum(r["salience"] for r in rows) / items, 3) if items else 0.0,
        "memory_tokens_median": statistics.median(r["memory_tokens"] for r in rows) if rows else 0,
    }
    for name in OFF_TOPIC_LISTS:
        asked = [o for o in every if o["list"] == name]
        result[f"off_topic_{name}questions"] = len(asked)
        result[f"off_topic_{name}relevance_items"] = round(sum(o["relevance"] for o in asked) / len(asked), 3) \
            if asked else 0.0
        result[f"off_topic_{name}with_any"] = sum(o["relevance"] > 0 for o in asked)
    result.update({
        "prepare_ms_median": round(figures["prepare_ms_median"], 1),
        "machine": machine(),
    })
    return result


def print_table(result: dict) -> None:
    print(f"Prompt benchmark: {result['data']}" + (" (with a scripted summary per session)" if result["summaries"]
                                                   else ""))
    print(f"  {result['conversations']} conversations, {result['questions']} questions; embedder "
          f"{result['embedder']}")
    print(f"  prompt recall            {result['prompt_recall']:.3f}   (target >= 0.75)")
    print(f"  search R_any@10          {result['search_R_any@10']:.3f}")
    print(f"  prompt / search          {result['prompt_over_search']:.3f}   (target >= 0.9)")
    print(f"  items per prompt         {result['items_per_prompt']:.2f}   salience share "
          f"{result['salience_share']:.3f}   memory tokens (median) {result['memory_tokens_median']}")
    for name, label in _LIST_NAMES.items():
        print(f"  {label + ' off-topic list':<24} {result[f'off_topic_{name}relevance_items']:.3f}   (target <= 0.3; "
              f"{result[f'off_topic_{name}with_any']} of {result[f'off_topic_{name}questions']} prompts got any)")
    print(f"  prepare median {result['prepare_ms_median']:.1f} ms; {result['machine']}")
    if result.get("backend"):
        print(f"  store: {result['backend']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, type=Path, help="a LoCoMo-shaped JSON file")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    parser.add_argument("--model-path", default=None, help="local all-MiniLM-L6-v2 model directory")
    parser.add_argument("--embedder", choices=("fastembed", "hash"), default="fastembed",
                        help="hash: coop's test embedder (no meaning; for checking the benchmark itself)")
    parser.add_argument("--summaries", action="store_true", help="add a scripted summary per session first")
    parser.add_argument("--limit-conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--recency-weight", type=float, default=None,
                        help="tune the turn's recency prior (coop.memory.retrieval.recall.RECENCY_WEIGHT) for this run")
    add_backend_arguments(parser)
    args = parser.parse_args(argv)
    if args.recency_weight is not None:
        import coop.memory.retrieval.recall

        coop.memory.retrieval.recall.RECENCY_WEIGHT = args.recency_weight
    conversations = load(args.data)[:args.limit_conversations]
    if not any(c.questions for c in conversations):
        raise BenchError(f"{args.data} has no question of categories 1-4 with valid evidence")
    embedder = load_embedder(args.embedder, args.model_path)
    stores = Stores.from_args(args)
    result = report(evaluate(conversations, embedder, summaries=args.summaries, stores=stores), embedder.id,
                    args.data, args.summaries)
    result["backend"] = stores.describe()
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
