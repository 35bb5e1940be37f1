"""user-only:N: the instructions, every user message of the session verbatim, and the last N steps.

The user's words are never forgotten; the model's and the tools' are, once they are N steps old.
Pick it for long conversations where the user's standing instructions and facts must survive.
It is the sliding window with every question kept.
"""
from policies.window import SlidingWindow


class UserOnly(SlidingWindow):
    name = "user-only"
    usage = "user-only:N"
    all_questions = True
