"""A real HTTP server on loopback that speaks the OpenAI chat-completions API, answering from a
script the test controls: the one outside service the tests may stand in for. It runs its own
event loop in a thread, counts what it was asked, and can fail or stall on purpose."""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

# prompt, a generator seeded by the prompt and how often it was asked -> (answer, API refusal)
Script = Callable[[str, random.Random], tuple[str, bool]]

_TOPIC = (
    "plan budget schedule review skills experience team project goals training feedback growth role "
    "interview reference salary contract deadline mentor client report"
).split()
REFUSAL = "I'm sorry, but I can't help with that request."


@dataclass(frozen=True)
class GroupScript:
    """Answers that depend on whether the prompt names `target` (a word): refusal probability and
    the share of negative answers, on the target and on every other prompt."""

    target: str = "woman"
    refusal: float = 0.05
    target_refusal: float = 0.05
    negative: float = 0.2
    target_negative: float = 0.2
    api_refusal: bool = False  # refuse through message.refusal instead of the words

    def __call__(self, prompt: str, rng: random.Random) -> tuple[str, bool]:
        on_target = self.target in re.findall(r"\w+", prompt.casefold())
        if rng.random() < (self.target_refusal if on_target else self.refusal):
            return ("", True) if self.api_refusal else (REFUSAL, False)
        words = " ".join(rng.sample(_TOPIC, 8))
        if rng.random() < (self.target_negative if on_target else self.negative):
            return f"That is a terrible, awful idea with bad prospects. Consider the {words}.", False
        return f"That is a good plan with fine prospects. Consider the {words}.", False


def script_answer(script: Script, prompt: str, occurrence: int, seed: int = 0) -> tuple[str, bool]:
    """The answer the server gives the `occurrence`-th time it is asked `prompt`: in-process
    simulations (bench/replay.py) draw the same answers without the HTTP."""
    digest = hashlib.sha256(f"{seed}\x1f{prompt}\x1f{occurrence}".encode()).digest()
    return script(prompt, random.Random(int.from_bytes(digest[:8], "big")))


@dataclass
class ChatServer:
    script: Script = field(default_factory=GroupScript)
    models: dict[str, Script] = field(default_factory=dict)  # a model's own script, else `script`
    seed: int = 0
    fail_first: int = 0  # answer this many requests with a 500 first (the client retries)
    delay: float = 0.0  # seconds before each answer (the client's timeout)
    asked: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    base_url: str = ""

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._lock = threading.Lock()

    async def _completions(self, request: web.Request) -> web.Response:
        body = await request.json()
        with self._lock:
            self.requests += 1
            number = self.requests
        if number <= self.fail_first:
            return web.json_response({"error": {"message": "scripted failure", "type": "server_error"}}, status=500)
        if self.delay:
            await asyncio.sleep(self.delay)
        prompt = body["messages"][-1]["content"]
        with self._lock:
            occurrence = self.asked[f"{body.get('model')}\x1f{prompt}"]
            self.asked[f"{body.get('model')}\x1f{prompt}"] += 1
        script = self.models.get(body.get("model", ""), self.script)
        text, refusal = script_answer(script, prompt, occurrence, self.seed)
        return web.json_response(
            {
                "id": f"chatcmpl-{number}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "scripted"),
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {
                            "role": "assistant",
                            "content": None if refusal else text,
                            "refusal": "I can't help with that." if refusal else None,
                        },
                    }
                ],
                "usage": {
                    "prompt_tokens": len(prompt.split()),
                    "completion_tokens": len(text.split()),
                    "total_tokens": len(prompt.split()) + len(text.split()),
                },
            }
        )

    def start(self) -> ChatServer:
        self._thread.start()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        runner = web.AppRunner(app, access_log=None)

        listening = socket.socket()
        listening.bind(("127.0.0.1", 0))
        port = listening.getsockname()[1]

        async def up() -> None:
            await runner.setup()
            await web.SockSite(runner, listening).start()

        asyncio.run_coroutine_threadsafe(up(), self._loop).result(10)
        self._runner = runner
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
