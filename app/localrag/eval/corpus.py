"""A corpus anyone can regenerate: small notes of prose in text and Markdown, for benchmarks of ingestion.

``make_corpus(folder, n)`` writes ``n`` files; file ``i`` is the same whatever ``n`` is, so a figure measured
on ``n`` files can be reproduced. Used by ``local-rag bench window --make-corpus N``.
"""

from __future__ import annotations

import random
from pathlib import Path

from localrag.core.errors import KnownError

_TOPICS: dict[str, tuple[list[str], list[str], list[str], list[str]]] = {
    # topic: (titles, subjects, predicates, details)
    "garden": (
        [
            "Pruning the old apple tree",
            "Notes on the vegetable beds",
            "Compost through the winter",
            "Watering during the dry weeks",
            "Tomatoes in the greenhouse",
        ],
        [
            "the apple tree by the fence",
            "the raised bed near the shed",
            "the compost heap",
            "the young leeks",
            "the greenhouse tomatoes",
            "the strawberry runners",
            "the clay soil on the north side",
        ],
        [
            "needed a hard cut back",
            "came through the frost better than expected",
            "was mulched with straw",
            "struggled in the heat",
            "was watered every other evening",
            "gave a small but sweet crop",
        ],
        [
            "before the buds opened",
            "after the first heavy rain of the season",
            "once the nights warmed up",
            "while the neighbours were away",
            "using the bucket of rainwater from the barrel",
        ],
    ),
    "kitchen": (
        [
            "Sourdough, third attempt",
            "A weeknight lentil soup",
            "Notes on braising",
            "Preserving plums",
            "Bread flour compared",
        ],
        [
            "the starter",
            "the lentil soup",
            "the braised shoulder",
            "the plum jam",
            "the rye loaf",
            "the stock from the roast",
            "the pastry for the tart",
        ],
        [
            "rose slowly in the cold kitchen",
            "needed more salt than the recipe said",
            "turned out too dense",
            "set properly on the second try",
            "was best on the following day",
            "took twice as long as planned",
        ],
        [
            "with a spoon of honey stirred in",
            "after a night in the fridge",
            "at a lower oven temperature",
            "when the flour was fresher",
            "with the lid left slightly open",
        ],
    ),
    "astronomy": (
        [
            "Jupiter at opposition",
            "Observing log, late autumn",
            "Finding the Andromeda galaxy",
            "Collimating the telescope",
            "Meteors in August",
        ],
        [
            "the small refractor",
            "the eyepiece with the wide field",
            "Jupiter's cloud bands",
            "the Orion nebula",
            "the crescent Moon",
            "the double star in Cygnus",
            "the finder scope",
        ],
        [
            "showed more detail than last year",
            "was washed out by the street lights",
            "needed a careful alignment",
            "stayed sharp until midnight",
            "drifted out of view within minutes",
            "was easy to find with binoculars",
        ],
        [
            "once the seeing settled",
            "from the hill behind the village",
            "despite the thin high cloud",
            "after the telescope had cooled for an hour",
            "with the red torch taped over",
        ],
    ),
    "history": (
        [
            "The mill on the river",
            "Letters from the parish archive",
            "The railway comes to town",
            "A census of 1851",
            "The old market hall",
        ],
        [
            "the mill",
            "the parish register",
            "the new railway line",
            "the market hall",
            "the harbour master",
            "the village school",
            "the coaching inn on the high street",
        ],
        [
            "was rebuilt after the fire",
            "recorded a sharp fall in baptisms",
            "changed the town within a decade",
            "was sold to a brewing family",
            "kept careful accounts of every cargo",
            "closed for three winters",
        ],
        [
            "according to the surviving letters",
            "as the older residents still remember",
            "when the wool trade collapsed",
            "in the years before the war",
            "after a long dispute over the rights",
        ],
    ),
    "software": (
        [
            "Upgrading the database server",
            "Why the nightly build failed",
            "Notes on caching",
            "Moving the backups offsite",
            "Profiling the import job",
        ],
        [
            "the nightly build",
            "the import job",
            "the database upgrade",
            "the cache layer",
            "the backup script",
            "the login page",
            "the test suite",
        ],
        [
            "failed on a missing dependency",
            "ran twice as fast after the change",
            "filled the disk overnight",
            "needed a longer timeout",
            "was rolled back the same afternoon",
            "passed once the clock was fixed",
        ],
        [
            "after the operating system update",
            "when two jobs started at once",
            "under the heavier Monday load",
            "with the old configuration file",
            "because of a stale lock file",
        ],
    ),
    "travel": (
        [
            "Three days in Porto",
            "Walking the coastal path",
            "Night train to Vienna",
            "A wet week in Skye",
            "Markets of the south",
        ],
        [
            "the night train",
            "the coastal path",
            "the harbour town",
            "the mountain hut",
            "the ferry crossing",
            "the covered market",
            "the old quarter",
        ],
        [
            "was busier than expected",
            "took most of the morning",
            "was closed for repairs",
            "rewarded the early start",
            "felt quiet after the season ended",
            "was cheaper than the guidebook said",
        ],
        [
            "in the steady drizzle",
            "once the tour buses had left",
            "with a borrowed map",
            "on the last day of the festival",
            "after a long climb from the station",
        ],
    ),
    "health": (
        [
            "Getting back to running",
            "Sleep, a month of notes",
            "Stretching after work",
            "Walking to the office",
            "Cutting down on coffee",
        ],
        [
            "the morning run",
            "the knee",
            "sleep",
            "the evening walk",
            "the stretching routine",
            "the afternoon slump",
            "the cycling commute",
        ],
        [
            "improved after a fortnight",
            "felt stiff for a few days",
            "was easier to keep up than expected",
            "suffered when work got busy",
            "became a habit by the third week",
            "needed a rest day in between",
        ],
        [
            "with a slower first kilometre",
            "once the screens were off an hour earlier",
            "despite the cold mornings",
            "after switching to decaffeinated coffee",
            "with a stretch before bed",
        ],
    ),
    "finance": (
        [
            "Household budget, spring",
            "Comparing energy tariffs",
            "Notes on the pension statement",
            "Saving for the roof",
            "Insurance renewals",
        ],
        [
            "the energy bill",
            "the household budget",
            "the savings account",
            "the roof fund",
            "the car insurance",
            "the pension statement",
            "the grocery spending",
        ],
        [
            "went up by a tenth",
            "was reviewed at the end of the month",
            "came in under the estimate",
            "needed a second look",
            "was switched to a fixed rate",
            "grew slowly but steadily",
        ],
        [
            "after the new tariff started",
            "once the receipts were sorted",
            "compared with last year",
            "following the advice of the bank",
            "before the renewal letter arrived",
        ],
    ),
}
_OPENERS = [
    "",
    "",
    "",
    "In the end, ",
    "As usual, ",
    "This time ",
    "By the end of the week ",
    "Oddly, ",
    "On reflection, ",
    "For the record, ",
]


