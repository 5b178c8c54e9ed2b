"""Transport attributes get the body's rules: a CloudEvents id of megabytes, a trace id with a NUL,
an escape or bytes that are not UTF-8 dead-letter the message at once, naming the attribute,
and the rest of the batch is audited. Over each of the three inputs."""

from __future__ import annotations

import asyncio
import json

import pytest

from bias_audit.consumers.council import CouncilSessionProcessor
from bias_audit.consumers.envelope import Delivery, attribute_problem
from bias_audit.consumers.responses import ResponseProcessor
from bias_audit.consumers.verdicts import VerdictProcessor
from bias_audit.lexicons.load import shipped_lexicons
from bias_audit.lexicons.sentiment import vader_scorer
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.worker.redis_worker import delivery_from_entry
from tests.builders import council_event
from tests.consumers.test_response_consumer import response_event
from tests.consumers.test_verdict_consumer import verdict


def processors():
    return {
        "council.sessions": (
            CouncilSessionProcessor(window=MemoryWindow(), store=None),
            lambda n: council_event({"R1": {"M1": 8, "M2": 6}, "R2": {"M1": 7, "M2": 5}}, session_id=f"s{n}"),
        ),
        "llm.responses": (
            ResponseProcessor(window=MemoryWindow(), store=None, lexicons=shipped_lexicons(), sentiment=vader_scorer()),
            lambda n: response_event(audit_id=f"a{n}"),
        ),
        "judge.verdicts": (VerdictProcessor(window=MemoryWindow(), store=None), lambda n: verdict(n, True)),
    }


BAD = [
    ({"ce_id": "x" * 3_000_000}, "attribute ce_id: 3,000,000 characters, over the limit of 256"),
    ({"ce-id": "a\nb"}, "attribute ce-id: contains an unprintable character ('\\n') at 1"),
    ({"trace_id": "abc\x00def"}, "attribute trace_id: contains a NUL character, which no store can hold at 3"),
    ({"ce_source": "/app\x1b[31m"}, "attribute ce_source: contains an unprintable character ('\\x1b') at 4"),
    ({"ce_type": "t" * 1025}, "attribute ce_type: 1,025 characters, over the limit of 1024"),
    ({"trace_id": "t" * 129}, "attribute trace_id: 129 characters, over the limit of 128"),
    ({f"k{i}": "v" for i in range(65)}, "the message has 65 attributes, over the limit of 64"),
]


@pytest.mark.parametrize("topic", ["council.sessions", "llm.responses", "judge.verdicts"])
@pytest.mark.parametrize("attributes, reason", BAD)
def test_a_bad_attribute_is_a_dead_letter_at_once_naming_it(topic, attributes, reason):
    processor, event = processors()[topic]
    batch = [
        Delivery(
            f"{n}-0",
            json.dumps(event(n)).encode(),
            topic,
            attributes=attributes if n == 1 else {"ce_id": f"ok-{n}", "trace_id": f"trace-{n}"},
        )
        for n in range(3)
    ]
    outcomes = asyncio.run(processor.process(batch))
    assert [o.result is not None for o in outcomes] == [True, False, True]
    letter = outcomes[1].dead_letter
    assert (letter.error_type, letter.error) == ("invalid_attributes", reason)
    assert letter.trace_id is None  # a trace id that broke the rules is not carried on
    assert len(letter.model_dump_json()) < 10_000
    assert outcomes[2].result.cloudevent_id == "ok-2" and outcomes[2].result.trace_id == "trace-2"


def test_bytes_that_are_not_utf8_in_a_redis_field_are_named():
    delivery = delivery_from_entry("judge.verdicts", b"1-0", {b"data": b"{}", b"ce_id": b"id-\xff\xfe"})
    assert attribute_problem("ce_id", delivery.attributes["ce_id"]) == "attribute ce_id: not valid UTF-8"
    assert attribute_problem("ce_id", "a-normal-id") is None
    assert attribute_problem("x" * 300, "v").startswith("attribute " + "x" * 64 + "...: its name is 300 characters")
