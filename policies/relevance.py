"""How relevant each earlier step is to the current question: Okapi BM25 over words, no dependency.

A step's document is its turn's question, its reply and its observation. Words are lower-cased runs of
letters and digits, less a short list of English function words; each step's words are counted once and
kept on the step. Used by retrieve:K and budget:T.
"""
import math
import re
from collections import Counter

from policies.rendering import Conversation, Step, Turn

WORD = re.compile(r"\w+")
STOPWORDS = frozenset(
    "a about after all also am an and any are as at be been before but by can could did do does for from had has "
    "have how i if in into is it its just me my no not now of on or our so than that the their them then there "
    "these they this to too us was we were what when where which while who why will with would you your".split())
K1, B = 1.5, 0.75  # the usual BM25 constants: term-frequency saturation and length normalisation


def words(text: str) -> Counter:
    return Counter(word for word in WORD.findall(text.casefold()) if word not in STOPWORDS)


def step_words(turn: Turn, step: Step) -> Counter:
    if turn.terms is None:
        turn.terms = words(turn.question["text"])
    if step.terms is None:
        calls = "\n".join(f"{call['name']} {call['arguments']}" for call in step.reply.get("calls") or ())
        step.terms = words("\n".join([step.reply["text"], calls] + [event["text"] for event in step.observations]))
    return turn.terms + step.terms


def scores(conversation: Conversation, candidates: set[int]) -> dict[int, float]:
    """BM25 score of each candidate step (by reply index) against the current question; the statistics are taken
    over every step of the conversation, so a step's score does not depend on which others are candidates."""
    documents = {step.index: step_words(turn, step) for turn in conversation.turns for step in turn.steps}
    if not documents or not conversation.turns:
        return {}
    query = words(conversation.turns[-1].question["text"])
    lengths = {index: sum(document.values()) for index, document in documents.items()}
    average = sum(lengths.values()) / len(lengths) or 1
    having = {word: sum(1 for d in documents.values() if word in d) for word in query}  # once a word, not a step
    idf = {word: math.log(1 + (len(documents) - count + 0.5) / (count + 0.5)) for word, count in having.items()}
    result = {}
    for index in candidates:
        document, score = documents[index], 0.0
        for word in query:
            frequency = document.get(word, 0)
            if frequency:
                score += idf[word] * frequency * (K1 + 1) / (frequency + K1 * (1 - B + B * lengths[index] / average))
        result[index] = score
    return result