def make_corpus(folder: Path, n: int) -> int:
    """Write ``n`` small files of prose (two thirds text, one third Markdown) under ``folder``, in one folder
    per topic with a year folder inside some. File ``i`` is the same whatever ``n`` is. Returns ``n``."""
    if folder.exists() and any(folder.iterdir()):
        raise KnownError(f"{folder} is not empty: the corpus goes into an empty or new folder.")
    for i in range(n):
        relative, text = corpus_file(i)
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return n


def corpus_file(i: int) -> tuple[Path, str]:
    """The relative path and text of generated file ``i``."""
    rng = random.Random(f"localrag-corpus-{i}")
    topic = rng.choice(sorted(_TOPICS))
    titles, subjects, predicates, details = _TOPICS[topic]
    title = f"{rng.choice(titles)} ({1990 + i % 35}, note {i})"
    markdown = i % 3 == 0
    paragraphs = []
    for _ in range(rng.randint(1, 3)):
        sentences = []
        for _ in range(rng.randint(3, 6)):
            opener = rng.choice(_OPENERS)
            subject = rng.choice(subjects)
            sentence = f"{opener}{subject} {rng.choice(predicates)}"
            if rng.random() < 0.7:
                sentence += f" {rng.choice(details)}"
            sentences.append(sentence[0].upper() + sentence[1:] + ".")
        paragraphs.append(" ".join(sentences))
    if markdown:
        if len(paragraphs) > 1:
            paragraphs.insert(1, f"## {rng.choice(['Details', 'What changed', 'Next time', 'Notes'])}")
        text = f"# {title}\n\n" + "\n\n".join(paragraphs) + "\n"
    else:
        text = f"{title}\n\n" + "\n\n".join(paragraphs) + "\n"
    parts = [topic] + ([str(1990 + i % 35)] if i % 4 == 0 else [])
    slug = "-".join(title.split(" (")[0].lower().replace(",", "").split()[:4])
    return Path(*parts, f"{i:05d}-{slug}.{'md' if markdown else 'txt'}"), text
