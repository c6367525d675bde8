"""An LLM behind an OpenAI-compatible HTTP server (`llm.backend: openai`).

Answers and distillation go to `{llm.base_url}/chat/completions`, always streamed (server-sent
events), so an answer shows its first words as soon as the server writes them. Listening,
transcription, the memory and the tokenizer that counts its budget stay in this process.

A request that cannot connect, or that the server answers with 429 or a 5xx, is tried again
`llm.retries` times with exponential backoff, but only before the first token: a reply that
breaks off midway is never asked again, because its first words were already shown. When the
tries run out the error is `LLMUnreachable`, naming the server and what to do.

JSON: `chat(..., schema=...)` asks the server to constrain its decoding through
`response_format`, first in the OpenAI form (`json_schema`: vLLM, Ollama, llama.cpp's
llama-server), then, if the server refuses that form, in llama-cpp-python's (`json_object` with a
`schema`), and if it refuses both, at prompt level only (the schema is put in the system message;
nothing then guarantees the reply parses). The form that worked is remembered. The distiller asks
for no schema (its replies are short phrases); the digest's commitment judge does.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import httpx

from ..config import LLMOptions
from ..errors import ConfigError, LLMUnreachable, ModelError
from .api_key import read_api_key
from .base import Message, Usage

log = logging.getLogger(__name__)

# The first wait before a retry; each further one doubles, up to the cap (which also bounds a
# server's Retry-After, so a misconfigured server cannot stall a question for minutes).
BACKOFF_FIRST_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 8.0

# How a JSON schema is asked for, in the order tried (see the module's docstring).
JSON_FORMS = ("json_schema", "json_object", "prompt")


class LLMRefused(ModelError):
    """The server answered, but refused the request (a bad key, an unknown model, a prompt too long)."""

    def __init__(self, message: str, status: int, *, may_be_the_format: bool = False) -> None:
        super().__init__(message)
        self.status = status
        # The refusal may be of the response_format asked for: another form may be accepted.
        self.may_be_the_format = may_be_the_format


class OpenAIChat:
    """A chat model served over HTTP by llama.cpp's server, vLLM, Ollama or anything that speaks the OpenAI API."""

    device = "served"

    def __init__(self, options: LLMOptions) -> None:
        if not options.base_url:
            raise ConfigError("llm.backend is openai but llm.base_url is not set")
        self.options = options
        self.base_url = options.base_url.rstrip("/")
        self.usage = Usage()
        self._model = options.model
        self._json_form = 0
        self._problem: str | None = None
        key = read_api_key(options)
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {key}"} if key else {},
            timeout=httpx.Timeout(options.read_timeout_seconds, connect=options.connect_timeout_seconds),
        )

    @property
    def name(self) -> str:
        return f"{self._model or 'the first model listed'} at {self.base_url}"

    @property
    def problem(self) -> str | None:
        """Why the last request failed to reach the server; None once one gets through."""
        return self._problem

    def close(self) -> None:
        self._http.close()

    # --- what the assistant asks ------------------------------------------------------------

    def chat(self, messages: list[Message], *, max_tokens: int, schema: dict[str, Any] | None = None) -> str:
        if schema is None:
            return "".join(self._generate(messages, max_tokens)).strip()
        for index in range(self._json_form, len(JSON_FORMS)):
            form = JSON_FORMS[index]
            try:
                reply = "".join(self._generate(_schema_messages(messages, schema, form), max_tokens, form, schema))
            except LLMRefused as exc:
                if not exc.may_be_the_format or index == len(JSON_FORMS) - 1:
                    raise
                log.info("%s refuses response_format %s (%s); trying the next form", self.base_url, form, exc)
                continue
            self._json_form = index
            return reply.strip()
        raise AssertionError("unreachable: the last form raises")  # pragma: no cover

    def stream(self, messages: list[Message], *, max_tokens: int) -> Iterator[str]:
        yield from self._generate(messages, max_tokens)

    def probe(self) -> None:
        """Ask the server which models it serves, once: the daemon's health check, which backs off itself."""
        self._list_models(retries=0)

    # --- the exchange ----------------------------------------------------------------------

    def _list_models(self, retries: int | None = None) -> None:
        """GET /models; learns the model to ask when llm.model is null (the first one listed)."""
        response = self._send("GET", "/models", None, retries)
        try:
            response.read()
            listed = [m.get("id") for m in response.json().get("data", []) if isinstance(m, dict)]
        except httpx.TransportError as exc:
            raise self._unreachable(_describe(exc)) from None
        except (ValueError, AttributeError):
            listed = []
        finally:
            response.close()
        if self._model is None:
            if not listed or not listed[0]:
                raise ModelError(f"the language model server at {self.base_url} lists no model; set llm.model")
            self._model = str(listed[0])

    def _body(
        self, messages: list[Message], max_tokens: int, form: str | None, schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        if self._model is None:
            self._list_models()
        body: dict[str, Any] = {
            "model": self._model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": self.options.temperature,
            "seed": self.options.seed,
            "stream": True,
        }
        if form == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
        elif form == "json_object":
            body["response_format"] = {"type": "json_object", "schema": schema}
        return body

    def _generate(
        self,
        messages: list[Message],
        max_tokens: int,
        form: str | None = None,
        schema: dict[str, Any] | None = None,
    ) -> Iterator[str]:
        """The reply's pieces as the server streams them."""
        response = self._send("POST", "/chat/completions", self._body(messages, max_tokens, form, schema))
        self.usage.calls += 1
        finished = False
        try:
            for line in response.iter_lines():
                # Blank lines separate events; lines starting ":" are keep-alive comments.
                if not line.startswith("data:"):
                    continue
                data = line[len("data:") :].strip()
                if data == "[DONE]":
                    finished = True
                    break
                chunk = self._chunk(data)
                usage = chunk.get("usage") or {}
                self.usage.prompt_tokens += int(usage.get("prompt_tokens") or 0)
                for choice in chunk.get("choices") or []:
                    finished = finished or choice.get("finish_reason") is not None
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        self.usage.completion_tokens += 1
                        yield piece
        except httpx.TransportError as exc:
            raise self._unreachable(f"the reply broke off ({_describe(exc)})") from None
        finally:
            response.close()
        if not finished:
            raise self._unreachable("the reply broke off before its end")

    def _chunk(self, data: str) -> dict[str, Any]:
        try:
            chunk = json.loads(data)
        except ValueError:
            raise ModelError(
                f"the language model at {self.base_url} sent a reply that is not JSON: {data[:200]!r}"
            ) from None
        if not isinstance(chunk, dict):
            raise ModelError(f"the language model at {self.base_url} sent an unexpected reply: {data[:200]!r}")
        if chunk.get("error"):
            error = chunk["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise ModelError(f"the language model at {self.base_url} failed mid-reply: {message}")
        return chunk

    def _send(self, method: str, path: str, body: dict[str, Any] | None, retries: int | None = None) -> httpx.Response:
        """The server's response, its body still to be read, once it accepts the request.

        Connection failures, 429 and 5xx are tried again with backoff; a read timeout is not (the
        server is there but slow: asking again would only double the wait).
        """
        tries = (self.options.retries if retries is None else retries) + 1
        failure = ""
        for attempt in range(tries):
            try:
                response = self._http.send(self._http.build_request(method, path, json=body), stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError) as exc:
                failure, wait = _describe(exc), _backoff(attempt)
            except httpx.TimeoutException:
                raise self._unreachable(
                    f"no reply within llm.read_timeout_seconds ({self.options.read_timeout_seconds:g} s)"
                ) from None
            except httpx.TransportError as exc:
                raise self._unreachable(_describe(exc)) from None
            else:
                if response.status_code < 300:
                    self._problem = None
                    return response
                status, detail = response.status_code, _error_detail(response)
                # llama-cpp-python's server answers 500 to a response_format it cannot read: asking
                # again would not change that, so it is a refusal, as a 400 or 422 is elsewhere.
                about_format = body is not None and "response_format" in body and "response_format" in detail
                if about_format or (status != 429 and status < 500):
                    raise LLMRefused(
                        self._refusal(status, detail), status, may_be_the_format=about_format or status in (400, 422)
                    )
                failure = f"HTTP {status}: {detail}"
                wait = _retry_after(response) or _backoff(attempt)
            if attempt + 1 < tries:
                log.info("%s: %s; trying again in %.1f s", self.base_url, failure, wait)
                time.sleep(wait)
        tried = f" (tried {tries} times)" if tries > 1 else ""
        raise self._unreachable(failure + tried)

    def _unreachable(self, reason: str) -> LLMUnreachable:
        self._problem = reason
        return LLMUnreachable(
            f"the language model at {self.base_url} is unreachable: {reason}. Start the server there "
            "(e.g. python -m llama_cpp.server --model FILE.gguf --port 8080) or correct llm.base_url in the config"
        )

    def _refusal(self, status: int, detail: str) -> str:
        hint = ""
        if status in (401, 403):
            hint = "; check the API key (llm.api_key_file or llm.api_key_env)"
        elif status == 404:
            hint = f"; check llm.model ({self._model!r}) and llm.base_url (it usually ends in /v1)"
        return f"the language model at {self.base_url} refused the request (HTTP {status}: {detail}){hint}"


def _schema_messages(messages: list[Message], schema: dict[str, Any], form: str) -> list[Message]:
    """At prompt level the schema can only be asked for in words."""
    if form != "prompt":
        return messages
    rule = f"Reply with JSON only, matching this JSON schema: {json.dumps(schema)}"
    if messages and messages[0]["role"] == "system":
        return [{"role": "system", "content": messages[0]["content"] + "\n" + rule}, *messages[1:]]
    return [{"role": "system", "content": rule}, *messages]


def _backoff(attempt: int) -> float:
    return min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2**attempt)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        return min(BACKOFF_MAX_SECONDS, max(0.0, float(value)))
    except ValueError:
        return None


def _error_detail(response: httpx.Response) -> str:
    """The server's own words for a failed request, short; the response is closed."""
    try:
        text = response.read().decode("utf-8", errors="replace")
    except httpx.HTTPError:
        text = ""
    finally:
        response.close()
    try:
        error = json.loads(text)
        if isinstance(error, dict):
            error = error.get("error", error.get("detail", error))
        if isinstance(error, dict):
            error = error.get("message", error)
        text = error if isinstance(error, str) else json.dumps(error)
    except ValueError:
        pass
    return " ".join(text.split())[:300] or response.reason_phrase


def _describe(exc: httpx.TransportError) -> str:
    """A transport error in a few words: httpx's messages can be empty or name only the errno."""
    kind = {
        httpx.ConnectError: "cannot connect",
        httpx.ConnectTimeout: "no connection within llm.connect_timeout_seconds",
        httpx.RemoteProtocolError: "the server closed the connection",
        httpx.ReadTimeout: "no reply within llm.read_timeout_seconds",
        httpx.ReadError: "the connection failed while reading",
    }.get(type(exc), type(exc).__name__)
    detail = str(exc).strip()
    return f"{kind} ({detail})" if detail else kind
