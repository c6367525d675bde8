"""A deterministic synthetic conversation stream for the scale benchmark.

LoCoMo conversations end at a few hundred turns; showing that per-step cost does not grow
with the stream (seed 000, Appendix A.4) needs a hundred thousand. This generator makes them:
a few dozen named speakers in social circles meet in sessions separated by hours or days, and
talk about topics (trips, projects, pets, renovations, health, meetings, parties, cars, moves,
races, hiring, book clubs) that recur across sessions, retire and give way to new ones. Facts
drift: dates move, amounts change, people take over from each other. Lines carry numbers,
names, places and dates, and mix statements, questions, answers, chatter and acknowledgements,
so semantic drift segmentation and the novelty check face roughly what they face on speech
rather than one sentence repeated. Measured on seed 0 with all-MiniLM-L6-v2: the median cosine
between consecutive lines is 0.36 (LoCoMo conv-26: 0.56) and the sensing buffer's blocks hold
3.0 utterances on average (conv-26: 3.2), so the stream drifts somewhat more often than LoCoMo's
two-person chats while blocks come out the same size.

Everything comes from one `random.Random(seed)`, so a seed gives the same stream on every
machine and the first n utterances do not depend on how many are drawn after them. Utterances
are made lazily; only the current value (and earlier values) of each fact is kept, so the
generator's memory grows with the number of distinct facts, not with the stream.

`SyntheticStream.probes` turns facts stated recently into questions whose answer is the latest
stated value ("What is the budget for the Lisbon trip?" -> "2,400 euros"), with the values it
replaced, so a benchmark can tell whether the retrieved context holds the current fact, only a
stale one, or neither. Drawing probes never touches the stream's own random state.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from itertools import islice

from ..records import Utterance

# Monday 5 January 2026, 08:30 UTC: the stream's first session starts here.
DEFAULT_START = datetime(2026, 1, 5, 8, 30, tzinfo=UTC).timestamp()

SPEAKER_NAMES = (
    "Sam", "Priya", "Alex", "Jordan", "Maya", "Tom", "Lena", "Omar", "Grace", "Luca", "Hana", "Ben",
    "Zoe", "Ravi", "Clara", "Diego", "Nina", "Felix", "Aisha", "Marco", "Ines", "Kai", "Elena", "Noah",
    "Sofia", "Yusuf", "Ruth", "Theo", "Mei", "Jonas", "Leila", "Oscar", "Ana", "Victor", "Freya", "Dev",
    "Iris", "Pablo", "Esther", "Hugo", "Nadia", "Arjun", "Lucy", "Tariq", "Greta", "Emil", "Rosa", "Kwame",
)  # fmt: skip
# People who are talked about but never speak: their names are facts, not speakers.
OTHER_FIRST = (
    "Marta", "Henrik", "Beatriz", "Colin", "Ingrid", "Rafael", "Yuki", "Dmitri", "Fiona", "Gustavo",
    "Helga", "Ibrahim", "Julia", "Kenji", "Lorna", "Matteo", "Niamh", "Orla", "Pedro", "Quentin",
    "Rebecca", "Stefan", "Tamsin", "Ulrich", "Vera", "Wendell", "Ximena", "Yara", "Zeynep", "Anders",
)  # fmt: skip
SURNAMES = (
    "Silva", "Okafor", "Lindqvist", "Brennan", "Nakamura", "Petrov", "Haddad", "Moreau", "Kowalski",
    "Fischer", "Duarte", "Osei", "Abbott", "Castellano", "Varga", "Iyer", "Novak", "Quinn", "Rahman",
    "Sorensen", "Tanaka", "Ueda", "Whitfield", "Yilmaz", "Zeller", "Ferreira", "Gallagher", "Holm",
)  # fmt: skip
CITIES = (
    "Lisbon", "Kyoto", "Porto", "Reykjavik", "Vienna", "Seville", "Krakow", "Edinburgh", "Tallinn",
    "Marrakesh", "Lyon", "Bologna", "Ljubljana", "Valencia", "Copenhagen", "Bergen", "Dubrovnik",
    "Istanbul", "Montreal", "Oaxaca", "Hanoi", "Cape Town", "Athens", "Tbilisi", "Budapest", "Prague",
    "Naples", "Bruges", "Galway", "Salzburg", "Nice", "Granada", "Riga", "Vilnius", "Sapporo", "Lima",
)  # fmt: skip
CODENAMES = (
    "Falcon", "Orchard", "Meridian", "Lantern", "Bluebird", "Quarry", "Saffron", "Tundra", "Harbor",
    "Juniper", "Kestrel", "Mosaic", "Nimbus", "Obsidian", "Pinecone", "Quasar", "Redwood", "Sextant",
    "Tidewater", "Umbra", "Vortex", "Willow", "Zephyr", "Atlas", "Beacon", "Cobalt", "Driftwood", "Ember",
)  # fmt: skip
COMPANIES = (
    "Brightwell Logistics", "Northgate Bank", "Calder Foods", "Ostrava Media", "Pellucid Health",
    "Ridgeway Insurance", "Solent Energy", "Tamar Robotics", "Upland Dairy", "Verity Legal",
    "Westmoor Retail", "Alder Analytics", "Bexley Print", "Corran Shipping", "Dunmore Telecom",
)  # fmt: skip
BUILDERS = (
    "Ortega & Sons", "Hale Builders", "Kettering Renovations", "Mossgrove Construction", "Fairbanks Joinery",
    "Pruitt Brothers", "Stonebridge Works", "Larkin Interiors", "Beckett & Ward", "Greenlane Trades",
)  # fmt: skip
HOTEL_WORDS = ("Miramar", "Alfama Garden", "Central Park", "Old Town", "Riverside", "Belvedere", "Lighthouse",
               "Cloister", "Harbour View", "Grand Royal", "Linden", "Palazzo Verde", "Blue Door", "Sunset")  # fmt: skip
RESTAURANTS = ("the Copper Kettle", "Casa Lupita", "the Green Fig", "Osteria Nonna", "the Salt House",
               "Bao Corner", "the Old Mill", "Cafe Marais", "the Red Lantern", "Taverna Elia", "the Boathouse",
               "Smoke & Oak")  # fmt: skip
PETS = ("Biscuit", "Pepper", "Mochi", "Rufus", "Luna", "Noodle", "Pickle", "Juniper", "Otis", "Clementine",
        "Waffles", "Ziggy", "Hazel", "Bramble", "Toffee", "Nugget", "Olive", "Gizmo", "Maple", "Socks")  # fmt: skip
SPECIES = ("beagle", "tabby cat", "labrador", "rabbit", "border collie", "parrot", "dachshund", "siamese cat",
           "greyhound", "guinea pig", "spaniel", "tortoise")  # fmt: skip
PET_FOODS = ("Acana", "Orijen", "Royal Canin", "Hill's", "Purina Pro", "Lily's Kitchen", "Taste of the Wild",
             "Eukanuba")  # fmt: skip
ROOMS = ("kitchen", "bathroom", "attic", "garden", "balcony", "basement", "living room", "hallway", "loft")
FINISHES = ("sage green tiles", "white subway tiles", "oak flooring", "terracotta tiles", "dark slate",
            "polished concrete", "walnut panels", "blue zellige tiles", "grey marble", "pine boards")  # fmt: skip
TREATMENTS = ("physiotherapy", "dental work", "knee surgery", "eye test", "blood test", "allergy treatment",
              "back pain treatment", "sleep study")  # fmt: skip
CLINICS = ("Riverside Clinic", "St Anne's Hospital", "the Parkview practice", "Northfield Health Centre",
           "the Elm Street surgery", "Harbour Medical", "the Linden clinic")  # fmt: skip
TEAMS = ("design", "platform", "marketing", "finance", "data", "mobile", "support", "sales", "research", "ops")
MEETINGS = ("weekly sync", "quarterly review", "planning meeting", "retrospective", "budget review", "standup")
ROOMS_OFFICE = ("the Aurora room", "room 4B", "the Library", "room 12", "the Glasshouse", "the Boiler Room",
                "room 3A", "the Observatory", "the Orchard room")  # fmt: skip
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
OCCASIONS = ("birthday dinner", "housewarming", "farewell party", "anniversary dinner", "summer barbecue",
             "graduation party", "engagement party")  # fmt: skip
CAKES = ("a lemon drizzle cake", "a chocolate fudge cake", "a carrot cake", "a red velvet cake", "a cheesecake",
         "a tiramisu", "a pistachio cake")  # fmt: skip
CARS = ("Volvo", "Golf", "Corolla", "Fiat Panda", "Skoda Octavia", "Mini", "Land Rover", "Renault Clio", "Ford Focus")
CAR_PARTS = ("clutch", "brake pads", "timing belt", "gearbox", "battery", "suspension", "exhaust", "alternator")
DISTRICTS = ("Riverside", "Old Town", "Hillcrest", "Northbank", "Greenwich Park", "Elmwood", "the harbour district",
             "Southgate", "Kingsmead")  # fmt: skip
STREETS = ("Mill", "Station", "Church", "Victoria", "Orchard", "Harbour", "Chestnut", "Queen", "Bridge", "Park")
RACES = ("half marathon", "10K", "marathon", "trail race", "sprint triathlon")
ROLES = ("data engineer", "product designer", "backend developer", "office manager", "QA lead", "sales director",
         "UX researcher", "finance analyst", "site reliability engineer")  # fmt: skip
BOOK_ADJ = ("Silent", "Last", "Hidden", "Salt", "Glass", "Winter", "Northern", "Paper", "Long", "Quiet", "Burning")
BOOK_NOUN = ("Orchard", "River", "Lighthouse", "Garden", "Archive", "Season", "Harbour", "Cartographer", "Mountain")
FOODS = ("the seafood", "the pastries", "the street food", "the coffee", "the wine", "the dumplings", "the bread")

# Openers and tails that vary wording without changing meaning, as speech does.
_PREFIXES = ("So ", "Okay, ", "By the way, ", "Quick update: ", "Just so you know, ", "Right, ", "Honestly, ",
             "Also, ", "Oh, and ", "Good news: ", "Heads up, ")  # fmt: skip
_TAILS = (", I think", ", if I remember right", ", as far as I know", ", just so everyone knows", " apparently",
          ", last I heard")  # fmt: skip
# First words that are not names, so a prefix lower-cases them ("So the budget ...").
_LOWER_FIRST = frozenset(
    "about any book can change did do does finance for fuel half how is it last let's my new no our quick remember "
    "rent should take the there'll they this we we're we've what what's when where where's which who's work".split()
)
_QUESTION_PREFIXES = ("Sorry, ", "Wait, ", "Quick question: ", "Remind me, ", "Hey, ")
_ACKS = ("Okay.", "Sounds good.", "Got it, thanks.", "Makes sense.", "Right.", "Sure, no problem.", "Good to know.",
         "Perfect.", "Ha, fair enough.", "Noted.", "Great, thanks for checking.", "Oh nice.", "Hmm, okay.")  # fmt: skip
_GREETINGS = ("Morning everyone.", "Hi all, have you got a minute?", "Hey {someone}, how was your weekend?",
              "Afternoon! Shall we start?", "Hi {someone}, good to see you.", "Evening all, quick catch-up?",
              "Hello, sorry I'm a few minutes late.", "Hey, is everyone here?")  # fmt: skip
_CLOSINGS = ("I have to jump to another call, talk later.", "Thanks everyone, that was useful.",
             "Okay, let's pick this up {day}.", "Right, I'll send a summary by email.", "Talk tomorrow then.",
             "Bye for now.", "Good, I think that's everything for today.")  # fmt: skip
_OPENERS = ("About {label}:", "Quick update on {label}.", "Can we talk about {label} for a second?",
            "Any news on {label}?", "Let's go over {label}.", "Where are we with {label}?")  # fmt: skip


def _person(rng: random.Random) -> str:
    return f"{rng.choice(OTHER_FIRST)} {rng.choice(SURNAMES)}"


# --- how slot values are made and how they drift --------------------------------------------
# A value maker gets the random source, the moment it is said and the value it replaces (its
# text and date; None the first time) and returns the text as it will be said, plus the date it
# stands for if any.

Made = tuple[str, date | None]
Maker = Callable[[random.Random, datetime, str | None, date | None], Made]


def _date_ahead(lo: int, hi: int) -> Maker:
    def make(rng: random.Random, now: datetime, old: str | None, old_date: date | None) -> Made:
        soonest = (now + timedelta(days=1)).date()
        while True:
            if old_date is not None and old_date >= soonest and rng.random() < 0.8:
                # Plans slip by days or weeks more often than they move earlier.
                d = max(soonest, old_date + timedelta(days=rng.choice((-7, -3, -2, -1, 1, 2, 3, 5, 7, 10, 14, 21))))
            else:
                d = (now + timedelta(days=rng.randint(lo, hi))).date()
            text = f"{d.day} {d.strftime('%B')}"
            if text != old:
                return text, d

    return make


def _money(lo: int, hi: int, step: int, unit: str = "euros") -> Maker:
    def make(rng: random.Random, now: datetime, old: str | None, old_date: date | None) -> Made:
        while True:
            if old is None:
                n = rng.randrange(lo, hi + 1, step)
            else:
                # Drift: the new amount stays near the old one, as budgets and quotes do.
                prev = int(old.split()[0].replace(",", ""))
                n = max(step, round(prev * rng.uniform(0.7, 1.45) / step) * step)
            text = f"{n:,} {unit}"
            if text != old:
                return text, None

    return make


def _choice(pool: tuple[str, ...] | Callable[[random.Random], str]) -> Maker:
    def make(rng: random.Random, now: datetime, old: str | None, old_date: date | None) -> Made:
        while True:
            text = pool(rng) if callable(pool) else rng.choice(pool)
            if text != old:
                return text, None

    return make


def _number(lo: int, hi: int, fmt: str) -> Maker:
    def make(rng: random.Random, now: datetime, old: str | None, old_date: date | None) -> Made:
        while True:
            text = fmt.format(n=rng.randint(lo, hi))
            if text != old:
                return text, None

    return make


def _weight(rng: random.Random) -> str:
    return f"{rng.randint(2, 40)}.{rng.randint(0, 9)} kilos"


def _race_time(rng: random.Random) -> str:
    hours = rng.randint(1, 4)
    return f"{hours} hour{'s' if hours > 1 else ''} {rng.randint(1, 59)} minutes"


def _slot_time(rng: random.Random) -> str:
    return f"{rng.choice(WEEKDAYS)}s at {rng.randint(8, 16)}:{rng.choice(('00', '15', '30', '45'))}"


def _address(rng: random.Random) -> str:
    return f"{rng.randint(2, 180)} {rng.choice(STREETS)} {rng.choice(('Street', 'Road', 'Lane', 'Avenue'))}"


def _book(rng: random.Random) -> str:
    return f"The {rng.choice(BOOK_ADJ)} {rng.choice(BOOK_NOUN)}"


@dataclass(frozen=True)
class SlotSpec:
    """One fact a topic carries: how it is stated, changed, asked about, and probed."""

    name: str
    make: Maker
    state: tuple[str, ...]
    update: tuple[str, ...]
    ask: tuple[str, ...]
    probe: tuple[str, ...]


@dataclass(frozen=True)
class TopicKind:
    name: str
    weight: float
    subject: Callable[[random.Random, list[str]], dict[str, str]]
    slots: tuple[SlotSpec, ...]
    chatter: tuple[str, ...]


def _trip(rng: random.Random, circle: list[str]) -> dict[str, str]:
    city = rng.choice(CITIES)
    return {"city": city, "label": f"the {city} trip"}


def _project(rng: random.Random, circle: list[str]) -> dict[str, str]:
    code = rng.choice(CODENAMES)
    return {"code": code, "label": f"the {code} project"}


def _pet(rng: random.Random, circle: list[str]) -> dict[str, str]:
    pet, owner = rng.choice(PETS), rng.choice(circle)
    return {"pet": pet, "species": rng.choice(SPECIES), "owner": owner, "label": f"{owner}'s {pet}"}


def _owned(pool: tuple[str, ...], key: str) -> Callable[[random.Random, list[str]], dict[str, str]]:
    def subject(rng: random.Random, circle: list[str]) -> dict[str, str]:
        owner, thing = rng.choice(circle), rng.choice(pool)
        return {"owner": owner, key: thing, "label": f"{owner}'s {thing}"}

    return subject


def _renovation(rng: random.Random, circle: list[str]) -> dict[str, str]:
    owner, room = rng.choice(circle), rng.choice(ROOMS)
    return {"owner": owner, "room": room, "label": f"{owner}'s {room} renovation"}


def _meeting(rng: random.Random, circle: list[str]) -> dict[str, str]:
    team, kind = rng.choice(TEAMS), rng.choice(MEETINGS)
    return {"team": team, "meeting": kind, "label": f"the {team} {kind}"}


def _move(rng: random.Random, circle: list[str]) -> dict[str, str]:
    owner, district = rng.choice(circle), rng.choice(DISTRICTS)
    return {"owner": owner, "district": district, "label": f"{owner}'s move to {district}"}


def _race(rng: random.Random, circle: list[str]) -> dict[str, str]:
    city, race = rng.choice(CITIES), rng.choice(RACES)
    return {"city": city, "race": race, "label": f"the {city} {race}"}


def _hire(rng: random.Random, circle: list[str]) -> dict[str, str]:
    role = rng.choice(ROLES)
    return {"role": role, "label": f"the {role} hire"}


def _club(rng: random.Random, circle: list[str]) -> dict[str, str]:
    day = rng.choice(WEEKDAYS)
    return {"day_name": day, "label": f"the {day} book club"}


KINDS: tuple[TopicKind, ...] = (
    TopicKind(
        "trip",
        1.4,
        _trip,
        (
            SlotSpec(
                "departure",
                _date_ahead(10, 120),
                ("We fly to {city} on {wd} {v}.", "The {city} trip starts on {wd} {v}.",
                 "Our flight to {city} leaves on {v}, early in the morning."),
                ("The {city} trip moves to {wd} {v}.", "Change of plan: we now leave for {city} on {v}.",
                 "They pushed our {city} flight to {wd} {v}, not {old} any more."),
                ("When do we leave for {city} again?", "What's the date for {city} now?"),
                ("When does the {city} trip start?", "What date do we fly to {city}?"),
            ),
            SlotSpec(
                "budget",
                _money(600, 6000, 50),
                ("The budget for the {city} trip is {v}.", "Finance approved {v} for the whole {city} trip.",
                 "We agreed to spend {v} on {city}, flights and hotel included."),
                ("The {city} budget went up to {v}.", "We had to change the {city} budget to {v} instead of {old}.",
                 "New number for {city}: {v} in total."),
                ("How much can we spend in {city}?", "What was the {city} budget again?"),
                ("What is the budget for the {city} trip?", "How much money do we have for {city}?"),
            ),
            SlotSpec(
                "hotel",
                _choice(lambda rng: f"Hotel {rng.choice(HOTEL_WORDS)}"),
                ("I booked {v} in {city}, close to the old centre.", "We're staying at {v} in {city}.",
                 "For {city} I reserved three nights at {v}."),
                ("We switched hotels in {city}; it's {v} now, not {old}.",
                 "I cancelled {old}, we're at {v} in {city}."),
                ("Which hotel did we pick in {city}?", "Where are we sleeping in {city}?"),
                ("Which hotel are we staying at in {city}?", "Where did we book the hotel for {city}?"),
            ),
            SlotSpec(
                "organiser",
                _choice(_person),
                ("{v} is organising the {city} trip.", "{v} is handling all the bookings for {city}."),
                ("{v} took over the {city} trip from {old}.", "{old} dropped out, so {v} is organising {city} now."),
                ("Who's organising {city}?",),
                ("Who is organising the {city} trip?",),
            ),
        ),
        ("Does anyone know if we need a visa for {city}?", "I've heard {food} in {city} is amazing.",
         "Remember to pack an adapter for {city}.", "The forecast for {city} says around {deg} degrees.",
         "How long is the flight to {city}, about {n} hours?", "I still have to renew my passport before {city}.",
         "We should book a table somewhere nice on the last night in {city}.",
         "{someone}, can you share the packing list for {city}?", "Is the airport in {city} far from the centre?",
         "I found a walking tour of {city} for {n2} euros each."),
    ),
    TopicKind(
        "project",
        1.6,
        _project,
        (
            SlotSpec(
                "deadline",
                _date_ahead(7, 90),
                ("The {code} deadline is {wd} {v}.", "We have to ship {code} by {v}.",
                 "{code} is due on {wd} {v}, the client confirmed it."),
                ("The {code} deadline slipped to {wd} {v}.", "{code} is now due {v} instead of {old}.",
                 "They moved the {code} release to {v}."),
                ("When is {code} due?", "What's our {code} deadline?"),
                ("When is the deadline for the {code} project?", "When is {code} due?"),
            ),
            SlotSpec(
                "lead",
                _choice(_person),
                ("{v} is leading the {code} project.", "{v} is the technical lead on {code}."),
                ("{v} is taking over {code} from {old}.", "{old} moved teams, so {v} leads {code} now."),
                ("Who's leading {code} these days?",),
                ("Who leads the {code} project?", "Who is the lead on {code}?"),
            ),
            SlotSpec(
                "budget",
                _money(20000, 400000, 1000),
                ("The {code} budget is {v} for this year.", "We got {v} approved for {code}."),
                ("The {code} budget was cut to {v}.", "{code} now has {v}, up from {old}."),
                ("How much budget does {code} have left?",),
                ("What is the budget for the {code} project?",),
            ),
            SlotSpec(
                "client",
                _choice(COMPANIES),
                ("The client for {code} is {v}.", "{code} is being built for {v}."),
                ("{code} moved from {old} to a new client, {v}.",),
                ("Who's the {code} client again?",),
                ("Who is the client for the {code} project?",),
            ),
        ),
        ("The {code} demo crashed twice yesterday, we need to look at the logs.",
         "I'll set up a call about the {code} requirements.", "We're about {pct} percent done with the {code} backend.",
         "Can someone review my pull request for {code}?", "The {code} test suite takes {n2} minutes now.",
         "{someone}, did you update the {code} roadmap?", "I think {code} needs two more people for a month.",
         "The {code} database migration went fine last night.", "We found {n} bugs in the {code} beta this week."),
    ),
    TopicKind(
        "pet",
        1.0,
        _pet,
        (
            SlotSpec(
                "vet",
                _date_ahead(2, 40),
                ("{pet}'s vet appointment is on {wd} {v}.", "I booked the vet for {pet} on {v}."),
                ("The vet moved {pet}'s appointment to {wd} {v}.", "{pet} now sees the vet on {v}, not {old}."),
                ("When is {pet} going to the vet?",),
                ("When is {pet}'s vet appointment?",),
            ),
            SlotSpec(
                "sitter",
                _choice(_person),
                ("{v} is looking after {pet} while {owner} is away.", "{v} will feed {pet} next week."),
                ("{old} can't do it, so {v} is looking after {pet} now.",),
                ("Who's looking after {pet}?",),
                ("Who is looking after {pet}?", "Who takes care of {pet} when {owner} is away?"),
            ),
            SlotSpec(
                "weight",
                _choice(_weight),
                ("{pet} weighs {v} now, the vet was happy.", "The {species} is at {v}, so {pet} is fine."),
                ("{pet} is down to {v}.", "{pet} went from {old} to {v}."),
                ("How heavy is {pet} these days?",),
                ("How much does {pet} weigh?",),
            ),
            SlotSpec(
                "food",
                _choice(PET_FOODS),
                ("{pet} only eats {v} now.", "We switched {pet} to {v} food."),
                ("{pet} stopped eating {old}, so we're trying {v}.",),
                ("What food does {pet} get?",),
                ("What food does {pet} eat?",),
            ),
        ),
        ("{pet} chewed through another cable last night.", "{pet} has been sleeping a lot lately.",
         "We took {pet} to the park on {day}, {pet} loved it.", "Is it normal for a {species} to shed this much?",
         "{owner}, send us a photo of {pet}!", "{pet} barked at the postman for {n2} minutes straight.",
         "I bought {pet} a new bed, it cost {n2} euros."),
    ),
    TopicKind(
        "renovation",
        1.0,
        _renovation,
        (
            SlotSpec(
                "cost",
                _money(2000, 60000, 250),
                ("The quote for {owner}'s {room} came in at {v}.", "The {room} renovation will cost {v}."),
                ("The {room} quote went up to {v}.", "They revised the {room} price to {v} from {old}."),
                ("How much is the {room} going to cost?",),
                ("How much will {owner}'s {room} renovation cost?",),
            ),
            SlotSpec(
                "builder",
                _choice(BUILDERS),
                ("{v} are doing {owner}'s {room}.", "We hired {v} for the {room}."),
                ("We fired {old} and hired {v} for the {room}.",),
                ("Who's doing the {room} work?",),
                ("Which builder is doing {owner}'s {room} renovation?",),
            ),
            SlotSpec(
                "start",
                _date_ahead(5, 60),
                ("Work on the {room} starts {wd} {v}.", "The builders arrive on {v} to start the {room}."),
                ("The {room} start moved to {wd} {v}.",),
                ("When do they start on the {room}?",),
                ("When does the work on {owner}'s {room} start?",),
            ),
            SlotSpec(
                "finish",
                _choice(FINISHES),
                ("For the {room} we chose {v}.", "{owner} picked {v} for the {room}."),
                ("We changed our minds, {v} instead of {old} in the {room}.",),
                ("What did you choose for the {room} in the end?",),
                ("What finish did {owner} choose for the {room}?",),
            ),
        ),
        ("The {room} is a complete mess right now.", "We found damp behind the {room} wall.",
         "{owner}, are you living with dust everywhere?", "The plumber said the {room} pipes are {n2} years old.",
         "I saw a great {room} on a design blog, I'll send you the link.",
         "Do you need a permit for the {room} work?"),
    ),
    TopicKind(
        "health",
        0.8,
        _owned(TREATMENTS, "treatment"),
        (
            SlotSpec(
                "appointment",
                _date_ahead(3, 45),
                ("{owner}'s next {treatment} appointment is on {wd} {v}.",
                 "The {treatment} session is booked for {v}."),
                ("They moved the {treatment} appointment to {wd} {v}.",),
                ("When is your next {treatment} appointment, {owner}?",),
                ("When is {owner}'s next {treatment} appointment?",),
            ),
            SlotSpec(
                "doctor",
                _choice(lambda rng: f"Dr. {rng.choice(SURNAMES)}"),
                ("{owner} sees {v} for the {treatment}.", "{v} is in charge of {owner}'s {treatment}."),
                ("{owner} switched from {old} to {v} for the {treatment}.",),
                ("Which doctor is doing your {treatment}?",),
                ("Which doctor does {owner} see for the {treatment}?",),
            ),
            SlotSpec(
                "clinic",
                _choice(CLINICS),
                ("The {treatment} is at {v}.", "{owner} goes to {v} for the {treatment}."),
                ("The {treatment} moved to {v}, {old} was too far.",),
                ("Where do you go for the {treatment}?",),
                ("Where does {owner} go for the {treatment}?",),
            ),
        ),
        ("{owner}, how are you feeling after the {treatment}?", "My back has been bad since {day}.",
         "The waiting list for {treatment} was {n2} weeks.", "I'm trying to walk {n} kilometres every day.",
         "Did they give you anything for the pain?", "Take it easy this week, {owner}."),
    ),
    TopicKind(
        "meeting",
        1.0,
        _meeting,
        (
            SlotSpec(
                "time",
                _choice(_slot_time),
                ("The {team} {meeting} is on {v}.", "We hold the {team} {meeting} {v} from now on."),
                ("The {team} {meeting} moved to {v}.", "No more {old}, the {team} {meeting} is {v} now."),
                ("When is the {team} {meeting} again?",),
                ("When is the {team} {meeting}?",),
            ),
            SlotSpec(
                "room",
                _choice(ROOMS_OFFICE),
                ("The {team} {meeting} is in {v}.", "I booked {v} for the {team} {meeting}."),
                ("The {team} {meeting} moved from {old} to {v}.",),
                ("Which room is the {team} {meeting} in?",),
                ("Where is the {team} {meeting} held?",),
            ),
            SlotSpec(
                "chair",
                _choice(_person),
                ("{v} chairs the {team} {meeting}.", "{v} runs the {team} {meeting} this quarter."),
                ("{v} is chairing the {team} {meeting} instead of {old}.",),
                ("Who's running the {team} {meeting}?",),
                ("Who chairs the {team} {meeting}?",),
            ),
        ),
        ("The last {team} {meeting} ran {n2} minutes over.", "Can we keep the {team} {meeting} shorter?",
         "I'll put the hiring plan on the {team} agenda.", "{someone}, can you take notes at the {team} {meeting}?",
         "Half the {team} team was missing last time.", "Let's share the {team} slides before the meeting."),
    ),
    TopicKind(
        "party",
        0.9,
        _owned(OCCASIONS, "occasion"),
        (
            SlotSpec(
                "date",
                _date_ahead(7, 60),
                ("{owner}'s {occasion} is on {wd} {v}.", "We're doing the {occasion} on {v}."),
                ("The {occasion} moved to {wd} {v}.", "{owner} pushed the {occasion} to {v}."),
                ("When is {owner}'s {occasion}?",),
                ("When is {owner}'s {occasion}?",),
            ),
            SlotSpec(
                "venue",
                _choice(RESTAURANTS),
                ("The {occasion} is at {v}.", "{owner} booked {v} for the {occasion}."),
                ("We moved the {occasion} from {old} to {v}.",),
                ("Where's the {occasion} again?",),
                ("Where is {owner}'s {occasion}?",),
            ),
            SlotSpec(
                "guests",
                _number(6, 60, "{n} guests"),
                ("We're expecting {v} at the {occasion}.", "{owner} invited {v} to the {occasion}."),
                ("The {occasion} is up to {v} now.",),
                ("How many people are coming to the {occasion}?",),
                ("How many guests are coming to {owner}'s {occasion}?",),
            ),
            SlotSpec(
                "cake",
                _choice(CAKES),
                ("I ordered {v} for the {occasion}.", "There'll be {v} at the {occasion}."),
                ("We changed the order to {v}.",),
                ("What cake did we get for the {occasion}?",),
                ("What cake was ordered for {owner}'s {occasion}?",),
            ),
        ),
        ("Should we get {owner} a present for the {occasion}?", "I can bring the speakers for the {occasion}.",
         "Who's driving back after the {occasion}?", "Last year's {occasion} went on until {n} in the morning.",
         "{someone}, can you make a playlist for the {occasion}?", "Is it okay to bring a plus one?"),
    ),
    TopicKind(
        "car",
        0.7,
        _owned(CARS, "car"),
        (
            SlotSpec(
                "garage",
                _choice(lambda rng: f"{rng.choice(SURNAMES)} Motors"),
                ("{owner}'s {car} is at {v}.", "I left the {car} with {v}."),
                ("We took the {car} away from {old}, it's at {v} now.",),
                ("Which garage has your {car}?",),
                ("Which garage is {owner}'s {car} at?",),
            ),
            SlotSpec(
                "cost",
                _money(150, 4000, 10),
                ("The repair on the {car} is {v}.", "They quoted {v} for the {part}."),
                ("The {car} bill went up to {v}.", "The garage now says {v}, not {old}."),
                ("How much is the {car} repair?",),
                ("How much does the repair of {owner}'s {car} cost?",),
            ),
            SlotSpec(
                "pickup",
                _date_ahead(1, 20),
                ("The {car} will be ready on {wd} {v}.", "I can pick up the {car} on {v}."),
                ("The {car} won't be ready until {wd} {v}.",),
                ("When do you get the {car} back?",),
                ("When will {owner}'s {car} be ready?",),
            ),
        ),
        ("The {part} on the {car} has been making a noise for weeks.", "{owner}, do you need a lift on {day}?",
         "The {car} failed its inspection, of course.", "Fuel went up {n} cents again.",
         "I might just sell the {car} and get a bike."),
    ),
    TopicKind(
        "move",
        0.7,
        _move,
        (
            SlotSpec(
                "date",
                _date_ahead(10, 90),
                ("{owner} moves to {district} on {wd} {v}.", "The move to {district} is on {v}."),
                ("The move to {district} is pushed to {wd} {v}.",),
                ("When are you moving, {owner}?",),
                ("When does {owner} move to {district}?",),
            ),
            SlotSpec(
                "rent",
                _money(700, 3200, 25, "euros a month"),
                ("The new flat in {district} is {v}.", "Rent in {district} will be {v}."),
                ("The landlord raised the {district} rent to {v}.", "We negotiated {district} down to {v} from {old}."),
                ("How much is the rent in {district}?",),
                ("What is the rent of {owner}'s new flat in {district}?",),
            ),
            SlotSpec(
                "address",
                _choice(_address),
                ("The new address is {v}, in {district}.", "{owner}'s new place is at {v}."),
                ("We lost the first flat, the new one is {v}.",),
                ("What's the new address?",),
                ("What is {owner}'s new address in {district}?",),
            ),
        ),
        ("I have {n2} boxes of books to pack.", "{someone}, can you help carry the sofa on moving day?",
         "{district} is much closer to the station.", "The flat in {district} has a tiny kitchen but a big balcony.",
         "I still need to cancel the internet at the old place."),
    ),
    TopicKind(
        "race",
        0.6,
        _race,
        (
            SlotSpec(
                "date",
                _date_ahead(14, 120),
                ("The {city} {race} is on {wd} {v}.", "We're running {city} on {v}."),
                ("The {city} {race} was moved to {wd} {v}.",),
                ("When is {city} again?",),
                ("When is the {city} {race}?",),
            ),
            SlotSpec(
                "target",
                _choice(_race_time),
                ("My target for the {city} {race} is {v}.", "I'm aiming for {v} in {city}."),
                ("I changed my {city} target to {v}.",),
                ("What's your target time for {city}?",),
                ("What is the target time for the {city} {race}?",),
            ),
            SlotSpec(
                "mileage",
                _number(15, 90, "{n} kilometres a week"),
                ("I'm training {v} for {city}.", "The plan for {city} says {v}."),
                ("I upped my training to {v} for {city}.",),
                ("How much are you running for {city}?",),
                ("How much training per week for the {city} {race}?",),
            ),
        ),
        ("My knee hurt after the long run on {day}.", "The {city} course has a nasty hill at kilometre {n}.",
         "{someone}, want to do intervals on {day}?", "I bought new running shoes, {n2} euros on sale.",
         "It was {deg} degrees on this morning's run."),
    ),
    TopicKind(
        "hire",
        0.8,
        _hire,
        (
            SlotSpec(
                "candidate",
                _choice(_person),
                ("Our top candidate for the {role} job is {v}.", "{v} looks like the best {role} so far."),
                ("{old} withdrew, so {v} is our first choice for {role} now.",),
                ("Who's the front runner for {role}?",),
                ("Who is the top candidate for the {role} position?",),
            ),
            SlotSpec(
                "interview",
                _date_ahead(2, 30),
                ("The final {role} interview is on {wd} {v}.", "We interview for {role} on {v}."),
                ("The {role} interview moved to {wd} {v}.",),
                ("When is the {role} interview?",),
                ("When is the final interview for the {role} position?",),
            ),
            SlotSpec(
                "offer",
                _money(38000, 140000, 1000, "euros a year"),
                ("We can offer {v} for the {role} role.", "HR approved {v} for {role}."),
                ("HR raised the {role} offer to {v}.", "The {role} offer changed from {old} to {v}."),
                ("What salary are we offering for {role}?",),
                ("What salary is offered for the {role} position?",),
            ),
        ),
        ("We've had {n2} applications for {role} so far.", "The {role} take-home task is maybe too long.",
         "{someone}, can you sit in on the {role} interviews?", "Let's ask for two references for the {role}.",
         "The recruiter wants {pct} percent of the first salary."),
    ),
    TopicKind(
        "club",
        0.5,
        _club,
        (
            SlotSpec(
                "book",
                _choice(_book),
                ("This month the {day_name} book club is reading {v}.", "We picked {v} for book club."),
                ("We dropped {old}; the book club is reading {v} instead.",),
                ("What are we reading for book club?",),
                ("What book is the {day_name} book club reading?",),
            ),
            SlotSpec(
                "host",
                _choice(_person),
                ("{v} is hosting the {day_name} book club this time.", "Book club is at {v}'s place."),
                ("{old} can't host, so book club is at {v}'s.",),
                ("Who's hosting book club?",),
                ("Who is hosting the {day_name} book club?",),
            ),
            SlotSpec(
                "meet",
                _date_ahead(5, 35),
                ("The next {day_name} book club meets on {v}.", "Book club is on {wd} {v}."),
                ("Book club moved to {wd} {v}.",),
                ("When is the next book club?",),
                ("When does the {day_name} book club meet next?",),
            ),
        ),
        ("I'm only on chapter {n}, don't spoil it.", "The ending was a bit rushed, honestly.",
         "{someone}, are you bringing wine to book club?", "I read {n2} pages on the train this morning.",
         "Can we pick something shorter next time?"),
    ),
)  # fmt: skip


@dataclass(frozen=True)
class Probe:
    """A question about a fact the stream has stated, with the value it last stated."""

    question: str
    answer: str  # the latest stated value, exactly as it was said
    stale: tuple[str, ...]  # values stated earlier for the same fact, since superseded
    topic: str
    slot: str
    stated_at: int  # the 0-based index of the utterance that last stated the answer
    time: float

    def found_in(self, text: str) -> bool:
        """Whether `text` holds the latest value (as a whole phrase: "1 April" is not in "21 April")."""
        return _contains(text, self.answer)

    def stale_in(self, text: str) -> bool:
        """Whether `text` holds a superseded value but not the latest one: the memory kept the old fact."""
        return not self.found_in(text) and any(_contains(text, old) for old in self.stale)


def _contains(text: str, phrase: str) -> bool:
    return re.search(r"(?<![\w,.])" + re.escape(phrase) + r"(?![\w])", text, re.IGNORECASE) is not None


@dataclass
class _Fact:
    value: str
    when: date | None
    history: list[str]
    stated_at: int
    time: float


@dataclass
class _Topic:
    kind: TopicKind
    fields: dict[str, str]
    circle: list[str]
    until: float
    heat: float
    facts: dict[str, _Fact] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.fields["label"]


class SyntheticStream:
    """An endless, seeded stream of utterances with the facts they state.

    Iterate it (or call `take(n)`) for `Utterance`s; call `probes(...)` between utterances for
    questions about what has been said so far. One instance is one stream: iterating it again
    continues where it stopped.
    """

    def __init__(
        self,
        seed: int = 0,
        *,
        speakers: int = 36,
        start: float = DEFAULT_START,
        active_topics: int = 48,
    ) -> None:
        if not 2 <= speakers <= len(SPEAKER_NAMES):
            raise ValueError(f"speakers must be between 2 and {len(SPEAKER_NAMES)}; got {speakers}")
        self.seed = seed
        self._rng = random.Random(seed)
        rng = self._rng
        self.speakers: tuple[str, ...] = tuple(rng.sample(SPEAKER_NAMES, speakers))
        # Social circles of four to eight people: who meets whom, and who cares about which topics.
        names = list(self.speakers)
        self.circles: list[list[str]] = []
        while names:
            size = min(len(names), rng.randint(4, 8))
            if len(names) - size < 2:
                size = len(names)
            self.circles.append(names[:size])
            names = names[size:]
        # Some people belong to a second circle (work and family), so circles overlap as in life.
        for circle in self.circles:
            other = rng.choice(self.speakers)
            if other not in circle:
                circle.append(other)
        self._active_target = max(len(self.circles), active_topics)
        self._time = start
        self._count = 0
        # Utterance index -> the fact (label, slot) it states: what a supersession link is checked
        # against. About 2.5 MB at 100,000 utterances (42,454 lines state a fact at seed 0), inside
        # the RSS `bench scale` reports beside the memory's 820 MB.
        self._stated: dict[int, tuple[str, str]] = {}
        self._topics: list[_Topic] = []
        # (label, slot) -> the topic that last stated it: a label reused by a later topic (a
        # second Lisbon trip) continues the same fact, so "the latest value" stays well defined.
        self._facts: dict[tuple[str, str], tuple[_Topic, SlotSpec]] = {}
        self._kind_weights = [k.weight for k in KINDS]
        self._sessions = 0
        self._topic_sessions: Counter[str] = Counter()
        self._source = self._generate()

    # --- public ---------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Utterance]:
        return self._source

    def take(self, count: int) -> Iterator[Utterance]:
        """The next `count` utterances, made one at a time."""
        return islice(self._source, count)

    @property
    def produced(self) -> int:
        """How many utterances the stream has yielded."""
        return self._count

    @property
    def sessions(self) -> int:
        """How many sessions (conversations separated by a pause of half an hour or more) have begun."""
        return self._sessions

    def topic_sessions(self) -> dict[str, int]:
        """For each topic label, in how many sessions it came up: how much topics recur."""
        return dict(self._topic_sessions)

    def fact_stated_by(self, index: int) -> tuple[str, str] | None:
        """The fact (topic label, slot) the utterance at 0-based `index` states; None for a line
        that states none (a question, chatter, an acknowledgement)."""
        return self._stated.get(index)

    def facts(self) -> list[Probe]:
        """Every fact stated so far, with its latest value (one probe question each)."""
        out = []
        for (label, slot_name), (topic, spec) in sorted(self._facts.items()):
            fact = topic.facts[slot_name]
            question = spec.probe[0].format(**topic.fields)
            out.append(Probe(question, fact.value, tuple(fact.history), label, slot_name, fact.stated_at, fact.time))
        return out

    def probes(self, count: int, *, recent: int | None = None) -> list[Probe]:
        """Up to `count` distinct questions about facts, preferring those stated in the last `recent` utterances.

        Drawn with their own random source (from the seed and the stream position), so asking
        for probes does not change the stream that follows.
        """
        rng = random.Random(f"{self.seed}/probes/{self._count}")
        facts = [(key, ts) for key, ts in sorted(self._facts.items())]
        if recent is not None:
            floor = self._count - recent
            fresh = [(key, ts) for key, ts in facts if ts[0].facts[key[1]].stated_at >= floor]
            older = [(key, ts) for key, ts in facts if ts[0].facts[key[1]].stated_at < floor]
            rng.shuffle(fresh)
            rng.shuffle(older)
            chosen = (fresh + older)[:count]
        else:
            chosen = rng.sample(facts, min(count, len(facts)))
        out = []
        for (label, slot_name), (topic, spec) in chosen:
            fact = topic.facts[slot_name]
            question = rng.choice(spec.probe).format(**topic.fields)
            out.append(Probe(question, fact.value, tuple(fact.history), label, slot_name, fact.stated_at, fact.time))
        return out

    # --- the world --------------------------------------------------------------------------

    def _spawn(self, circle: list[str]) -> _Topic:
        rng = self._rng
        active = {t.label for t in self._topics}
        for _ in range(20):
            kind = rng.choices(KINDS, weights=self._kind_weights)[0]
            fields = kind.subject(rng, circle)
            if fields["label"] not in active:
                break
        # Topics live for days to months of stream time, then give way to new ones.
        until = self._time + rng.uniform(5, 120) * 86400
        topic = _Topic(kind, fields, circle, until, heat=rng.paretovariate(1.5))
        self._topics.append(topic)
        return topic

    def _pick_topics(self, circle: list[str]) -> list[_Topic]:
        rng = self._rng
        self._topics = [t for t in self._topics if t.until > self._time]
        while len(self._topics) < self._active_target:
            self._spawn(rng.choice(self.circles))
        mine = [t for t in self._topics if t.circle is circle]
        if len(mine) < 3 or rng.random() < 0.08:
            mine.append(self._spawn(circle))
        n = min(len(mine), rng.choice((1, 1, 2, 2, 2, 3, 3, 4)))
        # Hot topics come up again and again; a few are mentioned once in a while.
        picked: list[_Topic] = []
        pool = list(mine)
        while len(picked) < n and pool:
            t = rng.choices(pool, weights=[p.heat for p in pool])[0]
            pool.remove(t)
            picked.append(t)
        return picked

    # --- the words --------------------------------------------------------------------------

    def _fill(self, topic: _Topic | None, speaker: str, others: list[str]) -> dict[str, str]:
        rng = self._rng
        fill = {
            "someone": rng.choice(others) if others else speaker,
            "n": str(rng.randint(2, 12)),
            "n2": str(rng.randint(10, 95)),
            "deg": str(rng.randint(-3, 34)),
            "pct": str(rng.randrange(10, 95, 5)),
            "day": rng.choice(WEEKDAYS),
            "food": rng.choice(FOODS),
            "part": rng.choice(CAR_PARTS),
        }
        if topic is not None:
            fill.update(topic.fields)
        return fill

    def _dress(self, sentence: str) -> str:
        """Vary the wording around a line the way people do, without changing what it says."""
        rng = self._rng
        question = sentence.endswith("?")
        if not question and sentence.endswith(".") and "I think" not in sentence and rng.random() < 0.12:
            sentence = sentence[:-1] + rng.choice(_TAILS) + "."
        if rng.random() < 0.25:
            first, _, rest = sentence.partition(" ")
            if first.lower() in _LOWER_FIRST:
                first = first.lower()
            prefix = rng.choice(_QUESTION_PREFIXES if question else _PREFIXES)
            sentence = prefix + first + (" " + rest if rest else "")
        return sentence

    def _state(self, topic: _Topic, spec: SlotSpec, fill: dict[str, str], change: bool) -> str:
        """A line that states a fact: its first value, the same value again, or a new one (drift)."""
        rng = self._rng
        key = (topic.label, spec.name)
        fact = topic.facts.get(spec.name)
        inherited = self._facts.get(key)
        # A topic that reuses a label (a second Lisbon trip) has new values, and the old trip's
        # values become the stale ones: the latest value stays the one a question should get.
        previous = fact or (inherited[0].facts[spec.name] if inherited is not None else None)
        now = datetime.fromtimestamp(self._time, tz=UTC)
        # A date that has passed is not restated: the next appointment, flight or deadline is set.
        change = change or (fact is not None and fact.when is not None and fact.when <= now.date())
        if fact is None or change:
            value, when = spec.make(rng, now, previous.value if previous else None, previous.when if previous else None)
            history = [*previous.history, previous.value] if previous else []
            history = list(dict.fromkeys(h for h in history if h != value))[-8:]
            templates = spec.update if fact is not None else spec.state
            new = _Fact(value, when, history, self._count, self._time)
            fill = {**fill, "old": previous.value if previous else ""}
        else:
            templates = spec.state
            new = _Fact(fact.value, fact.when, list(fact.history), self._count, self._time)
        topic.facts[spec.name] = new
        self._facts[key] = (topic, spec)
        self._stated[self._count] = key
        wd = new.when.strftime("%A") if new.when else ""
        return rng.choice(templates).format(**fill, v=new.value, wd=wd).replace("  ", " ")

    def _segment(self, topic: _Topic, people: list[str], last: str | None) -> Iterator[tuple[str, str]]:
        """One stretch of talk about one topic: (speaker, text) pairs."""
        rng = self._rng
        length = rng.randint(3, 12)
        said = 0
        speaker = last
        pending_answer: SlotSpec | None = None
        # What this stretch already said, so it does not say the same thing twice in a row.
        stated: set[str] = set()
        chatted: set[str] = set()
        changed: set[str] = set()

        def next_speaker() -> str:
            choices = [p for p in people if p != speaker] or people
            return rng.choice(choices)

        if rng.random() < 0.4:
            speaker = next_speaker()
            yield speaker, rng.choice(_OPENERS).format(label=topic.label)
            said += 1
        while said < length:
            speaker = next_speaker()
            others = [p for p in people if p != speaker]
            fill = self._fill(topic, speaker, others)
            said += 1
            if pending_answer is not None:
                text = self._state(topic, pending_answer, fill, change=False)
                stated.add(pending_answer.name)
                pending_answer = None
                yield speaker, self._dress(text)
                continue
            unknown = [s for s in topic.kind.slots if s.name not in topic.facts]
            known = [s for s in topic.kind.slots if s.name in topic.facts]
            quiet = [s for s in known if s.name not in stated]
            steady = [s for s in known if s.name not in changed]
            r = rng.random()
            if unknown and r < 0.3:
                spec = rng.choice(unknown)
                text = self._state(topic, spec, fill, change=False)
            elif quiet and r < 0.38:
                spec = rng.choice(quiet)
                text = self._state(topic, spec, fill, change=False)
            elif steady and r < 0.46:
                spec = rng.choice(steady)
                text = self._state(topic, spec, fill, change=True)
                changed.add(spec.name)
            elif quiet and r < 0.58:
                pending_answer = rng.choice(quiet)
                yield speaker, self._dress(rng.choice(pending_answer.ask).format(**fill))
                continue
            elif r < 0.9:
                fresh = [c for c in topic.kind.chatter if c not in chatted] or list(topic.kind.chatter)
                line = rng.choice(fresh)
                chatted.add(line)
                yield speaker, self._dress(line.format(**fill))
                continue
            else:
                yield speaker, rng.choice(_ACKS)
                continue
            stated.add(spec.name)
            yield speaker, self._dress(text)
        if pending_answer is not None:
            speaker = next_speaker()
            yield speaker, self._state(topic, pending_answer, self._fill(topic, speaker, []), change=False)

    def _generate(self) -> Iterator[Utterance]:
        rng = self._rng
        while True:
            circle = rng.choice(self.circles)
            people = rng.sample(circle, min(len(circle), rng.choice((2, 2, 3, 3, 3, 4, 5))))
            topics = self._pick_topics(circle)
            self._sessions += 1
            self._topic_sessions.update(t.label for t in topics)
            last: str | None = None
            if rng.random() < 0.5:
                last = people[0]
                yield self._emit(last, rng.choice(_GREETINGS).format(someone=people[1 % len(people)]))
            for topic in topics:
                # The segment makes its next line only after the last one is emitted, so a fact is
                # stamped with the index and time of the utterance that states it.
                for speaker, text in self._segment(topic, people, last):
                    last = speaker
                    yield self._emit(speaker, text)
            if rng.random() < 0.4:
                closer = rng.choice([p for p in people if p != last] or people)
                yield self._emit(closer, rng.choice(_CLOSINGS).format(day=rng.choice(WEEKDAYS)))
            self._time += self._gap()

    def _emit(self, speaker: str, text: str) -> Utterance:
        u = Utterance(speaker, text, round(self._time, 1))
        self._count += 1
        # Speaking takes about 0.35 s a word; pauses between turns vary.
        self._time += 2.0 + 0.35 * len(text.split()) + self._rng.expovariate(1 / 6)
        return u

    def _gap(self) -> float:
        """Time between sessions: an hour or several, or overnight to the next morning."""
        rng = self._rng
        if rng.random() < 0.65:
            return rng.uniform(0.5, 5) * 3600
        now = datetime.fromtimestamp(self._time, tz=UTC)
        days = 1 if rng.random() < 0.8 else rng.randint(2, 4)
        morning = (now + timedelta(days=days)).replace(hour=8, minute=0, second=0, microsecond=0)
        return (morning - now).total_seconds() + rng.uniform(0, 3) * 3600


def synthetic_utterances(count: int, seed: int = 0) -> Iterator[Utterance]:
    """The first `count` utterances of the stream for `seed`."""
    return SyntheticStream(seed).take(count)
