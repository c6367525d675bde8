"""What `assistant bench daemon` says and asks, and how hard it asks: the script, the questions, the plan."""

from __future__ import annotations

from dataclasses import dataclass

from .synth_conversation import Line, Pacing

# A weekend trip planned by two people: facts the questions below can be answered from.
SCRIPT: tuple[Line, ...] = (
    Line("Maya", "Tom, did you book the ferry to Whitby Island for our weekend trip?"),
    Line("Tom", "Yes, the ferry leaves at eight fifteen on Saturday morning from pier four."),
    Line("Maya", "Perfect. My neighbour Agnes will feed my cat Pepper while we are away."),
    Line("Tom", "Good. I reserved two rooms at the Harbour Lantern guest house for two nights."),
    Line("Maya", "How much did the rooms cost in the end?"),
    Line("Tom", "One hundred and ninety pounds in total, with breakfast included."),
    Line("Maya", "I will bring the blue tent in case we camp on Sunday night instead."),
    Line("Tom", "My brother Felix wants to join us on Sunday for the hike to the lighthouse."),
    Line("Maya", "Great. The lighthouse trail is about eleven kilometres long."),
    Line("Tom", "Remember that I am allergic to shellfish, so no seafood platter for me."),
    Line("Maya", "Noted. We can have dinner at the Italian place called Rosa's instead."),
    Line("Tom", "Rosa's closes at nine, so we should book a table for seven."),
    Line("Maya", "I will pack the first aid kit and the rain jackets."),
    Line("Tom", "The forecast says light rain on Saturday and sunshine on Sunday."),
    Line("Maya", "Then we should do the lighthouse hike on Sunday with Felix."),
    Line("Tom", "Agreed. The last ferry back leaves at six in the evening on Monday."),
    Line("Maya", "I need to be back for my dentist appointment on Tuesday at ten."),
    Line("Tom", "That works. I will drive us to the pier and leave the car in the long stay car park."),
    Line("Maya", "Parking costs twelve pounds a day there, I checked yesterday."),
    Line("Tom", "Fine. I will pay for parking and you can pay for dinner at Rosa's."),
)

QUESTIONS: tuple[str, ...] = (
    "When does the ferry leave on Saturday?",
    "Who will feed the cat?",
    "What is the name of the cat?",
    "Where are Maya and Tom staying?",
    "How much did the rooms cost?",
    "What is Tom allergic to?",
    "Who is joining the hike to the lighthouse?",
    "What time should they book the table at Rosa's?",
    "When is the dentist appointment?",
    "How much does parking cost per day?",
)

# Pauses longer than the VAD's hangover (600 ms), so each turn is a segment of its own and its
# acknowledgement is not held back by the next turn; no overlaps, for the same reason.
PACING = Pacing(min_gap=1.0, max_gap=2.0, overlap=0.0, lead=1.0, tail=2.0)
# The clients start once this many utterances are acknowledged: asked earlier, every question
# finds an empty memory and is answered "I don't know" without the LLM, which is no load at all.
LOAD_AFTER_UTTERANCES = 2


@dataclass(frozen=True)
class Plan:
    llm: str
    clients: int = 20
    questions_per_client: int = 2
    slow_interval: float = 3.0  # seconds the slow subscriber waits between lines
    turns: int = len(SCRIPT)  # the first N lines of SCRIPT are spoken


def client_questions(plan: Plan, client: int) -> list[str]:
    # Each client starts at a different question, so the memory is asked about everything at once.
    return [QUESTIONS[(client + k * plan.clients) % len(QUESTIONS)] for k in range(plan.questions_per_client)]
