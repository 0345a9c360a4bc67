"""Asking a machine judge's endpoint (any OpenAI-compatible chat-completions API), with
retries and backoff on 429, 5xx, timeouts and dropped connections (Retry-After honoured)
and a pace of at most the judge's requests per minute."""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import openai
from django.conf import settings
from django.core.exceptions import ValidationError
from openai.types.chat import ChatCompletion

from annotations.formats import judge_prompts
from annotations.models import MachineJudge
from annotations.models.judges import KEY_NAME
from annotations.services.outbound import (
    AnswerRefused,
    OutboundRefused,
    Rule,
    outbound_client,
    outbound_refusal,
)

MAX_WAIT_SECONDS = 120.0
# A chat completion's grade and reasoning fit many times over; with log-probabilities each
# token carries its alternatives (some 400 bytes as the API writes them), and a judge may ask
# for up to 8192 tokens.
ANSWER_BYTES = 2**20
LOGPROBS_ANSWER_BYTES = 8 * 2**20
NOT_A_COMPLETION = "the endpoint's answer is not a chat completion"


@dataclass(frozen=True)
class Answer:
    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    # With the judge's `logprobs`: each answer token and its top alternatives (empty when
    # the endpoint gave none).
    tokens: tuple[judge_prompts.Token, ...] = ()


TOP_LOGPROBS = 5  # alternatives per token: enough for a 0-3 or 0-4 scale's grades


# Why a pair got no answer (`EndpointFailed.kind`, a failed pair's kind).
TIMEOUT, UNAVAILABLE, REFUSED, MALFORMED = "timeout", "unavailable", "refused", "malformed"


class EndpointFailed(Exception):
    """The endpoint refused the request or kept failing: a message for the run's error, and
    its kind (TIMEOUT: every attempt ran out of time; UNAVAILABLE: 429, 5xx or a dropped
    connection every time; REFUSED: another status, or an address or answer the platform
    does not take; MALFORMED: an answer that is not a chat completion)."""

    def __init__(self, message: str, kind: str = REFUSED) -> None:
        super().__init__(message)
        self.kind = kind


def call_seconds(judge: MachineJudge) -> float:
    """One whole call, however slowly its answer trickles: twice the judge's timeout (which
    bounds each connect, read and write)."""
    return 2.0 * judge.timeout_seconds


def pair_seconds(judge: MachineJudge) -> float:
    """The longest one pair can take: every attempt of every prompt to its end, each wait
    between them at its longest."""
    prompts = 2 if judge.variant_template else 1
    return prompts * judge.attempts * (call_seconds(judge) + MAX_WAIT_SECONDS)


def _rule() -> Rule:
    return Rule(
        allow_private=settings.NDCG_JUDGE_ALLOW_PRIVATE,
        setting="NDCG_JUDGE_ALLOW_PRIVATE",
        credentials="the key comes from the server's environment",
    )


def endpoint_refusal(url: str) -> str | None:
    """Why the platform will not call a judge at `url`, or None: the rule of every outbound
    call (`outbound.outbound_refusal`); a model server on this machine or a private network
    (vLLM, Ollama, llama.cpp) needs NDCG_JUDGE_ALLOW_PRIVATE=true."""
    return outbound_refusal(url, _rule())


NO_KEY = "no-key"  # what an endpoint without keys is sent (the client needs some value)


def key_name_refusal(name: str) -> str | None:
    """Why a judge may not read its key from the variable `name`, or None: only the
    variables an operator set aside for judges (`NDCG_JUDGE_KEY_*`) are ever read."""
    if not name:
        return None
    try:
        KEY_NAME(name)
    except ValidationError as error:
        return error.messages[0]
    return None


def api_key(judge: MachineJudge) -> str:
    """The key from the judge's variable (never stored, shown or logged); refused if the
    variable is not one set aside for judges (a judge saved before the rule included) or is
    unset."""
    name = judge.api_key_env
    refusal = key_name_refusal(name)
    if refusal is not None:
        raise ValidationError({"api_key_env": f"{name} is not read for judges. {refusal}"})
    if not name:
        return NO_KEY
    key = os.environ.get(name, "")
    if not key:
        raise ValidationError(
            {"api_key_env": f"{name} is not set on the server: ask the operator to set it to "
             "the endpoint's key, or leave the field empty for an endpoint without keys."}
        )  # fmt: skip
    return key


class Pace:
    """At most `per_minute` requests a minute, across the threads of one run; `taken`
    counts the requests sent since it was last called."""

    def __init__(self, per_minute: int) -> None:
        self._interval = 60.0 / max(1, per_minute)
        self._next = 0.0
        self._lock = threading.Lock()
        self.requests = 0

    def taken(self) -> int:
        with self._lock:
            sent, self.requests = self.requests, 0
        return sent

    def wait(self, sleep: Callable[[float], None] = time.sleep) -> None:
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next)
            self._next = slot + self._interval
            self.requests += 1
        if slot > now:
            sleep(slot - now)


def _retry_after(error: openai.APIStatusError) -> float | None:
    raw = error.response.headers.get("retry-after") if error.response is not None else None
    try:
        return min(float(raw), MAX_WAIT_SECONDS) if raw else None
    except ValueError:
        return None


