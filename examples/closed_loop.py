"""The kit's locustfile plus one agent of your own: a chat agent that sends again as soon as its answer
ends (a closed loop with no think time), as LLM benchmarks load a server. Run from the repo's root:
    locust -f examples/closed_loop.py --headless ClosedLoopChatAgent -u 10 -r 10 -t 30s
Everything else (options, profiles, rows, report) is the kit's: this file only adds a user class.
"""

from locust import constant

from agents.gateways.openai_chat import ChatAgent
from locustfile import *  # noqa: F403 - the kit's options, its load shape and its event listeners


class ClosedLoopChatAgent(ChatAgent):
    wait_time = constant(0)