def _tokens(completion: object) -> tuple[judge_prompts.Token, ...]:
    """The answer's tokens with their top alternatives, as the endpoint gave them."""
    choices = getattr(completion, "choices", None) or []
    logprobs = getattr(choices[0], "logprobs", None) if choices else None
    content = getattr(logprobs, "content", None) or []
    return tuple(
        (
            str(item.token),
            tuple((str(top.token), float(top.logprob)) for top in (item.top_logprobs or [])),
        )
        for item in content
    )


def _count(value: object) -> int:
    if value is None:
        return 0
    if not isinstance(value, int):
        raise TypeError("a token count that is not a number")
    return value


def _answer(completion: object, *, logprobs: bool, seconds: float) -> Answer:
    """What the platform takes from a chat completion (the first choice's text, the token
    counts and, asked for, the tokens' alternatives); EndpointFailed for any other answer,
    whose content is never quoted."""
    # The client hands back whatever parsed: a str for a body that is not JSON, a
    # ChatCompletion with any fields missing or of any type for JSON of another shape.
    if not isinstance(completion, ChatCompletion):
        raise EndpointFailed(NOT_A_COMPLETION, MALFORMED)
    try:
        choices = completion.choices
        text = (choices[0].message.content or "") if choices else ""
        usage = completion.usage
        answer = Answer(
            text=text,
            prompt_tokens=_count(usage.prompt_tokens) if usage else 0,
            completion_tokens=_count(usage.completion_tokens) if usage else 0,
            seconds=seconds,
            tokens=_tokens(completion) if logprobs else (),
        )
    except (AttributeError, TypeError, ValueError, LookupError):
        raise EndpointFailed(NOT_A_COMPLETION, MALFORMED) from None
    if not isinstance(answer.text, str):
        raise EndpointFailed(NOT_A_COMPLETION, MALFORMED)
    return answer


def ask(
    judge: MachineJudge,
    prompt: str,
    *,
    pace: Pace | None = None,
    sleep: Callable[[float], None] = time.sleep,
    attempts: int | None = None,
    seconds: float | None = None,
) -> Answer:
    """The endpoint's answer to one prompt; EndpointFailed when it refuses the request (a
    status other than 2xx, 429 and 5xx), gives an answer that is not a chat completion, is
    not an address the platform calls, or still fails after `attempts` tries (the judge's
    own by default) of at most `seconds` each (the judge's `call_seconds`, never more).
    Its messages name status codes and error classes, never what the endpoint sent."""
    limit = LOGPROBS_ANSWER_BYTES if judge.logprobs else ANSWER_BYTES
    whole = call_seconds(judge)
    seconds = whole if seconds is None else min(seconds, whole)
    with outbound_client(_rule(), answer_bytes=limit, seconds=seconds) as http:
        client = openai.OpenAI(
            base_url=judge.base_url, api_key=api_key(judge), max_retries=0,
            timeout=min(float(judge.timeout_seconds), seconds), http_client=http,
        )  # fmt: skip
        return _asked(
            client, judge, prompt, pace=pace, sleep=sleep, attempts=attempts or judge.attempts
        )


def _asked(
    client: openai.OpenAI,
    judge: MachineJudge,
    prompt: str,
    *,
    pace: Pace | None,
    sleep: Callable[[float], None],
    attempts: int,
) -> Answer:
    last, kind = "", UNAVAILABLE
    for attempt in range(attempts):
        if pace is not None:
            pace.wait(sleep)
        started = time.monotonic()
        wait: float | None = None
        try:
            completion = client.chat.completions.create(
                model=judge.model,
                messages=[{"role": "user", "content": prompt}],
                temperature=judge.temperature,
                max_tokens=judge.max_tokens,
                logprobs=True if judge.logprobs else openai.omit,
                top_logprobs=TOP_LOGPROBS if judge.logprobs else openai.omit,
            )
        except OutboundRefused as refusal:
            raise EndpointFailed(f"the endpoint is not called: {refusal}") from None
        except AnswerRefused as refusal:
            raise EndpointFailed(
                f"the endpoint's answer is not read: {refusal}", MALFORMED
            ) from None
        except openai.APIStatusError as error:
            code = error.status_code
            if 300 <= code < 400:
                raise EndpointFailed(
                    f"the endpoint answered HTTP {code}, a redirect, which is not followed"
                ) from None
            if code != 429 and code < 500:
                raise EndpointFailed(f"the endpoint refused the request: HTTP {code}") from None
            last, kind = f"HTTP {code}", UNAVAILABLE
            wait = _retry_after(error)
        except openai.APITimeoutError:
            last, kind = f"no answer within {judge.timeout_seconds} s", TIMEOUT
        except openai.APIConnectionError as error:
            last, kind = type(error).__name__, UNAVAILABLE
        except (openai.APIResponseValidationError, ValueError):
            # JSON announced and not given (the client's own parse error)
            raise EndpointFailed(NOT_A_COMPLETION, MALFORMED) from None
        else:
            return _answer(completion, logprobs=judge.logprobs, seconds=time.monotonic() - started)
        if attempt + 1 < attempts:
            backoff = min(MAX_WAIT_SECONDS, 2.0**attempt) * (0.5 + random.random() / 2)
            sleep(max(wait or 0.0, backoff))
    raise EndpointFailed(f"the endpoint kept failing ({last}) after {attempts} attempts", kind)
